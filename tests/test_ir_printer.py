"""IR printer output and the stability of KernelIR digests over lowered functions."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
from test_frontend_support import SCALE, f32, i32, line_of

import gompute_core as g
from gompute_core.frontend import lower
from gompute_core.ir.kernel import KernelIR
from gompute_core.ir.printer import format_function, format_kernel


def relu(x, p):
    y = x * p.scale
    if y > 0:
        return y
    else:
        return 0


def count(x, p):
    acc = 0
    for i in range(p.n):
        if i % 2 == 0:
            continue
        acc += p.arr[i] * x
    while acc > 100.0:
        acc = acc / 2
    return acc if not p.flag else -acc


def kernel_ir(fn, name="k", params=SCALE):
    fns = lower(fn, [f32, params], f32, name)
    return KernelIR(name, "map", 256, (("T", f32),), params, fns, element=name)


def test_format_function_is_readable():
    (fn,) = lower(relu, [f32, SCALE], f32, "relu")
    text = format_function(fn)
    assert text == textwrap.dedent(f"""\
        fn relu(x: f32, p: Scale) -> f32    # {__file__}:{line_of(relu, "def relu")}
          var y: f32
          y = x * p.scale
          if y > 0.0f32:
            return y
          else:
            return 0.0f32""")


def test_format_loops_and_select():
    (fn,) = lower(count, [f32, SCALE], f32, "count")
    text = format_function(fn)
    assert "  var acc: f32\n  var i: i64\n" in text
    assert "for i in range(0i64, i64(p.n), 1i64):" in text
    assert "acc = acc + (p.arr[i] * x)" in text
    assert "while acc > 100.0f32:" in text
    assert "continue" in text
    assert "return acc if not p.flag else -acc" in text


def test_format_kernel_lists_layout_functions_and_digest():
    kir = kernel_ir(relu)
    text = format_kernel(kir)
    first = text.splitlines()[0]
    assert first == "kernel k: map [T=f32] block_size=256"
    assert "struct Inner" in text and "struct Scale  # size 32, align 4" in text
    assert "@12   arr: f32[4]" in text
    assert "fn k(x: f32, p: Scale) -> f32" in text
    assert text.endswith(f"digest {kir.digest()}")


def test_digest_stable_across_lowerings_and_distinct_between_functions():
    a, b = kernel_ir(relu), kernel_ir(relu)
    assert a is not b and a.digest() == b.digest()
    assert kernel_ir(count).digest() != a.digest()
    assert kernel_ir(lambda x, p: x * p.scale).digest() != kernel_ir(
        lambda x, p: x + p.scale).digest()


def test_digest_stable_across_processes():
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(__file__.rsplit('/', 1)[0])!r})
        import test_ir_printer as t
        print(t.kernel_ir(t.count).digest())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == kernel_ir(count).digest()


def test_repr_has_no_object_ids():
    fns = lower(g.Fused(g.f32, None, [g.Unary(g.f32, None, lambda x, p: x * 2)]),
                [f32, None], f32, "k")
    text = repr(fns)
    assert " at 0x" not in text and "object at" not in text


def test_printer_covers_every_node():
    def k(x, n):
        y = g.f32(x) if x > 0 and n != 3 else -g.math.sqrt(g.f32(n))
        z = ~n << 2 | n >> 1 ^ n & 7
        w = abs(x) + min(x, n) + max(n, x) + x // 3 + x % 5 + x ** 2
        return y + z + w

    (fn,) = lower(k, [i32, i32], np.float64, "k")
    text = format_function(fn)
    for piece in ("~n", "<<", ">>", "^", "&", "//", "%", "**", "sqrt(", "abs(", "min(", "max(",
                  " and ", "f32("):
        assert piece in text

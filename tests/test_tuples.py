"""Tuples in the kernel language: helpers (and kernel functions) returning several values,
unpacking ``a, b = f(x)`` and ``a, b = b, a``, ``f(x)[k]``; the CPU kernels equal the
functions run as Python, the GPU renderings compile, misuse is a ``KernelSyntaxError``."""

# ruff: noqa: F841  (the misuse corpus below assigns values it never reads)

from __future__ import annotations

import numpy as np
import pytest

import gompute_core as g
from gompute_core.errors import KernelSyntaxError
from gompute_core.frontend import lower
from gompute_core.ir import nodes as ir
from gompute_core.ir.printer import format_function

B = g.builtins
F32, F64 = np.float32, np.float64


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GOMPUTE_CACHE_DIR", str(tmp_path / "cache"))


def divmod_(a, b):
    q = a // b
    return q, a - q * b


def quotients(a, b):
    q, r = divmod_(a, b)
    x, y = r, q
    x, y = y, x  # evaluated before assigning, as in Python: a swap
    return q * 10.0 + r + divmod_(a, b)[1] + x - y + divmod_(b, a)[-2]


def with_python_int(x):
    return 0, x * 2


def keeps_weakness(a, b):
    k, v = with_python_int(a)  # k is a Python int: k + b keeps b's type, as NumPy
    return k + b + v


def test_cpu_kernel_equals_the_function_run_as_python() -> None:
    pytest.importorskip("gompute_cpu")
    a = np.linspace(-5, 5, 41).astype(F32)
    b = np.where(np.arange(41) % 2 == 0, 1.5, -2.25).astype(F32)
    for fn in (quotients, keeps_weakness):
        spec = g.zip(f"tup_{fn.__name__}", F32, F32, F32, None, fn)
        out = np.zeros_like(a)
        with g.Kernel(spec, "cpu") as k:
            k.run(a, b, out)
        with np.errstate(divide="ignore", invalid="ignore"):  # a // 0 for a == 0, as NumPy
            want = np.array([fn(x, y) for x, y in zip(a, b, strict=True)], F32)
        assert np.array_equal(out, want, equal_nan=True), fn.__name__


def test_ir_of_a_tuple_return_and_its_unpacking() -> None:
    fns = lower(quotients, [F32, F32], None, "k")
    helper, main = fns[0], fns[-1]
    assert helper.ret == ir.TupleType((F32, F32), (None, None))
    text = format_function(main)
    assert "tuple" in text and "k_divmod(a, b)[1]" in text
    (k,) = [f for f in lower(keeps_weakness, [F32, F32], None, "w") if f.name == "w"]
    assert k.ret is F32  # the weak item stayed weak: 0 + f32 is f32
    two = lower(lambda a, b: (a + b, a - b), [F32, F64], None, "two")[-1]
    assert two.ret == ir.TupleType((F64, F64), (None, None))


def switch(a, b):
    if a > 0:
        return a, b
    return b, np.float64(a)


def returns_different(a, b):
    x, y = switch(a, b)
    return x + y


def spec_tuple(a, b):
    return a, b


def unpack_three(a, b):
    x, y, z = divmod_(a, b)
    return x


def unpack_number(a, b):
    x, y = a
    return x


def tuple_local(a, b):
    t = divmod_(a, b)
    return a


def starred(a, b):
    x, *y = divmod_(a, b)
    return x


def nested(a, b):
    return (a, (a, b))


def runtime_index(a, b):
    return divmod_(a, b)[g.i32(a)]


def index_range(a, b):
    return divmod_(a, b)[2]


def into_subscript(a, b):
    t = g.local_array(g.f32, 2)
    t[0], t[1] = divmod_(a, b)
    return a


@pytest.mark.parametrize(("fn", "message"), [
    (returns_different, "returns item 1 as f32 here but f64 on another path"),
    (spec_tuple, "returns 2 values here, but its caller takes one"),
    (unpack_three, "cannot unpack 2 values into 3 names"),
    (unpack_number, "cannot unpack a f32 into 2 names"),
    (tuple_local, r"locals hold numbers; unpack it \(x0, x1 = ...\)"),
    (starred, "starred assignment"),
    (nested, "nested tuples"),
    (runtime_index, "indexed with a constant from -2 to 1"),
    (index_range, "indexed with a constant from -2 to 1"),
    (into_subscript, "unpack into names only"),
], ids=lambda v: getattr(v, "__name__", "message"))
def test_misuse_is_a_kernel_syntax_error_at_its_line(fn: object, message: str) -> None:
    with pytest.raises(KernelSyntaxError, match=message) as info:
        lower(fn, [F32, F32], F32, "k")
    assert info.value.filename == __file__


@g.raw_kernel(block=32)
def tup_raw(a: g.GlobalPtr[g.f32], q: g.GlobalPtr[g.f32], r: g.GlobalPtr[g.f32], n: g.u64):
    i = B.global_id(0)
    if i < n:
        x, y = divmod_(a[i], g.f32(3))
        q[i] = x
        r[i] = y


def test_raw_kernel_with_a_tuple_helper_on_the_cpu() -> None:
    pytest.importorskip("gompute_cpu")
    a = np.linspace(-7, 7, 29).astype(F32)
    k = g.RawKernel(tup_raw, "cpu")
    bufs = [k.alloc(a.size, g.f32) for _ in range(3)]
    bufs[0].upload(a)
    k.launch(g.Dim3.linear(a.size, 32), 32, [*bufs, np.uint64(a.size)])
    k.synchronize()
    got = [np.zeros_like(a), np.zeros_like(a)]
    bufs[1].download(got[0])
    bufs[2].download(got[1])
    want = [np.array([divmod_(x, F32(3))[j] for x in a], F32) for j in (0, 1)]
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


@pytest.mark.parametrize(("backend", "arch"), [("cuda", "sm_90"), ("hip", "gfx90a")])
def test_gpu_renderings_compile(backend: str, arch: str) -> None:
    try:
        art = g.compile(g.zip(f"tup_gpu_{backend}", F32, F32, F32, None, quotients), backend,
                        arch=arch)
        raw = g.compile(tup_raw, backend, arch=arch)
    except (ImportError, g.BackendUnavailable, g.UnsupportedBackend) as exc:
        pytest.skip(f"no {backend} compiler: {exc}")
    assert "gp_make_tuple_f32_f32(" in art.source and ").v1" in art.source
    assert "gp_tuple_f32_f32 v_tuple" in raw.source

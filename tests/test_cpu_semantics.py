"""CPU renderer semantics, bit for bit against NumPy on the same values.

Kernels are built as IR by hand (one operation each) so every rendered
operation is checked in isolation: integer wrap, floor division and modulo
(by zero, ``i_min // -1``), shifts with any count, integer powers, float
floor division/modulo on special values, casts, ``min``/``max`` with NaN and
signed zeros, and ``sqrt``.
"""

from __future__ import annotations

import itertools
import operator
from typing import Any

import numpy as np
import pytest
from gompute_cpu import plugin

from gompute_core.compilation import compile_kernel
from gompute_core.ir import nodes as ir
from gompute_core.ir.kernel import KernelIR
from gompute_core.kinds.map_to import MAP_TO
from gompute_core.kinds.zip import ZIP

INTS = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
FLOATS = (np.float32, np.float64)


class _Loaded:
    """``kir`` loaded on the CPU device; ``run(*arrays)`` launches on the arrays' memory."""

    def __init__(self, kir: KernelIR) -> None:
        self.device = plugin.gompute_device(0)
        artifact = compile_kernel(plugin.gompute_compiler(), kir, plugin.host_arch())
        self.program = self.device.program(artifact, kir)

    def run(self, *arrays: np.ndarray) -> None:
        bufs = [self.device.borrow(a) for a in arrays]
        self.program.launch(*bufs, arrays[-1].size, None)


def program(kir: KernelIR) -> Any:
    """Compile ``kir`` with the CPU compiler and load it on the CPU device."""
    return _Loaded(kir)


def zip_kernel(name: str, t: type, fn: ir.Function) -> KernelIR:
    """zip kernel ``out = fn(a, b)`` over ``t``."""
    types = (("A", t), ("B", t), ("Out", t))
    return KernelIR(name, "zip", 256, types, None, (fn,), element=fn.name,
                    entry_args=ZIP.entry_args, entry=ZIP.element_loop(dict(types), fn.name))


def binary_kernel(name: str, op: str, t: type) -> KernelIR:
    """zip kernel ``out = a OP b`` over ``t``."""
    a, b = ir.Var("a", t), ir.Var("b", t)
    fn = ir.Function(f"{name}_fn", (("a", t), ("b", t)), t, (),
                     (ir.Return(ir.Binary(op, a, b, t)),))
    return zip_kernel(name, t, fn)


def unary_kernel(name: str, src: type, dst: type, body: Any) -> KernelIR:
    """map_to kernel ``out = body(Var x)`` from ``src`` to ``dst``."""
    fn = ir.Function(f"{name}_fn", (("x", src),), dst, (),
                     (ir.Return(body(ir.Var("x", src))),))
    types = (("In", src), ("Out", dst))
    return KernelIR(name, "map_to", 256, types, None, (fn,), element=fn.name,
                    entry_args=MAP_TO.entry_args,
                    entry=MAP_TO.element_loop(dict(types), fn.name))


def int_values(t: type) -> np.ndarray:
    """Edge values of ``t``: extremes, small numbers, shift counts around the width."""
    info = np.iinfo(t)
    raw = [0, 1, -1, 2, -2, 3, -3, 7, -7, 31, 32, 33, 63, 64, 100, -100,
           info.min, info.max, info.min + 1, info.max - 1, info.bits - 1, info.bits]
    return np.array(sorted({v for v in raw if info.min <= v <= info.max}), t)


def float_values(t: type) -> np.ndarray:
    """Special and ordinary values of ``t``."""
    raw = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 3.0, -7.0, 0.1, 1e-45, 5e-324,
           1e30, -1e30, 3.4e38, np.inf, -np.inf, np.nan, 2.0 ** 24 + 1, 123.456]
    with np.errstate(all="ignore"):
        return np.array(raw, t)


def pairs(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair of ``v``'s values as two arrays."""
    a, b = zip(*itertools.product(v, v), strict=True)
    return np.array(a, v.dtype), np.array(b, v.dtype)


def assert_bits(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Equal bit patterns (any NaN matches any NaN)."""
    if got.dtype.kind == "f":
        same = (got.view(f"u{got.itemsize}") == want.view(f"u{want.itemsize}")) | (
            np.isnan(got) & np.isnan(want))
    else:
        same = got == want
    bad = np.flatnonzero(~same)
    assert bad.size == 0, f"{what}: first mismatch at {bad[:5]}: {got[bad[:5]]} vs {want[bad[:5]]}"


def run_binary(op: str, t: type, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.zeros_like(a)
    program(binary_kernel(f"sem_{op}_{np.dtype(t).name}", op, t)).run(a, b, out)
    return out


NUMPY_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
             "floordiv": np.floor_divide, "mod": np.remainder, "lshift": np.left_shift,
             "rshift": np.right_shift, "bitand": np.bitwise_and, "bitor": np.bitwise_or,
             "bitxor": np.bitwise_xor}


@pytest.mark.parametrize("t", INTS, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "floordiv", "mod", "lshift", "rshift",
                                "bitand", "bitor", "bitxor"])
def test_integer_ops_match_numpy(op: str, t: type) -> None:
    a, b = pairs(int_values(t))
    with np.errstate(all="ignore"):
        want = NUMPY_OPS[op](a, b)
    assert_bits(run_binary(op, t, a, b), want.astype(t), f"{op} {np.dtype(t).name}")


@pytest.mark.parametrize("t", INTS, ids=lambda t: np.dtype(t).name)
def test_integer_pow_wraps_like_numpy(t: type) -> None:
    base = int_values(t)
    exps = np.array([0, 1, 2, 3, 7, 31, 63, 64, 100], t)
    a, b = (np.array(v, t) for v in zip(*itertools.product(base, exps), strict=True))
    with np.errstate(all="ignore"):
        want = np.power(a, b)
    assert_bits(run_binary("pow", t, a, b), want, f"pow {np.dtype(t).name}")


PY_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
          "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod,
          "pow": operator.pow}


@pytest.mark.parametrize("t", FLOATS, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("op", list(PY_OPS))
def test_float_ops_match_numpy_scalars(op: str, t: type) -> None:
    """The oracle is the kernel run on NumPy scalars: Python operators, NumPy scalar math."""
    a, b = pairs(float_values(t))
    with np.errstate(all="ignore"):
        want = np.array([PY_OPS[op](x, y) for x, y in zip(a, b, strict=True)], t)
    assert_bits(run_binary(op, t, a, b), want, f"{op} {np.dtype(t).name}")


@pytest.mark.parametrize("t", INTS, ids=lambda t: np.dtype(t).name)
def test_negation_and_invert_wrap(t: type) -> None:
    x = int_values(t)
    for op, ref in (("neg", np.negative), ("invert", np.invert)):
        out = np.zeros_like(x)
        kir = unary_kernel(f"sem_{op}_{np.dtype(t).name}", t, t,
                           lambda v, op=op: ir.Unary(op, v, t))
        program(kir).run(x, out)
        with np.errstate(all="ignore"):
            assert_bits(out, ref(x), f"{op} {np.dtype(t).name}")


CASTS = [(np.int64, np.float32), (np.uint64, np.float32), (np.int64, np.float64),
         (np.uint64, np.float64), (np.float64, np.float32), (np.float32, np.float64),
         (np.int32, np.int8), (np.uint32, np.int16), (np.int8, np.uint64),
         (np.float64, np.int32), (np.float32, np.int64), (np.float64, np.uint8)]


def cast_values(src: type, dst: type) -> np.ndarray:
    """Values of ``src`` whose conversion to ``dst`` is defined (no NaN/overflow to ints)."""
    if np.issubdtype(src, np.integer):
        info = np.iinfo(src)
        tricky = [2 ** 53 + 1, 2 ** 60 + 2 ** 36 + 1, 2 ** 24 + 1, 2 ** 62 + 2 ** 38 + 2 ** 37 + 1]
        raw = [*int_values(src).tolist(), *(v for v in tricky if v <= info.max),
               *(-v for v in tricky if -v >= info.min)]
        return np.array(raw, src)
    if np.issubdtype(dst, np.integer):
        return np.array([0.0, -0.0, 0.9, -0.9, 1.5, -2.5, 99.99, 127.0, 200.5, 255.0], src)
    return float_values(src)


@pytest.mark.parametrize(("src", "dst"), CASTS,
                         ids=lambda t: np.dtype(t).name)
def test_casts_round_like_numpy(src: type, dst: type) -> None:
    x = cast_values(src, dst)
    if np.issubdtype(dst, np.unsignedinteger) and x.dtype.kind == "i":
        x = x[x >= 0]
    out = np.zeros(x.shape, dst)
    name = f"sem_cast_{np.dtype(src).name}_{np.dtype(dst).name}"
    program(unary_kernel(name, src, dst, lambda v: ir.Cast(v, dst))).run(x, out)
    with np.errstate(all="ignore"):
        assert_bits(out, x.astype(dst), name)


@pytest.mark.parametrize("src", [np.float32, np.int16, np.uint64], ids=lambda t: np.dtype(t).name)
def test_cast_to_bool_is_nonzero(src: type) -> None:
    x = float_values(src) if src is np.float32 else int_values(src)
    out = np.zeros(x.shape, np.bool_)
    name = f"sem_bool_{np.dtype(src).name}"
    program(unary_kernel(name, src, np.bool_, lambda v: ir.Cast(v, np.bool_))).run(x, out)
    assert_bits(out, x.astype(np.bool_), name)


@pytest.mark.parametrize("func", ["min", "max"])
def test_min_max_are_python_builtins(func: str) -> None:
    a, b = pairs(float_values(np.float64))
    t = np.float64
    fn = ir.Function("mm_fn", (("a", t), ("b", t)), t, (), (ir.Return(ir.CallIntrinsic(
        func, (ir.Var("a", t), ir.Var("b", t)), t)),))
    kir = zip_kernel(f"sem_{func}", t, fn)
    out = np.zeros_like(a)
    program(kir).run(a, b, out)
    builtin = min if func == "min" else max
    assert_bits(out, np.array([builtin(x, y) for x, y in zip(a, b, strict=True)], t), func)


def test_sqrt_f32_is_correctly_rounded() -> None:
    x = np.random.default_rng(7).random(4096, np.float32) * np.float32(1e6)
    x = np.concatenate([x, float_values(np.float32)])
    out = np.zeros_like(x)
    kir = unary_kernel("sem_sqrt_f32", np.float32, np.float32,
                       lambda v: ir.CallIntrinsic("sqrt", (v,), np.float32))
    program(kir).run(x, out)
    with np.errstate(all="ignore"):
        assert_bits(out, np.sqrt(x), "sqrt f32")

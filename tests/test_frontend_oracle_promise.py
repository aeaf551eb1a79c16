"""Regression tests of issue 8 (items 1, 4, 5): each kernel equals its Python oracle or is
rejected at compile time with a typed error naming the culprit."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gompute_core as g
from gompute_core.errors import AbiError, InvalidArgument, KernelSyntaxError
from gompute_core.frontend import lower

OFF = np.int64(3)
COUNT = 0
"""A shift count the huge-shift test sets before lowering."""


def run_zip(name: str, fn: Any, a: np.ndarray, b: np.ndarray, out_t: type) -> np.ndarray:
    """``fn`` as a zip kernel on the CPU backend."""
    out = np.zeros(a.size, out_t)
    with g.Kernel(g.zip(name, a.dtype.type, b.dtype.type, out_t, None, fn), "cpu") as k:
        k.run(a, b, out, None)
    return out


def oracle(fn: Any, a: np.ndarray, b: np.ndarray, out_t: type) -> np.ndarray:
    """``fn`` run as Python on NumPy scalars, converted to ``out_t``."""
    with np.errstate(all="ignore"):
        return np.array([np.asarray(fn(x, y)).astype(out_t)[()] for x, y in zip(a, b, strict=True)],
                        out_t)


def agrees(name: str, fn: Any, a: np.ndarray, b: np.ndarray, out_t: type) -> None:
    got = run_zip(name, fn, a, b, out_t)
    want = oracle(fn, a, b, out_t)
    assert got.tobytes() == want.tobytes(), (got, want)


# -- item 1: int()/float() of a constant of the target type keep its value ------------------
def shift_by_int_of_np(x, y):
    return x * 2 + int(OFF)


def add_float_of_f64(x, y):
    return x + float(g.f64(2))


def compare_int_of_i64(x, y):
    return x + (1 if int(g.i64(0)) < 1 else 2)


@pytest.mark.parametrize("fn", [shift_by_int_of_np, add_float_of_f64, compare_int_of_i64])
@pytest.mark.parametrize("t", [np.float64, np.int64])
def test_conversion_of_a_constant_folds_to_its_value(fn: Any, t: type) -> None:
    a = np.array([1, 2, 3], t)
    agrees(f"conv_{fn.__name__}_{t.__name__}", fn, a, a, t)


def test_int_of_nan_constant_is_rejected_at_its_line() -> None:
    def k(x):
        return x + int(g.f64(float("nan")))

    with pytest.raises(KernelSyntaxError, match=r"int\(nan\) raises") as info:
        lower(k, [np.float64], np.float64, "k")
    assert info.value.lineno == k.__code__.co_firstlineno + 1


# -- item 4: compile-time crashes become typed errors ----------------------------------------
def test_negative_constant_shift_is_a_kernel_syntax_error() -> None:
    with pytest.raises(KernelSyntaxError, match="negative shift count"):
        lower(lambda x: x + (1000 >> -2), [np.int64], np.int64, "k")


@pytest.mark.parametrize("count", [2**63 - 1, 2**31])
def test_huge_constant_shift_is_rejected_without_computing_it(count: int) -> None:
    def k(x):
        return x + (1 << COUNT)

    globals()["COUNT"] = count
    start = time.perf_counter()
    with pytest.raises(KernelSyntaxError, match="does not fit in 64 bits"):
        lower(k, [np.int64], np.int64, "k")
    assert time.perf_counter() - start < 1.0


def test_huge_constant_power_is_rejected() -> None:
    with pytest.raises(KernelSyntaxError, match="does not fit in 64 bits"):
        lower(lambda x: x + 10 ** 10 ** 9, [np.int64], np.int64, "k")


def _module(tmp_path: Path, name: str, source: str) -> Any:
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("terms", [260, 400])
def test_deep_flat_sum_is_rejected_at_its_line(tmp_path: Path, terms: int) -> None:
    src = "def k(x):\n    y = x\n    return " + " + ".join(["x"] * terms) + "\n"
    mod = _module(tmp_path, f"deep{terms}", src)
    with pytest.raises(KernelSyntaxError, match=f"nested {terms} levels deep") as info:
        lower(mod.k, [np.int64], np.int64, "k")
    assert info.value.lineno == 3 and info.value.filename == str(tmp_path / f"deep{terms}.py")


def test_sum_at_the_nesting_limit_compiles_and_agrees(tmp_path: Path) -> None:
    src = "def k(x, y):\n    return " + " + ".join(["x", "y"] * 32) + "\n"
    mod = _module(tmp_path, "flat64", src)
    a = np.array([1, -5, 2**40], np.int64)
    agrees("flat64", mod.k, a, a, np.int64)


@pytest.mark.parametrize("field", ["my field", "a'b", 'q"', "x\u00e9", "class", "1x"])
def test_params_field_names_must_be_ascii_identifiers(field: str) -> None:
    cls = type("Odd", (), {"__annotations__": {field: g.f32}})
    with pytest.raises(AbiError, match=r"Odd: field name") as info:
        g.params(cls)
    assert repr(field) in str(info.value)


def test_spec_name_length_is_limited() -> None:
    with pytest.raises(InvalidArgument, match="5000 characters long; the limit is 200"):
        g.map("n" * 5000, g.f32, None, lambda x: x)


# -- item 5: alternatives of different types keep their own type ----------------------------
def select_u64_or_half(b, a):
    return b if a > 0 else 0.5


def max_of_huge_literal(x, y):
    return max(1e300, x)


def shift_by_min_of_u16_and_bool(x, y):
    return x << min(y, True)


def relu_then_scale(x, y):
    return (x if x > 0 else 0) * y


def test_select_of_u64_and_python_float_returns_the_chosen_operand() -> None:
    b = np.array([2**64 - 2, 7], np.uint64)
    a = np.array([5, 0], np.uint64)
    agrees("sel_u64", select_u64_or_half, b, a, np.uint64)


def test_max_of_a_huge_literal_and_f32_is_the_literal() -> None:
    x = np.array([1, np.nan, -np.inf], np.float32)
    agrees("max_huge", max_of_huge_literal, x, x, np.float64)


def test_shift_by_min_of_u16_and_bool() -> None:
    x = np.array([0, 1, -1, -128], np.int8)
    y = np.array([0, 3, 9, 1], np.uint16)
    agrees("shift_min", shift_by_min_of_u16_and_bool, x, y, np.int8)


def test_relu_with_a_weak_literal_is_exact() -> None:
    x = np.array([-1.5, 2.0, np.nan, -0.0], np.float32)
    agrees("relu_scale", relu_then_scale, x, x, np.float32)


def test_storing_alternatives_of_two_types_is_rejected_naming_them() -> None:
    def k(b, a):
        y = b if a > 0 else 0.5
        return y + 1

    with pytest.raises(KernelSyntaxError, match=r"alternatives of 'b if a > 0 else 0.5' have "
                                                r"different types \(Python float, u64\).*g\.f64"):
        lower(k, [np.uint64, np.uint64], np.uint64, "k")


def test_alternatives_converted_by_an_explicit_cast_are_exact() -> None:
    def k(b, a):
        return g.f64(b if a > 0 else 0.5) + 0

    b = np.array([2**64 - 2, 3], np.uint64)
    a = np.array([1, 0], np.uint64)
    agrees("sel_cast", k, b, a, np.float64)


KW = 0.1


def invert_chained_comparison(b, a):
    return ~(b != KW == min(((-float("inf") <= 2) and (KW < 0.0)), KW))


def test_and_of_numpy_and_python_bools_returns_the_python_operand() -> None:
    # Python's `a and b` returns b itself when a is true: ~False is -1, ~np.True_ is False
    b = np.array([0.0, 0.1, np.nan], np.float64)
    agrees("and_mixed", invert_chained_comparison, b, b, np.int16)


def invert_bool_constant(a, b):
    return ~(KW < 1.0) + a


@pytest.mark.filterwarnings("error::DeprecationWarning")
def test_inverting_a_python_bool_constant_is_its_int_without_a_warning() -> None:
    """``~True`` folds to -2 as in Python, without Python 3.12's deprecation of ``~`` on a
    bool (which the fuzz tier's kernels hit at every ``~`` of a constant comparison)."""
    g.map("inv_const", g.i32, None, lambda x: ~True + x).lower()
    a = np.array([0, 1, 7], np.int32)
    agrees("inv_bool_const", invert_bool_constant, a, a, np.int32)


def invert_bool_of_numpy(a, b):
    return ~bool(a) + b


def test_bool_of_a_numpy_value_is_a_python_bool() -> None:
    # bool(np.uint32(1)) is True, and ~True is -2 (a NumPy bool would invert logically)
    a = np.array([0, 1, 7], np.uint32)
    b = np.array([0, 0, 0], np.int32)
    agrees("bool_of_np", invert_bool_of_numpy, a, b, np.int32)

"""Regression tests of the differential fuzz tier's findings (issue 8) in the oracle and in
the frontend's typing, apart from the renderers: the sign of a NaN is not compared, a
captured NumPy scalar is a strong value of its type, and a transcendental call is compared
at the precision of the type it computed in."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_frontend_oracle_promise import agrees

import gompute_core as g
from gompute_core.frontend import lower
from gompute_core.ir.nodes import Cast
from gompute_core.plugins import manager


# -- the sign of a NaN is unspecified (fuzz 20261130/3946) ------------------------------------
def sign_of_product(a, b):
    return g.math.copysign(1.0, b * 0.0)


def test_fuzz_oracle_does_not_compare_the_sign_of_a_nan() -> None:
    # inf * 0.0 is -nan on x86 and +nan on a GPU: copysign(0.0, inf * 0.0 % v) was -0.0 in
    # the oracle and +0.0 on the H200 and on PoCL
    from gompute_core.testing.test_fuzz import oracle as fuzz_oracle

    b = np.array([np.inf, -2.0, np.nan, 3.0], np.float64)
    want, defined, _ = fuzz_oracle(sign_of_product, b, b, np.float64)
    assert defined.tolist() == [False, True, False, True]
    assert want[defined].tolist() == [-1.0, 1.0]


# -- a captured np.float64 is a strong f64 (fuzz 777001/3487) ---------------------------------
F64_BIG = g.f64(1e38)
F64_TENTH = g.f64(0.1)
PY_TENTH = 0.1


class Limits:
    """Captured through a class attribute."""

    BIG = g.f64(1e38)


def f32_plus_captured_f64(a, b):
    return a + F64_BIG


def f32_plus_class_f64(a, b):
    return a + Limits.BIG


def f16_plus_captured_f64(a, b):
    return g.f16(a) + F64_TENTH


def f32_plus_captured_python_float(a, b):
    return a + PY_TENTH


def fuzz_777001_3487(a, b):
    return g.f64(abs(a + F64_BIG)) ** 0.5


F32_EDGES = np.array([0.0, 1.0, -1.0, -3.0e38, -1e-45, 0.1, 7e37, 1e38], np.float32)
"""f32 values whose sum with 1e38, made f64, has its square root within u64 range."""


@pytest.mark.parametrize(("fn", "out_t"), [
    (f32_plus_captured_f64, np.float64), (f32_plus_class_f64, np.float64),
    (f32_plus_captured_python_float, np.float64),
    (fuzz_777001_3487, np.uint64)], ids=lambda v: getattr(v, "__name__", ""))
def test_captured_numpy_float64_is_strong(fn: object, out_t: type) -> None:
    # np.float64 subclasses float: the frontend took it for a weak Python float, so that
    # f32 + g.f64(1e38) was computed in f32 (a Python float must stay weak: f32 + 0.1 is f32)
    agrees(f"fz_{fn.__name__}", fn, F32_EDGES, F32_EDGES, out_t)  # type: ignore[attr-defined]


def _result_type(fn: object, a_t: type) -> type:
    """The type the frontend gives ``fn``'s returned value for arguments of type ``a_t``."""
    (function,) = lower(fn, [a_t, a_t], np.float64, "k")
    value = function.body[-1].value
    return (value.value if isinstance(value, Cast) else value).type  # type: ignore[no-any-return]


def test_f16_plus_captured_f64_is_f64() -> None:
    # the CPU has no f16 arithmetic: the type is checked where it cannot run
    assert _result_type(f16_plus_captured_f64, np.float32) is type(np.float16(1) + F64_TENTH)


def _adds_closure(k: object) -> object:
    def adds_closure(a, b):
        return a + k

    return adds_closure


def _edges(t: type) -> np.ndarray:
    if np.dtype(t).kind == "f":
        return np.array([0.0, 1.0, -2.5, 1e-3, 0.1, 3e4, -7e37], np.float64).astype(t)
    if t is np.bool_:
        return np.array([False, True], t)
    info = np.iinfo(t)
    return np.array([0, 1, 7, info.max, info.min, info.max // 3], t)


CAPTURED = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
            np.uint64, np.float16, np.float32, np.float64]


@pytest.mark.parametrize("var_t", [np.int8, np.uint64, np.float32, np.float64])
@pytest.mark.parametrize("k_t", CAPTURED, ids=lambda t: np.dtype(t).name)
def test_captured_numpy_scalar_of_every_type_is_strong(k_t: type, var_t: type) -> None:
    # a closure cell holding each NumPy scalar type, added to a variable of another type
    # (NumPy promotes strong op strong: i8 + u64 is f64, f32 + f16 is f32, u64 + f64 is f64)
    k = _edges(k_t)[-1] if np.dtype(k_t).kind != "f" else k_t(0.1)
    a = _edges(var_t)
    out_t = np.result_type(var_t, k_t).type
    if out_t is np.float16:  # no f16 arithmetic on the CPU: the type is checked
        assert _result_type(_adds_closure(k), var_t) is np.float16
        return
    agrees(f"fz_closure_{np.dtype(k_t).name}_{np.dtype(var_t).name}", _adds_closure(k),
           a, a, out_t)


def scaled_by_weak(a, b):
    return (F32_SCALE * 0.1 + a) + (I8_TOP + 1) + F64_TENTH * 3


F32_SCALE = g.f32(3.0)
I8_TOP = g.i8(127)


def test_captured_strong_scalars_with_weak_literals() -> None:
    # f32 * 0.1 stays f32, i8(127) + 1 wraps in i8, f64 * 3 stays f64
    a = np.array([0, 1, -5, 100], np.int16)
    agrees("fz_scaled_by_weak", scaled_by_weak, a, a, np.float64)


# -- a transcendental call's tolerance follows the type it computed in ------------------------
# (fuzz 3058691250/185 on the CPU, 777001/2406 on CUDA: g.math.atan/log of an f32 returned as
# f64 was compared within 4 ulp of f64, not of f32)
@pytest.mark.parametrize(("seed", "index", "cpu_types"), [
    (3058691250, 185, True), (777001, 2406, False), (777001, 3487, True)])
def test_fuzz_cases_agree(seed: int, index: int, cpu_types: bool, tmp_path: Path) -> None:
    from gompute_core.testing.fuzzgen import generate
    from gompute_core.testing.test_fuzz import backend_types, check_case
    from gompute_core.types import SCALAR_TYPES

    # 2406 is CUDA's kernel (drawn from every type, f16 included); it needs no f16 to run
    types = backend_types(manager.require("cpu").info) if cpu_types else list(SCALAR_TYPES)
    assert check_case(generate(seed, index, types), str(tmp_path), "cpu") == "agreed"


def log_of_f32(a, b):
    return g.math.log(a)


def log_of_f64(a, b):
    return g.math.log(g.f64(a))


def log_unless_large(a, b):
    if a > 100:
        return g.f64(a) * 0.1
    return g.math.log(g.f64(a))


POSITIVE_F32 = np.array([0.5, 3.0, 1.5e3, 7e-3, 1e30, 2.0, 123.25, 9.5], np.float32)


def _ulps_away(want: np.ndarray, t: type, n: int) -> np.ndarray:
    """``want`` moved ``n`` ulps of ``t`` up (in ``t``), converted back to ``want``'s type."""
    moved = want.astype(t)
    for _ in range(n):
        moved = np.nextafter(moved, t(np.inf))
    return moved.astype(want.dtype)


def _flagged(fn: object, out_t: type, got_of: object) -> list[int]:
    from gompute_core.testing.test_fuzz import compare
    from gompute_core.testing.test_fuzz import oracle as fuzz_oracle

    want, defined, computed_in = fuzz_oracle(fn, POSITIVE_F32, POSITIVE_F32, out_t)
    assert defined.all()
    return compare(got_of(want), want, computed_in)  # type: ignore[operator]


def test_f32_transcendental_is_compared_at_f32_precision() -> None:
    assert _flagged(log_of_f32, np.float64, lambda w: _ulps_away(w, np.float32, 4)) == []
    assert _flagged(log_of_f32, np.float64, lambda w: _ulps_away(w, np.float32, 5)) \
        == list(range(8))


def test_f64_transcendental_at_f32_precision_is_flagged() -> None:
    # the f64 log rounded through f32 is a real mismatch, though the f32 log would pass
    assert _flagged(log_of_f64, np.float64, lambda w: w.astype(np.float32).astype(w.dtype)) \
        == list(range(8))
    assert _flagged(log_of_f64, np.float64, lambda w: _ulps_away(w, np.float64, 4)) == []


def test_f64_transcendental_into_f32_is_within_one_ulp_of_f32() -> None:
    assert _flagged(log_of_f64, np.float32, lambda w: _ulps_away(w, np.float32, 1)) == []
    assert _flagged(log_of_f64, np.float32, lambda w: _ulps_away(w, np.float32, 2)) \
        == list(range(8))


def test_elements_without_a_transcendental_call_stay_exact() -> None:
    # 1.5e3, 1e30 and 123.25 return a * 0.1: one ulp of f64 off is a mismatch there
    assert _flagged(log_unless_large, np.float64, lambda w: _ulps_away(w, np.float64, 1)) \
        == [2, 4, 6]

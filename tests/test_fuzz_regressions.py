"""Regression tests of the differential fuzz tier's findings (issue 8): each kernel, the
fuzz case minimized, equals its Python oracle on the CPU backend or is rejected at its
line naming the expression."""

from __future__ import annotations

import ctypes
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from test_frontend_oracle_promise import agrees, oracle

import gompute_core as g
from gompute_core.errors import KernelSyntaxError
from gompute_core.frontend import lower
from gompute_core.plugins import manager

I32_MAX = g.i32(2147483647)
I64_BIG = g.i64(2147483647)
U32_ZERO = g.u32(0)


# -- int64 + - * wrap (fuzz 1001/2188 and ten more): numba flags them `nsw`, LLVM folded ----
def floordiv_by_wrapped_product(a, b):
    return 7 // (I32_MAX * max(7, a))


def wrapped_square_sign(a, b):
    return (a * I64_BIG) // (b * b + 1)


@pytest.mark.parametrize("fn", [floordiv_by_wrapped_product, wrapped_square_sign])
def test_int64_arithmetic_wraps_as_numpy(fn: object) -> None:
    a = np.array([5110651045465067214, 8947736758444965352, 4573487268110367691,
                  2**62, -2**63, 2**63 - 1, 3, -7], np.int64)
    b = np.array([2**62, 2**62 + 5, -2**63 + 1, 2**62, -1, 1, 3, -7], np.int64)
    agrees(f"fz_{fn.__name__}", fn, a, b, np.float32)  # type: ignore[attr-defined]


# -- float ** is the C library's pow, as the oracle's (fuzz 266209864/249, 1002/3429) ------
def square(a, b):
    return a ** 2


def square_root(a, b):
    return g.f64(b) ** 0.5


def test_float_power_is_the_c_librarys_pow() -> None:
    # 1885296400.0 ** 2 is a tie between two doubles: x * x rounds it to even, pow does not
    a = np.array([1885296400.0, 3.0, -2.5, 1e200, 0.0], np.float64)
    agrees("fz_square", square, a, a, np.float64)


def test_power_one_half_is_pow_not_sqrt() -> None:
    # sqrt(49509.0) and pow(49509.0, 0.5) differ by one ulp
    b = np.array([49509, 0, 1, 2, 65535], np.uint16)
    agrees("fz_sqrt", square_root, b, b, np.float64)


# -- a Python number ** a non-integer Python float (fuzz 1001/4772) ---------------------------
def python_int_to_the_half(a, b):
    return g.f64(int(g.i16(a)) ** 0.5)


def python_float_power_in_place(a, b):
    x = float(a)
    x **= 0.5
    return x


@pytest.mark.parametrize(("fn", "text"), [
    (python_int_to_the_half, "int(g.i16(a)) ** 0.5"),
    (python_float_power_in_place, "x **= 0.5"),
])
def test_python_number_to_a_fractional_power_is_rejected(fn: object, text: str) -> None:
    with pytest.raises(KernelSyntaxError, match="is complex for a negative base") as info:
        lower(fn, [np.int64, np.int64], np.float64, "k")
    assert f"'{text}'" in str(info.value)
    assert info.value.lineno is not None
    assert info.value.lineno > fn.__code__.co_firstlineno  # type: ignore[attr-defined]


def real_python_powers(a, b):
    return float(a) ** 2.0 + 2.0 ** float(b) + g.f64(a) ** 0.5 + float(b) ** -1.0


def test_python_number_to_an_integral_or_nonnegative_power_is_accepted() -> None:
    a = np.array([-3, 0, 4, 9], np.int64)
    b = np.array([1, -2, 3, 10], np.int64)
    agrees("fz_real_powers", real_python_powers, a, b, np.float64)


# -- a helper's returns of different types (issue 8 review) -----------------------------------
def u8_or_i32(u, w):
    if u > 3:
        return u
    return w


def adds_u8_to_mixed_helper(a, b):
    return u8_or_i32(a, b) + g.u8(250)


def u8_or_zero(u, w):
    if u > 3:
        return u
    return 0


def adds_u8_to_helper_with_literal(a, b):
    return u8_or_zero(a, b) + g.u8(250)


def test_helper_returns_of_different_types_are_rejected_at_the_return() -> None:
    with pytest.raises(KernelSyntaxError, match=r"helper 'u8_or_i32' returns 'u' as u8 here "
                                                r"but i32 .* g\.i32\(\.\.\.\)") as info:
        lower(adds_u8_to_mixed_helper, [np.uint8, np.int32], np.int64, "k")
    assert info.value.lineno == u8_or_i32.__code__.co_firstlineno + 2


def test_helper_returning_a_literal_its_type_represents_is_accepted() -> None:
    a = np.array([10, 2, 255, 4], np.uint8)
    agrees("fz_helper_literal", adds_u8_to_helper_with_literal, a, a, np.int64)


# -- an integer ** a Python float: NumPy's power ufunc and its fast paths (fuzz 1001/1279) ----
def integer_fast_path_powers(a, b):
    return (a ** 0.5) + b + a ** 2.0 + a ** -1.0 + a ** 1.0 + a ** 0.0


@pytest.mark.parametrize("t", [np.uint64, np.int64])
def test_integer_to_a_fast_path_exponent_is_numpys_ufunc(t: type) -> None:
    # sqrt(14998994886766282282.0) and pow(..., 0.5) differ by one ulp
    big = 14998994886766282282 if t is np.uint64 else 2**62 + 1
    a = np.array([big, 49509, 1885296400, 7, 0], t)
    b = np.array([0.0, -0.0, 1.0, 5e-324, -1.0], np.float64)
    agrees(f"fz_ufunc_power_{t.__name__}", integer_fast_path_powers, a, b, np.float64)


def integer_to_one_and_a_half(a, b):
    return a ** 1.5


def test_integer_to_another_float_exponent_is_rejected() -> None:
    with pytest.raises(KernelSyntaxError, match=r"'a \*\* 1\.5' mixes types .* g\.f64\(x\)"):
        lower(integer_to_one_and_a_half, [np.int64, np.int64], np.float64, "k")


# -- a float select whose arms differ only in the sign of zero (fuzz 1003/1159) -------------
def min_with_false(a, b):
    return min(b, abs(False))


def min_with_a_cast_constant(a, b):
    return min((+b), abs(bool(int(g.i8(U32_ZERO)))))


def clamp_below_zero_f32(a, b):
    return g.f32(0.0) if 0.0 < b else g.f32(b)


@pytest.mark.parametrize("fn", [min_with_false, min_with_a_cast_constant,
                                clamp_below_zero_f32])
def test_select_keeps_the_sign_of_a_zero_arm(fn: object) -> None:
    # 0.0f if 0.0 < b else f32(b): LLVM rewrote it to `b >= 0 ? 0.0f : f32(b)`, +0.0 for -0.0
    a = np.zeros(5, np.float32)
    b = np.array([-0.0, 0.0, 1.0, -1.0, np.nan], np.float64)
    agrees(f"fz_{fn.__name__}", fn, a, b, np.float32)  # type: ignore[attr-defined]


# -- the C-family renderers (CUDA, HIP, OpenCL): fuzz 20261130 on an H200 ------------------
def _c_source(fn: object, a_t: type, b_t: type, out_t: type) -> str:
    from gompute_cuda.renderer import CUDARenderer

    name = f"fz_c_{fn.__name__}_{np.dtype(b_t).name}"  # type: ignore[attr-defined]
    return CUDARenderer().render(g.zip(name, a_t, b_t, out_t, None, fn).lower())


def widened_abs(a, b):
    return g.u64(abs(b))


@pytest.mark.parametrize(("t", "wide", "top"), [
    (np.int8, "gp_u32", 31), (np.int16, "gp_u32", 31), (np.int32, "gp_u32", 31),
    (np.int64, "gp_u64", 63)])
def test_abs_is_branch_free_in_the_wide_unsigned_type(t: type, wide: str, top: int) -> None:
    # NVRTC compiled the select `a < 0 ? 0u - w : w` to PTX abs.s32, which ptxas takes for
    # non-negative: abs(i32 min) < 0 was false (fuzz 777001/809); a select of a narrow
    # type gave abs(-32768), widened to u64, 32768 (fuzz 20261130/8699, 8093)
    from gompute_core.codegen.ctypes_ import wrap_int

    c = f"gp_{np.dtype(t).name.replace('int', 'i')}"
    src = _c_source(widened_abs, np.uint16, t, np.uint64)
    assert (f"{c} gp_abs_{c[3:]}({c} a) {{ {wide} w = ({wide})a, s = w >> {top}; "
            f"return {wrap_int(f'(w ^ (({wide})0 - s)) + s', t)}; }}") in src
    assert "a < 0" not in src


def negated(a, b):
    return -b


@pytest.mark.parametrize(("t", "shift"), [(np.int8, 24), (np.int16, 16)])
def test_narrow_signed_results_sign_extend_by_shifts(t: type, shift: int) -> None:
    # the cast (i16)(0u - (u32)x), and ((u & 0xFFFF) ^ 0x8000) - 0x8000, became PTX neg.s16,
    # whose result the ptxas of NVRTC 13.0 did not sign-extend again: -x was +32768 for
    # x = -32768 (fuzz 777001/7301, 5851); shifts keep the negation in 32 bits
    c = f"gp_{np.dtype(t).name.replace('int', 'i')}"
    src = _c_source(negated, np.uint16, t, np.int64)
    assert (f"(({c})(((gp_i32)(((gp_u32)((gp_u32)0 - (gp_u32)(v_b))) << {shift})) "
            f">> {shift}))") in src
    assert "32768u" not in src and "128u" not in src


def abs_at_least_minus_zero(a, b):
    return abs(b) >= -0.0


@pytest.mark.parametrize("t", [np.float32, np.float16])
def test_f32_abs_clears_the_sign_bit(t: type) -> None:
    # ptxas (NVRTC 13.0 and 13.5) folds fabsf(x) >= -0.0f to true, NaN included
    # (fuzz 777001/7921); f16 is computed in float
    src = _c_source(abs_at_least_minus_zero, t, t, np.bool_)
    assert "v.u &= 0x7fffffffu" in src
    assert "((gp_fabs_f32(v_b)) >= " in src
    assert "fabsf(" not in src


def test_f64_abs_is_fabs() -> None:
    # ptxas compares an f64 fabs with a constant correctly: it keeps its free |x| operand
    src = _c_source(abs_at_least_minus_zero, np.float64, np.float64, np.bool_)
    assert "((fabs(v_b)) >= " in src
    assert "gp_fabs_f32" not in src


def b_squared(a, b):
    return b ** 2


def b_cubed(a, b):
    return b ** 3


def b_reciprocal(a, b):
    return b ** -1.0


def b_root(a, b):
    return b ** 0.5


def b_zeroth_and_first(a, b):
    return b ** 0 + b ** 1.0


def b_one_and_a_half(a, b):
    return b ** 1.5


CONSTANT_POWERS = [(b_squared, "gp_pow2"), (b_cubed, "gp_pow3"), (b_reciprocal, "gp_powm1"),
                   (b_root, "gp_powhalf"), (b_zeroth_and_first, "gp_pow0")]


@pytest.mark.parametrize(("fn", "helper"), CONSTANT_POWERS)
@pytest.mark.parametrize("t", [np.float64, np.float32, np.float16])
def test_float_power_of_a_constant_is_not_the_devices_pow(fn: object, helper: str,
                                                          t: type) -> None:
    # CUDA's pow(112.0, 2.0) is 12543.999..., pow(18600.0, 3.0) 6434855999999.999
    # (fuzz 20261130/9167, 7106, 4673, 573)
    src = _c_source(fn, t, t, t)
    assert f"{helper}_{np.dtype(t).name.replace('float', 'f')}(" in src
    assert "pow(" not in src and "powf(" not in src


def test_float_power_of_another_exponent_is_the_devices_pow() -> None:
    assert "pow(" in _c_source(b_one_and_a_half, np.float64, np.float64, np.float64)


EXACT = np.array([112.0, 18600.0, -28478.0, 3.0, -7.0, 0.5, 0.0, -0.0, np.inf, -np.inf,
                  np.nan, 1e300, -1e-300, 5e-324, 2.0 ** 52 + 1], np.float64)
"""Bases whose constant powers the C library's ``pow`` (the oracle's) computes exactly."""

EXACT32 = np.array([112.0, 1800.0, -2847.0, 3.0, -7.0, 0.5, 0.0, -0.0, np.inf, -np.inf,
                    np.nan, 1e30, -1e-30, 1e-45, 2.0 ** 23 + 1], np.float32)

I16 = np.array([-32768, -32767, -1, 0, 7, 32767], np.int16)

U64 = np.array([0, 1, 7, 2**32 + 1, 2**63, 2**64 - 1], np.uint64)


def min_of_a_square_and_negative_zero(a, b):
    """CUDA fuzz seed 2026120501, case 3511: +0.0 for ``b = 0`` (the square wins the tie)."""
    return min(g.f32(b) ** 2, -0.0)


def nested_choices(a, b):
    """Three alternatives of three types whose selects nest (OpenCL fuzz seed 2026120513,
    case 564, once each compared operand became a helper's parameter: an inner helper's
    parameter took an enclosing helper's parameter name)."""
    return max(g.u32(b), (b < 7) and (b > 2), 10000 - (g.i64(b) ^ g.u16(100)))

RUNTIME_CASES = [(widened_abs, I16, np.uint64), (negated, I16, np.int64),
                 (b_squared, EXACT, np.float64),
                 (b_cubed, EXACT, np.float64), (b_reciprocal, EXACT, np.float64),
                 (b_root, EXACT, np.float64), (b_zeroth_and_first, EXACT, np.float64),
                 (b_squared, EXACT32, np.float32), (b_cubed, EXACT32, np.float32),
                 (b_root, EXACT32, np.float32),
                 (min_of_a_square_and_negative_zero, U64, np.float64),
                 (nested_choices, U64, np.int8)]


def _run_c99(name: str, fn: object, b: np.ndarray, out_t: type, tmp: Path) -> np.ndarray:
    """The zip kernel rendered by the C99 dialect of ``test_codegen_c99``, built by gcc."""
    from test_codegen_c99 import C99Renderer, _shared_library

    kir = g.zip(name, np.uint16, b.dtype.type, out_t, None, fn).lower()
    lib = _shared_library(C99Renderer().render(kir), tmp / f"{name}.so")
    a, out = np.zeros(b.size, np.uint16), np.zeros(b.size, out_t)
    run = getattr(lib, kir.name)
    run.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_uint64]
    run(a.ctypes.data, b.ctypes.data, out.ctypes.data, b.size)
    return out


def _run_opencl(name: str, fn: object, b: np.ndarray, out_t: type, tmp: Path) -> np.ndarray:
    """The zip kernel on the OpenCL example backend (skipped without an OpenCL device)."""
    pytest.importorskip("pyopencl")
    sys.path.insert(0, str(Path(__file__).parents[1] / "examples" / "gompute-opencl"))
    try:
        from gompute_opencl import plugin
    finally:
        sys.path.pop(0)
    with manager.isolated():
        manager.register(plugin, "opencl")
        avail = manager.probe("opencl")
        if not avail.available:
            pytest.skip(avail.reason)
        a, out = np.zeros(b.size, np.uint16), np.zeros(b.size, out_t)
        with g.Kernel(g.zip(name, np.uint16, b.dtype.type, out_t, None, fn), "opencl") as k:
            k.run(a, b, out, None)
    return out


def test_a_compared_operand_the_select_returns_is_computed_once() -> None:
    """``min(X, -0.0)`` returned as f64: NVRTC 13 and PoCL's LLVM returned -0.0 for ``X =
    +0.0`` when ``X`` was written twice or the select chose between converted values; the
    rendering selects in f32 through a helper that takes ``X`` once, then converts."""
    src = _c_source(min_of_a_square_and_negative_zero, np.uint16, np.uint64, np.float64)
    body = src[src.index("f_fz_c_min_of_a_square"):]
    assert body.count("gp_pow2_f32(((float)(v_b)))") == 1, body
    helper = re.search(r"float (gp_select_\w+)\(float v_0\) \{ return (.*); \}", src)
    assert helper is not None and "double" not in helper.group(2), src
    assert f"((double)({helper.group(1)}(gp_pow2_f32(" in body, body


@pytest.mark.parametrize("runner", [_run_c99, _run_opencl], ids=["c99-gcc", "opencl"])
@pytest.mark.parametrize(("fn", "b", "out_t"), RUNTIME_CASES,
                         ids=lambda v: getattr(v, "__name__", None) or "")
def test_c_renderings_equal_the_oracle(runner: object, fn: object, b: np.ndarray,
                                       out_t: type, tmp_path: Path) -> None:
    name = f"fz{runner.__name__}_{fn.__name__}_{b.dtype.name}"  # type: ignore[attr-defined]
    got = runner(name, fn, b, out_t, tmp_path)  # type: ignore[operator]
    want = oracle(fn, np.zeros(b.size, np.uint16), b, out_t)
    assert got.tobytes() == want.tobytes(), (got, want)


# -- constructs the ptxas of NVRTC 13.0 rewrote (fuzz 777001 on an H200) ----------------------
# Each equals its oracle on the backend under test (--gompute-backend, the CPU by default),
# in the C99 rendering built by gcc and on OpenCL; the source tests above check what the
# C-family renderers emit for them.
def float_mod_by_abs(a, b):  # 809: the sign test of `%` by f64(abs(i32 min))
    return (1.5 % g.f64(abs(b))) - b


def negation_at_most(a, b):  # 7301: -(-32768) as an i16 is -32768
    return int(g.i16((-(b ** 1)) <= a))


def zero_minus_below(a, b):  # 5851: 0 - (-32768) as an i16 is -32768
    return ((not 3.0e38) - b) < (b > 5)


def abs_at_least_minus_zero_or_b(a, b):  # 7921: abs(nan) >= -0.0 is False
    return (abs(b) >= (-0.0 if b else b)) - g.u32(4294967295)


def held_abs_above_minus_one(a, b):
    v = abs(b)
    return (v > -1.0) or (-g.math.fabs(b) <= 0.0)


I32_EDGES = np.array([-2**31, -2**31 + 1, -7, -1, 1, 7, 2**31 - 1], np.int32)
F32_NAN_EDGES = np.array([np.nan, -np.nan, 0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, 1e-45],
                         np.float32)

PTXAS_CASES = [(float_mod_by_abs, I32_EDGES, np.float64), (negation_at_most, I16, np.uint64),
               (zero_minus_below, I16, np.int8),
               (abs_at_least_minus_zero_or_b, F32_NAN_EDGES, np.uint32),
               (held_abs_above_minus_one, F32_NAN_EDGES, np.bool_)]


def _run_backend(name: str, fn: object, b: np.ndarray, out_t: type, backend: str) -> np.ndarray:
    """The zip kernel on ``backend``."""
    a, out = np.zeros(b.size, np.uint16), np.zeros(b.size, out_t)
    with g.Kernel(g.zip(name, np.uint16, b.dtype.type, out_t, None, fn), backend) as k:
        k.run(a, b, out, None)
    return out


@pytest.mark.parametrize("runner", ["backend", "c99-gcc", "opencl"])
@pytest.mark.parametrize(("fn", "b", "out_t"), PTXAS_CASES,
                         ids=lambda v: getattr(v, "__name__", None) or "")
def test_constructs_ptxas_rewrote_equal_the_oracle(runner: str, fn: object, b: np.ndarray,
                                                   out_t: type, gompute_backend: str,
                                                   tmp_path: Path) -> None:
    name = f"fz_ptxas_{runner.replace('-', '_')}_{fn.__name__}"  # type: ignore[attr-defined]
    if runner == "backend":
        got = _run_backend(name, fn, b, out_t, gompute_backend)
    else:
        run = _run_c99 if runner == "c99-gcc" else _run_opencl
        got = run(name, fn, b, out_t, tmp_path)
    want = oracle(fn, np.zeros(b.size, np.uint16), b, out_t)
    assert got.tobytes() == want.tobytes(), (got, want)


def _ptx(source: str) -> str:
    """``source`` compiled to compute_90 PTX, with the CUDA backend's options, by the NVRTC
    the backend would load (skipped without one)."""
    from gompute_cuda.compiler import DEFAULT_OPTIONS
    from gompute_cuda.nvrtc import load_nvrtc

    from gompute_core.errors import BackendUnavailable

    try:
        lib = load_nvrtc().lib
    except BackendUnavailable as exc:
        pytest.skip(f"no NVRTC to compile PTX with: {exc}")
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"k.cu", 0, None,
                                  None) == 0
    try:
        opts = [b"--gpu-architecture=compute_90", *(o.encode() for o in DEFAULT_OPTIONS)]
        assert lib.nvrtcCompileProgram(prog, len(opts),
                                       (ctypes.c_char_p * len(opts))(*opts)) == 0
        size = ctypes.c_size_t()
        assert lib.nvrtcGetPTXSize(prog, ctypes.byref(size)) == 0
        ptx = ctypes.create_string_buffer(size.value)
        assert lib.nvrtcGetPTX(prog, ptx) == 0
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return ptx.value.decode()


@pytest.mark.parametrize(("fn", "b", "out_t"),
                         [*PTXAS_CASES, (widened_abs, I16, np.uint64), (negated, I16, np.int64)],
                         ids=lambda v: getattr(v, "__name__", None) or "")
def test_ptx_has_no_instruction_ptxas_misread(fn: object, b: np.ndarray, out_t: type) -> None:
    # ptxas took neg.s16 of a sign-extended value for sign-extended (NVRTC 13.0), abs.s32
    # for non-negative, and abs.f32 compared with a constant <= 0 for true even for a NaN
    src = _c_source(fn, np.uint16, b.dtype.type, out_t)
    ptx = _ptx(src)
    found = re.findall(r"^\s*((?:neg\.s16|abs\.s16|abs\.s32|abs\.s64|abs\.f32)\s.*)$", ptx,
                       re.MULTILINE)
    assert not found, found


# -- fuzz 4096001/2576 (CUDA; A=f64 B=i8 Out=i8): `x // float(max(K1, -0.0))` with K1 a zero ---
# constant: the two alternatives of the max, float(-0.0) and float(+0.0), were merged as one
# constant because -0.0 == 0.0, so the divisor was -0.0 and the quotient -inf, not +inf
ZERO_F32 = g.f32(0.0)


def floordiv_by_max_of_zeros(a, b):
    return (abs(g.u8(True) | g.u8(b)) // float(max(ZERO_F32, -0.0))) <= (b + a)


def floordiv_by_min_of_zeros(a, b):
    return a // float(min(-0.0, ZERO_F32)) + b


def test_signed_zero_alternatives_are_not_merged() -> None:
    a = np.array([-3.0, 0.0, 2.5, -1e300, 7.0], np.float64)
    b = np.array([-128, -1, 0, 1, 127], np.int8)
    agrees("fz_floordiv_by_max_of_zeros", floordiv_by_max_of_zeros, a, b, np.int8)
    agrees("fz_floordiv_by_min_of_zeros", floordiv_by_min_of_zeros, a, b, np.float64)


def test_fuzz_4096001_2576_keeps_the_positive_zero_divisor() -> None:
    """The fuzz case itself (its f16 constant runs on CUDA and HIP only): its lowered IR
    keeps ``max(K1, -0.0)`` a choice between the two zeros (the quotient by +0.0 where
    ``-0.0 > K1`` is false), never the constant -0.0."""
    from gompute_core.testing.fuzzgen import generate
    from gompute_core.types import SCALAR_TYPES

    case = generate(4096001, 2576, list(SCALAR_TYPES))
    assert "float(max(K1, -0.0))" in case.source
    namespace: dict[str, object] = {}
    path = Path(__file__).parent / "_fuzz_4096001_2576.py"
    try:
        path.write_text(case.source)
        exec(compile(case.source, str(path), "exec"), namespace)  # noqa: S102
        kir = g.zip("fz_4096001_2576", case.A, case.B, case.Out, None, namespace["kern"]).lower()
    finally:
        path.unlink()
    from gompute_core.ir.printer import format_kernel

    text = format_kernel(kir)
    assert "if (-0.0f16 > 0.0f16) else (f64(abs(1u8 | u8(b))) // 0.0f64)" in text

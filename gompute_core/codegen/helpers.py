"""Generated helper functions for operations C does not define the way the IR does.

Each helper is emitted once per type a kernel needs, as a forced-inline device
function, so that operands are evaluated once and no C undefined behaviour is
reached: integer wrap goes through unsigned arithmetic; floor division and
modulo follow Python (division by zero gives 0, ``i_min // -1`` wraps); shifts
outside ``[0, width)`` give 0 or -1 as NumPy; float floor division and modulo
follow NumPy's ``npy_divmod``; ``min``/``max`` follow Python's builtins; a float ``**``
one of a few constants is computed without the device's ``pow`` (see
:func:`constant_power`); an integer ``abs`` is branch-free and an f32 one clears the sign
bit (:func:`float_abs_helper`), so that no compiler takes either for non-negative.
"""

from __future__ import annotations

import numpy as np

from ..ir.nodes import IRType
from ..types import bits, is_signed, short_name
from .ctypes_ import reg_type, wide_unsigned, wrap_int


def helper_name(op: str, t: IRType) -> str:
    """The C name of helper ``op`` for type ``t`` (``gp_floordiv_i32``)."""
    return f"gp_{op}_{short_name(t)}"


def _int_min(t: IRType) -> str:
    n = bits(t)
    return f"(({reg_type(t)})(-{2 ** (n - 1) - 1}{'LL' if n == 64 else ''} - 1))"


def int_helper(op: str, t: IRType, fq: str) -> str:
    """Source of integer helper ``op`` (floordiv, mod, lshift, rshift, pow, abs, min, max)."""
    c, u, name = reg_type(t), wide_unsigned(t), helper_name(op, t)
    width = bits(t)
    signed = is_signed(t)
    head = f"{fq} {c} {name}({c} a, {c} b)"
    if op == "floordiv":
        if not signed:
            return f"{head} {{ return b == 0 ? ({c})0 : ({c})(a / b); }}\n"
        return (f"{head} {{\n  if (b == 0) return 0;\n"
                f"  if (b == -1) return {wrap_int(f'({u})0 - ({u})a', t)};\n"
                f"  {c} q = ({c})(a / b);\n"
                f"  if (({c})(a % b) != 0 && ((a < 0) != (b < 0))) q = ({c})(q - 1);\n"
                f"  return q;\n}}\n")
    if op == "mod":
        if not signed:
            return f"{head} {{ return b == 0 ? ({c})0 : ({c})(a % b); }}\n"
        return (f"{head} {{\n  if (b == 0 || b == -1) return 0;\n"
                f"  {c} r = ({c})(a % b);\n"
                f"  if (r != 0 && ((r < 0) != (b < 0))) r = ({c})(r + b);\n"
                f"  return r;\n}}\n")
    if op == "lshift":
        neg = " || b < 0" if signed else ""
        return (f"{head} {{ return (b >= {width}{neg}) ? ({c})0 : "
                f"{wrap_int(f'({u})a << ({u})b', t)}; }}\n")
    if op == "rshift":
        if not signed:
            return f"{head} {{ return b >= {width} ? ({c})0 : ({c})(a >> b); }}\n"
        return (f"{head} {{ return (b >= {width} || b < 0) ? (a < 0 ? ({c})-1 : ({c})0) "
                f": ({c})(a >> b); }}\n")
    if op == "pow":
        neg = (f"  if (b < 0) return a == 1 ? ({c})1 : (a == -1 ? ((b & 1) ? ({c})-1 : ({c})1) "
               f": ({c})0);\n") if signed else ""
        return (f"{head} {{\n{neg}  {u} r = 1, x = ({u})a, e = ({u})b;\n"
                f"  while (e) {{ if (e & 1) r *= x; x *= x; e >>= 1; }}\n"
                f"  return {wrap_int('r', t)};\n}}\n")
    if op == "min":
        return f"{head} {{ return (b < a) ? b : a; }}\n"
    if op == "max":
        return f"{head} {{ return (b > a) ? b : a; }}\n"
    if op == "abs":
        # branch-free, (w ^ -s) + s with s the sign bit, in the wide unsigned type, then
        # wrapped: NVRTC compiled the select `a < 0 ? 0u - w : w` to PTX `abs.s32`, which
        # the ptxas of NVRTC 13.0 takes for non-negative (13.5 does not), so `abs(i32 min)
        # < 0` was false (fuzz 777001/809: the sign test of float `%` by f64(abs(b)));
        # the narrow types' wrap, see wrap_int
        if not signed:
            return f"{fq} {c} {name}({c} a) {{ return a; }}\n"
        top = 63 if u == "gp_u64" else 31
        return (f"{fq} {c} {name}({c} a) {{ {u} w = ({u})a, s = w >> {top}; "
                f"return {wrap_int(f'(w ^ (({u})0 - s)) + s', t)}; }}\n")
    raise KeyError(op)


CONSTANT_POWERS: dict[float, str] = {
    -1.0: "powm1", 0.0: "pow0", 0.5: "powhalf", 1.0: "pow1", 2.0: "pow2", 3.0: "pow3"}
"""Float helper names of ``x ** y`` for the constant exponents computed without ``pow``."""


def constant_power(y: float, t: IRType, fq: str, sqrt: str, round_half: str) -> str:
    """Source of the float helper computing ``x ** y`` for ``y`` in :data:`CONSTANT_POWERS`,
    correctly rounded, as the C library's ``pow`` (the oracle's) is but for rare near-ties.

    A GPU's ``pow`` is only within 2 ulp: CUDA's ``pow(112.0, 2.0)`` is 12543.999...,
    ``pow(18600.0, 3.0)`` 6434855999999.999 (fuzz 20261130/9167, 7106, 4673, 573), and on
    the H200 a quarter of random doubles squared differed from NumPy's (0.1% with these).
    ``x * x``, ``1 / x`` and ``sqrt`` round once (``pow(-0.0, 0.5)`` is +0.0 and
    ``pow(-inf, 0.5)`` +inf, where ``sqrt`` gives -0.0 and nan); an f64 cube is a
    double-double product (``fma`` error terms) rounded once, a narrower cube a product of
    doubles (exact up to the square) rounded to the type. ``sqrt`` is the dialect's
    square root of the register type."""
    c, name = reg_type(t), helper_name(CONSTANT_POWERS[y], t)
    rnd = round_half if t is np.float16 else ""
    head = f"{fq} {c} {name}({c} x)"
    one, zero = ("1.0", "0.0") if t is np.float64 else ("1.0f", "0.0f")
    if y in (0.0, 1.0):
        return f"{head} {{ return {one if y == 0.0 else 'x'}; }}\n"
    if y == -1.0:
        return f"{head} {{ return {rnd}({one} / x); }}\n"
    if y == 0.5:
        lowest = "-1.7976931348623157e308" if t is np.float64 else "-3.4028234663852886e38f"
        return f"{head} {{ return x < {lowest} ? -x : {rnd}({sqrt}(x) + {zero}); }}\n"
    if y == 2.0:
        return f"{head} {{ return {rnd}(x * x); }}\n"
    if t is not np.float64:
        return f"{head} {{ return {rnd}((float)((double)x * (double)x * (double)x)); }}\n"
    return (f"{head} {{\n"
            f"  double h = x * x, p = h * x;\n"
            f"  if (p == 0.0 || !(p - p == 0.0)) return p;  /* zero, inf, nan */\n"
            f"  double l = fma(x, x, -h), e = fma(h, x, -p);\n"
            f"  return p + (e + l * x);\n}}\n")


def float_abs_helper(fq: str) -> str:
    """Source of ``gp_fabs_f32``, the f32 (and f16, computed in float) absolute value as a
    clear of the sign bit through a union, not ``fabsf``.

    ptxas (NVRTC 13.0 and 13.5, sm_90) folds an ordered comparison of ``fabsf(x)`` with a
    constant at or below zero to true, NaN included: ``fabsf(x) >= -0.0f`` and
    ``-fabsf(x) <= 0.0f`` were true for a NaN (fuzz 777001/7921), even with the absolute
    value held in a variable. The sign-bit clear is one integer ``LOP3`` the compiler does
    not turn back into ``fabsf``; an f64 ``fabs`` is compared correctly and stays."""
    name = helper_name("fabs", np.float32)
    return (f"{fq} float {name}(float x) {{ union {{ float f; gp_u32 u; }} v; v.f = x; "
            f"v.u &= 0x7fffffffu; return v.f; }}\n")


def float_helper(op: str, t: IRType, fq: str, math_name: dict[str, str], round_half: str) -> str:
    """Source of float helper ``op`` (floordiv, mod, min, max) for f16/f32/f64.

    ``math_name`` maps ``fmod/floor/copysign`` to the type's C functions;
    ``round_half`` is the f16 rounding function applied to f16 results.
    """
    c, name = reg_type(t), helper_name(op, t)
    head = f"{fq} {c} {name}({c} a, {c} b)"
    if op in ("min", "max"):
        cmp = "<" if op == "min" else ">"
        return f"{head} {{ return (b {cmp} a) ? b : a; }}\n"
    fmod, floor, copysign = math_name["fmod"], math_name["floor"], math_name["copysign"]
    rnd = round_half if t is np.float16 else ""
    one, half, zero = ("1.0", "0.5", "0.0") if t is np.float64 else ("1.0f", "0.5f", "0.0f")
    divmod_core = (
        f"  {c} mod = {fmod}(a, b);\n"
        f"  {c} div = (a - mod) / b;\n"
        f"  if (mod != {zero}) {{ if ((b < {zero}) != (mod < {zero})) "
        f"{{ mod += b; div -= {one}; }} }}\n"
        f"  else {{ mod = {copysign}({zero}, b); }}\n"
    )
    if op == "mod":
        return (f"{head} {{\n  if (b == {zero}) return {rnd}({fmod}(a, b));\n"
                f"{divmod_core}  return {rnd}(mod);\n}}\n")
    if op == "floordiv":
        return (f"{head} {{\n  if (b == {zero}) return {rnd}(a / b);\n{divmod_core}"
                f"  {c} fd;\n"
                f"  if (div != {zero}) {{ fd = {floor}(div); "
                f"if (div - fd > {half}) fd += {one}; }}\n"
                f"  else {{ fd = {copysign}({zero}, a / b); }}\n"
                f"  return {rnd}(fd);\n}}\n")
    raise KeyError(op)

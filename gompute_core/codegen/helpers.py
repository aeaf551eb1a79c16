"""Generated helper functions for operations C does not define the way the IR does.

Each helper is emitted once per type a kernel needs, as a forced-inline device
function, so that operands are evaluated once and no C undefined behaviour is
reached: integer wrap goes through unsigned arithmetic; floor division and
modulo follow Python (division by zero gives 0, ``i_min // -1`` wraps); shifts
outside ``[0, width)`` give 0 or -1 as NumPy; float floor division and modulo
follow NumPy's ``npy_divmod``; ``min``/``max`` follow Python's builtins.
"""

from __future__ import annotations

import numpy as np

from ..ir.nodes import IRType
from ..types import bits, is_signed, short_name
from .ctypes_ import reg_type, wide_unsigned


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
                f"  if (b == -1) return ({c})(({u})0 - ({u})a);\n"
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
                f"({c})(({u})a << ({u})b); }}\n")
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
                f"  return ({c})r;\n}}\n")
    if op == "min":
        return f"{head} {{ return (b < a) ? b : a; }}\n"
    if op == "max":
        return f"{head} {{ return (b > a) ? b : a; }}\n"
    if op == "abs":
        body = f"a < 0 ? ({c})(({u})0 - ({u})a) : a" if signed else "a"
        return f"{fq} {c} {name}({c} a) {{ return {body}; }}\n"
    raise KeyError(op)


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

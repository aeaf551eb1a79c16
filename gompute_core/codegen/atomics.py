"""Atomics of raw kernels: the C-family dialect tables and the compare-and-swap loops.

A dialect spells an atomic natively where its language has one with the IR's
semantics (:data:`CUDA_ATOMICS`: ``atomicAdd`` on ``int``, ``unsigned``,
``unsigned long long``, ``float`` and ``double``...). Every other combination
(float ``min``/``max``/``sub``/``exch``/``cas``, ``f64`` ``min``/``max``, whatever a
dialect lacks) becomes a helper emitted once per kernel: a loop of the
dialect's compare-and-swap on the element's bit pattern (:func:`cas_loop_helper`).

Semantics (:class:`gompute_core.ir.nodes.Atomic`): the expression's value is the
element's old value; integer ``add``/``sub`` wrap; ``min``/``max`` store ``v``
only if it is less (greater) than the element, so a NaN ``v`` never replaces
it; ``cas`` compares bit patterns (floats included).

Table entries are format strings over ``{p}`` (the element's address, a pointer
to its C type in its address space), ``{v}`` (the value), ``{c}`` (the compare
value of ``cas``) and ``{space}`` (the address space qualifier with its trailing
blank, empty in CUDA and HIP); the writer casts the result to the element's
register type.
"""

from __future__ import annotations

from ..ir.nodes import AtomicOp, IRType
from ..types import bits, is_int, short_name
from .ctypes_ import reg_type

_ULL = "(gp_u64*){p}"
CUDA_ATOMICS: dict[tuple[str, str], str] = {
    **{("add", t): "atomicAdd({p}, {v})" for t in ("i32", "u32", "u64", "f32", "f64")},
    ("add", "i64"): f"atomicAdd({_ULL}, (gp_u64)({{v}}))",
    **{("sub", t): "atomicSub({p}, {v})" for t in ("i32", "u32")},
    ("sub", "i64"): f"atomicAdd({_ULL}, (gp_u64)0 - (gp_u64)({{v}}))",
    ("sub", "u64"): "atomicAdd({p}, (gp_u64)0 - ({v}))",
    **{(op, t): f"atomic{op.capitalize()}({{p}}, {{v}})"
       for op in ("min", "max") for t in ("i32", "u32", "i64", "u64")},
    **{("exch", t): "atomicExch({p}, {v})" for t in ("i32", "u32", "u64", "f32")},
    ("exch", "i64"): f"atomicExch({_ULL}, (gp_u64)({{v}}))",
    **{("cas", t): "atomicCAS({p}, {c}, {v})" for t in ("i32", "u32", "u64")},
    ("cas", "i64"): f"atomicCAS({_ULL}, (gp_u64)({{c}}), (gp_u64)({{v}}))",
}
"""CUDA's (and HIP's) native atomics by (op, element type): ``int``, ``unsigned`` and
``unsigned long long`` overloads (``i64`` through a cast to ``unsigned long long*``
where wrapping makes it the same operation, signed 64-bit ``min``/``max`` through the
``long long`` overloads), ``float`` and ``double`` add. ``gp_i32``... are the exact
C types of those overloads."""

CUDA_CAS: dict[int, str] = {32: "atomicCAS({p}, {c}, {v})", 64: "atomicCAS({p}, {c}, {v})"}
"""The compare-and-swap on 32- and 64-bit patterns the loops are built on (``{p}`` is a
``gp_u32*``/``gp_u64*`` in its address space; ``{c}``, ``{v}`` and the result are
``gp_u32``/``gp_u64``)."""

CUDA_FLOAT_BITS: dict[str, tuple[str, str]] = {
    "f32": ("__float_as_uint({})", "__uint_as_float({})"),
    "f64": ("(gp_u64)__double_as_longlong({})", "__longlong_as_double((gp_i64)({}))"),
}
"""Per float type: (the value's bit pattern as ``gp_uN``, the float of a bit pattern)."""


def helper_suffix(space: str) -> str:
    """The part of a helper's name telling its address space (``_global``; empty where
    pointers are generic)."""
    word = space.strip().lstrip("_")
    return f"_{word}" if word else ""


def _new_value(op: AtomicOp, t: IRType, u: str) -> tuple[str, str]:
    """(statements computing the new value from the loop's current element ``cur`` and
    leaving the loop when nothing is to be stored, the new value) for operand ``v``."""
    if op == "exch":
        return "", "v"
    cur = "    const {c} cur = {from_bits};\n"
    if op in ("min", "max"):
        cmp = "<" if op == "min" else ">"
        return cur + f"    if (!(v {cmp} cur)) break;\n", "v"
    sign = "+" if op == "add" else "-"
    if is_int(t):  # type: ignore[arg-type]
        return cur, f"({reg_type(t)})(({u})cur {sign} ({u})v)"
    return cur, f"cur {sign} v"


def cas_loop_helper(op: AtomicOp, t: IRType, space: str, qualifier: str, cas: dict[int, str],
                    float_bits: dict[str, tuple[str, str]]) -> tuple[str, str]:
    """(name, source) of the helper doing atomic ``op`` on element type ``t`` in address
    space ``space`` through compare-and-swap on its bit pattern: ``cas`` and
    ``float_bits`` are the dialect's tables (:data:`CUDA_CAS`, :data:`CUDA_FLOAT_BITS`),
    ``qualifier`` its device-function qualifier. The old value is returned; ``min`` and
    ``max`` leave without storing when ``v`` does not replace the element (a NaN never
    does); ``cas`` is one compare-and-swap of the bit patterns."""
    c, n = reg_type(t), bits(t)
    u = f"gp_u{n}"
    name = f"gp_atomic_{op}_{short_name(t)}{helper_suffix(space)}"
    if is_int(t):  # type: ignore[arg-type]
        to_bits, from_bits = f"({u})({{}})", f"({c})({{}})"
    else:
        to_bits, from_bits = float_bits[short_name(t)]
    ptr = f"({space}{u}*)p"
    if op == "cas":
        call = cas[n].format(p=ptr, c=to_bits.format("cmp"), v=to_bits.format("v"), space=space)
        return name, (f"{qualifier} {c} {name}({space}{c}* p, {c} cmp, {c} v) {{\n"
                      f"  return {from_bits.format(call)};\n}}\n")
    compute, new = _new_value(op, t, u)
    call = cas[n].format(p="q", c="assumed", v=to_bits.format(new), space=space)
    return name, (f"{qualifier} {c} {name}({space}{c}* p, {c} v) {{\n"
                  f"  {space}{u}* q = {ptr};\n"
                  f"  {u} old = *(volatile {space}{u}*)q, assumed;\n"
                  f"  do {{\n"
                  f"    assumed = old;\n"
                  + compute.format(c=c, from_bits=from_bits.format("assumed")) +
                  f"    old = {call};\n"
                  f"  }} while (old != assumed);\n"
                  f"  return {from_bits.format('old')};\n}}\n")

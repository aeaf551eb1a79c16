"""Values whose type depends on a run-time condition: ``a if c else b``, ``min``, ``max``.

Python returns the chosen operand *unchanged*: ``b if a > 0 else 0.5`` is a ``u64`` on one
path and a Python float on the other, and everything computed from it follows that
operand's own type. A :class:`Choice` keeps both alternatives with their own types; every
operation applied to it is applied to each alternative separately (the operations are
pure, and only the chosen side is evaluated at run time), so the kernel computes exactly
what Python computes on each path. Where one value of one type is needed, the choice is
*settled*:

* converted to a declared type (the kernel's return value, an explicit cast
  ``g.f32(...)``, ``int(...)``, a condition): each alternative is converted on its own,
  exactly as the oracle converts whichever object Python returned;
* anywhere else (stored in a local, an array index, ``range`` bounds, the return of a
  helper whose type is inferred): the alternatives must already have one type (the
  local's), except weak constants that this type represents exactly (``x if x > 0 else 0``
  with an f32 ``x``), as NumPy 2 accepts a Python literal beside a strong value only when
  it fits. From there on the value has that type, as a local assigned in two branches.

Otherwise it is a TypingError naming the types and suggesting an explicit cast.
Alternatives of one type (weakness included) merge into an IR ``Select`` at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np

from ..ir.nodes import Expr, Select
from ..types import is_float, is_int
from .values import Ty, TypingError, Value, coerce, is_scalar, join

MAX_ALTERNATIVES = 16
"""Most alternatives of different types one expression may carry before it is settled."""


@dataclass(frozen=True)
class Choice:
    """``a if cond else b`` where ``a`` and ``b`` differ in type (or are distinct weak
    constants, kept apart so that arithmetic on them still folds as Python's)."""

    cond: Expr
    a: Operand
    b: Operand
    text: str

    def leaves(self) -> list[Value]:
        """Every alternative, left to right."""
        out: list[Value] = []
        for side in (self.a, self.b):
            out.extend(side.leaves() if isinstance(side, Choice) else [side])
        return out


Operand: TypeAlias = Value | Choice


def same_constant(x: Any, y: Any) -> bool:
    """Whether two folded constants are one value: same type and ``==``, and for floats the
    same sign (``-0.0 == 0.0``, but ``1 // -0.0`` is ``-inf``: fuzz seed 4096001, case
    2576, took ``max(K, -0.0)`` for ``-0.0``)."""
    if type(x) is not type(y) or x != y:
        return False
    return not isinstance(x, float) or math.copysign(1.0, x) == math.copysign(1.0, y)


def choose(cond: Expr, a: Operand, b: Operand, text: str) -> Operand:
    """``a if cond else b``: a Select when both are run-time values of one type (weakness
    included), else a Choice (a TypingError beyond MAX_ALTERNATIVES alternatives that do
    not merge)."""
    if isinstance(a, Value) and isinstance(b, Value):
        if not (is_scalar(a.type) and is_scalar(b.type)):
            raise TypingError(f"'{text}' must give numbers, not {a.ty.describe()} and "
                              f"{b.ty.describe()}")
        if a.is_weak_const and b.is_weak_const and a.weak == b.weak and \
                same_constant(a.py, b.py):
            return a
        if a.ty == b.ty and not a.is_weak_const and not b.is_weak_const:
            return Value(Select(cond, a.expr, b.expr, a.type), a.weak)  # type: ignore[arg-type]
    c = Choice(cond, a, b, text)
    if len(c.leaves()) > MAX_ALTERNATIVES:
        return settle(c)
    return c


def distribute(fn: Callable[..., Operand], *operands: Operand) -> Operand:
    """``fn(*operands)`` applied to each combination of alternatives."""
    for k, op in enumerate(operands):
        if isinstance(op, Choice):
            a = distribute(fn, *operands[:k], op.a, *operands[k + 1:])
            b = distribute(fn, *operands[:k], op.b, *operands[k + 1:])
            return choose(op.cond, a, b, op.text)
    return fn(*operands)


def _merge(c: Choice, convert: Callable[[Value], Value]) -> Value:
    def side(s: Operand) -> Value:
        return _merge(s, convert) if isinstance(s, Choice) else convert(s)

    a, b = side(c.a), side(c.b)
    return Value(Select(c.cond, a.expr, b.expr, a.type), a.weak)  # type: ignore[arg-type]


def _describe(c: Choice) -> str:
    kinds = sorted({v.ty.describe() for v in c.leaves()})
    return ", ".join(kinds)


def settle(v: Operand) -> Value:
    """One value of one type: alternatives of one type, or weak constants that the strong
    type of the others represents exactly (see :func:`settle_store`)."""
    return settle_store(v, None)


def settle_to(v: Operand, to: Ty) -> Value:
    """``v`` converted to ``to``, each alternative on its own (exact). When ``to`` is a
    float type, an alternative is not a constant (constants convert as they are) and the
    alternatives settle to one type (:func:`settle`), they are chosen
    in that type and converted once: the same values (a weak constant that type represents
    exactly is the same number, and converts to the same float), and no select of
    converted arms, which LLVM-based compilers miscompile when an arm is the compared value
    (``min(x, -0.0)`` of an f32 ``x`` returned as f64: ``-0.0f < x ? -0.0 : (double)x``
    gave -0.0 for ``x = +0.0`` on PoCL; see :mod:`gompute_core.codegen.select_once` for the
    other half of that bug). Not for an integer ``to``: ``-101`` converts to ``u32`` by
    wrapping, but the same number as an f64 is out of the ``u32`` range."""
    if isinstance(v, Value):
        return coerce(v, to)
    if to.weak is None and is_float(to.type) and not all(x.is_weak_const for x in v.leaves()):
        try:
            return coerce(settle(v), to)
        except TypingError:
            pass
    return _merge(v, lambda x: coerce(x, to))


def settle_store(v: Operand, local: Ty | None) -> Value:
    """One value of the joined type of the alternatives (and of ``local``, the type of the
    local it is stored in, when known): each alternative must already have that type (weak
    ones its weak kind), or be a weak constant that the strong type represents exactly, as
    NumPy 2 itself accepts a Python literal beside a strong value only when it fits."""
    if isinstance(v, Value):
        return v
    leaves = v.leaves()
    ty = local or leaves[0].ty
    for x in leaves:
        ty = join(ty, x.ty)
    target = ty
    for x in leaves:
        if not stands_for(x, target):
            raise TypingError(
                f"the alternatives of '{v.text}' have different types ({_describe(v)}); "
                f"using it as one {target.describe()} value would change what Python "
                f"computes on one path: convert them to one type explicitly (e.g. "
                f"{cast_spelling(target)}(...) around each)")
    return _merge(v, lambda x: coerce(x, target))


def stands_for(x: Value, target: Ty) -> bool:
    """True if ``x`` used as a ``target`` value computes what Python computes with ``x``
    itself: it has that type (a weak value: that weak kind), or it is a weak constant that
    the strong ``target`` represents exactly."""
    return (x.ty == target or (x.weak is not None and x.weak == target.weak)
            or (x.is_weak_const and target.weak is None and _exact(x.py, target)))


def cast_spelling(target: Ty) -> str:
    """The explicit conversion to suggest for ``target`` (``g.f32``, ``np.bool_``)."""
    if target.weak is not None:
        return "g.f64"
    return "np.bool_" if target.type is np.bool_ else "g." + target.describe()


def _exact(py: int | float | bool | None, ty: Ty) -> bool:
    """True if the strong type represents the Python number ``py`` exactly."""
    t = ty.type
    if py is None or not is_scalar(t):
        return False
    if t is np.bool_:
        return py in (0, 1)
    if is_int(t):
        info = np.iinfo(t)  # type: ignore[type-var]
        return float(py).is_integer() and int(info.min) <= py <= int(info.max)
    if is_float(t):
        if isinstance(py, float) and math.isnan(py):
            return True
        with np.errstate(over="ignore"):
            return float(t(py)) == py  # type: ignore[operator]
    return False

"""Values during lowering: an IR expression plus its NEP 50 weakness, and promotion.

A *weak* value is what Python itself would hold as a plain ``bool``, ``int`` or
``float`` (literals, captured Python numbers, ``range`` loop variables, locals
only ever assigned weak values). It is represented by ``bool``/``i64``/``f64``
in the IR but adopts the type of any strong (NumPy-typed) operand, exactly as
NumPy 2 treats Python scalars. Weak constants keep their Python value in
``Value.py`` so arithmetic between them folds as Python computes it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..ir.nodes import (
    ArrayType,
    Cast,
    Const,
    Expr,
    IRType,
    LocalType,
    PointerType,
    SharedType,
    StructType,
    TupleType,
)
from ..types import (
    FLOAT_TYPES,
    INT_TYPES,
    ScalarType,
    f64,
    i64,
    is_float,
    is_int,
    promote,
    promote_weak,
    short_name,
)

WeakKind = Literal["bool", "int", "float"]
WEAK_ORDER: dict[str, int] = {"bool": 0, "int": 1, "float": 2}
WEAK_REPR: dict[str, ScalarType] = {"bool": np.bool_, "int": i64, "float": f64}
_SAMPLE: dict[str, int | float | bool] = {"bool": True, "int": 1, "float": 1.0}


class TypingError(Exception):
    """A typing rule was violated; the caller adds file:line and raises KernelSyntaxError."""


@dataclass(frozen=True)
class Ty:
    """A lowering-time type: an IR type, and the weak kind when it is a Python number."""

    type: IRType
    weak: WeakKind | None = None

    def describe(self) -> str:
        """``"f32"``, ``"Python int"``, ``"params record Scale"``."""
        return describe_type(self.type, self.weak)


@dataclass(frozen=True)
class Value:
    """A lowered expression; ``py`` holds the Python value of a weak constant."""

    expr: Expr
    weak: WeakKind | None = None
    py: int | float | bool | None = None

    def __post_init__(self) -> None:
        if self.weak is not None and isinstance(self.expr, Const) and self.py is None:
            raise RuntimeError(f"internal error: weak constant {self.expr!r} without its "
                               "Python value")

    @property
    def type(self) -> IRType:
        """The IR type of the expression."""
        return self.expr.type

    @property
    def ty(self) -> Ty:
        """Type plus weakness."""
        return Ty(self.expr.type, self.weak)

    @property
    def is_weak_const(self) -> bool:
        """True for a weak constant (its Python value is in ``py``)."""
        return self.weak is not None and isinstance(self.expr, Const)


def describe_type(t: IRType, weak: str | None = None) -> str:
    """A human name of a type for messages."""
    if weak is not None:
        return f"Python {weak}"
    if isinstance(t, StructType):
        return f"params record {t.name}"
    if isinstance(t, ArrayType):
        return f"params array of {t.length} {describe_type(t.elem)}"
    if isinstance(t, PointerType):
        return f"GlobalPtr[{short_name(t.elem)}]"
    if isinstance(t, SharedType):
        return f"shared array {short_name(t.elem)}{list(t.shape)}"
    if isinstance(t, LocalType):
        return f"local array {short_name(t.elem)}{list(t.shape)}"
    if isinstance(t, TupleType):
        return "tuple (" + ", ".join(describe_type(e, w) for e, w in zip(t.elems, t.weak,
                                                                          strict=True)) + ")"
    return short_name(t)


def is_scalar(t: IRType) -> bool:
    """True for scalar (number or bool) types."""
    return not isinstance(t, (StructType, ArrayType, PointerType, SharedType, LocalType,
                              TupleType))


def tuple_items(t: TupleType) -> list[Ty]:
    """The type (with weakness) of each item of a tuple type."""
    return [Ty(e, w) for e, w in zip(t.elems, t.weak, strict=True)]  # type: ignore[arg-type]


def tuple_of(items: list[Ty]) -> TupleType:
    """The tuple type of items typed ``items``."""
    return TupleType(tuple(i.type for i in items), tuple(i.weak for i in items))  # type: ignore[misc]


def weak_kind_of(v: int | float | bool) -> WeakKind:
    """The weak kind of a Python number."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    return "float"


def int_range(t: ScalarType) -> tuple[int, int]:
    """Inclusive value range of an integer type."""
    info = np.iinfo(t)
    return int(info.min), int(info.max)


def const_of(value: int | float | bool, t: ScalarType) -> Const:
    """A Const of type ``t`` holding ``value`` converted as NumPy would.

    Raises TypingError for a Python int outside ``t``'s range (NumPy 2 raises
    OverflowError there) and for NaN/inf converted to an integer.
    """
    if t is np.bool_:
        return Const(bool(value), np.bool_)
    if is_int(t):
        if isinstance(value, float):
            if not math.isfinite(value):
                raise TypingError(f"cannot convert {value} to {short_name(t)}")
            value = int(value)
        iv = int(value)
        lo, hi = int_range(t)
        if not lo <= iv <= hi:
            raise TypingError(f"Python integer {iv} out of bounds for {short_name(t)}")
        return Const(iv, t)
    with np.errstate(over="ignore"):
        return Const(float(t(value)), t)


def weak_const(value: int | float | bool) -> Value:
    """A weak constant for a Python number (ints beyond 64 bits are rejected)."""
    kind = weak_kind_of(value)
    if kind == "int" and not -(2**63) <= int(value) < 2**64:
        raise TypingError(f"integer constant {value} does not fit in 64 bits")
    if kind == "int" and int(value) > 2**63 - 1:
        # only usable where a u64 adopts it; the i64 representation is never emitted as is
        return Value(Const(int(value), np.uint64), "int", int(value))
    if kind == "int":
        value = int(value)
    elif kind == "float":
        value = float(value)
    return Value(Const(value, WEAK_REPR[kind]), kind, value)


def fold_conversion(fn: type, value: int | float | bool) -> Value:
    """``int(c)`` or ``float(c)`` of a constant's Python value: a weak constant, or a
    TypingError where Python raises (``int(nan)``, ``int(inf)``)."""
    try:
        return weak_const(fn(value))
    except (ValueError, OverflowError) as exc:
        raise TypingError(f"{fn.__name__}({value!r}) raises in Python: {exc}") from None


def strong_const(value: np.generic) -> Value:
    """A strong constant from a NumPy scalar."""
    t = type(value)
    if t is np.bool_:
        return Value(Const(bool(value), np.bool_))
    if t in INT_TYPES:
        return Value(Const(int(value), t))
    if t in FLOAT_TYPES:
        return Value(Const(float(value), t))
    raise TypingError(f"NumPy scalar type {t.__name__} is not a kernel type")


def join(a: Ty, b: Ty) -> Ty:
    """The common type of two values (NumPy 2 promotion with NEP 50 weak scalars); of two
    tuples of one length, item by item."""
    if isinstance(a.type, TupleType) and isinstance(b.type, TupleType) and \
            len(a.type.elems) == len(b.type.elems):
        return Ty(tuple_of([join(x, y) for x, y in zip(tuple_items(a.type),
                                                      tuple_items(b.type), strict=True)]))
    if not (is_scalar(a.type) and is_scalar(b.type)):
        if a == b:
            return a
        raise TypingError(f"cannot combine {a.describe()} with {b.describe()}")
    if a.weak is not None and b.weak is not None:
        kind = a.weak if WEAK_ORDER[a.weak] >= WEAK_ORDER[b.weak] else b.weak
        return Ty(WEAK_REPR[kind], kind)
    if a.weak is not None:
        return Ty(promote_weak(b.type, _SAMPLE[a.weak]))
    if b.weak is not None:
        return Ty(promote_weak(a.type, _SAMPLE[b.weak]))
    return Ty(promote(a.type, b.type))


def coerce(v: Value, to: Ty) -> Value:
    """Convert ``v`` to ``to`` (a weak target keeps the value weak)."""
    if not is_scalar(to.type) or not is_scalar(v.type):
        if v.type == to.type:
            return v
        raise TypingError(f"expected {to.describe()}, got {v.ty.describe()}")
    if to.weak is not None and v.weak is not None:
        if WEAK_ORDER[v.weak] > WEAK_ORDER[to.weak]:
            raise TypingError(f"cannot use a {v.ty.describe()} as a {to.describe()}")
        if v.is_weak_const:
            py = v.py
            if to.weak == "int":
                py = int(py)  # type: ignore[arg-type]
            elif to.weak == "float":
                py = float(py)  # type: ignore[arg-type]
            return Value(const_of(py, to.type), to.weak, py)  # type: ignore[arg-type]
        return Value(cast_expr(v.expr, to.type), to.weak)
    if v.is_weak_const:
        return Value(const_of(v.py, to.type), to.weak)  # type: ignore[arg-type]
    return Value(cast_expr(v.expr, to.type), to.weak)


def cast_expr(e: Expr, t: ScalarType) -> Expr:
    """``e`` converted to ``t`` (no node when it already has that type)."""
    if e.type is t:
        return e
    if isinstance(e, Const) and e.type is not np.bool_ and t is not np.bool_ and (
        is_float(t) or is_int(e.type)
    ):
        # exact NumPy conversion of a strong constant (int->int wraps, int/float->float rounds)
        with np.errstate(over="ignore"):
            src = np.array(e.value, dtype=e.type)
            out = src.astype(t)[()]
        return Const(float(out) if is_float(t) else int(out), t)
    return Cast(e, t)


def materialize(v: Value) -> Value:
    """A weak value made strong in its representation type (i64, f64, bool)."""
    if v.weak is None:
        return v
    return coerce(v, Ty(WEAK_REPR[v.weak]))

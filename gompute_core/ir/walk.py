"""Small queries over IR expressions and statements shared by checked mode's rewriting
(:mod:`.checked`) and its race analysis (:mod:`.private`)."""

from __future__ import annotations

from typing import get_args

from . import nodes as ir

EXPRS: tuple[type, ...] = get_args(ir.Expr)
"""The expression node classes."""

READS = (ir.Load, ir.LocalLoad, ir.Index)
"""The expression nodes that read memory."""


def exprs_of(obj: object) -> tuple[ir.Expr, ...]:
    """``obj`` (a node's field: an expression, a tuple of them, or anything else) as the
    expressions it holds."""
    if isinstance(obj, tuple):
        return tuple(x for x in obj if isinstance(x, EXPRS))
    return (obj,) if isinstance(obj, EXPRS) else ()  # type: ignore[return-value]


def children(e: ir.Expr) -> list[ir.Expr]:
    """The direct sub-expressions of ``e``."""
    return [c for name in e.__dataclass_fields__ for c in exprs_of(getattr(e, name))]


def effects(e: ir.Expr) -> int:
    """The atomics and function calls in ``e`` (what a kernel's expression may change)."""
    own = isinstance(e, (ir.Atomic, ir.CallFunction))
    return int(own) + sum(effects(c) for c in children(e))


def reorderable(s: ir.Stmt) -> bool:
    """True when a pure part of ``s``'s own expressions (not its body's) may be evaluated
    before the rest of them: they have no effect, or one, an atomic that is the whole
    value of an assignment or evaluation (its operands are all evaluated before it)."""
    own = ("start", "stop", "step") if isinstance(s, ir.ForRange) else \
        () if isinstance(s, ir.While) else ("index", "value", "cond")
    count = sum(effects(x) for name in own for x in exprs_of(getattr(s, name, None)))
    return count == 0 or (count == 1 and isinstance(s, (ir.Assign, ir.Evaluate))
                          and isinstance(s.value, ir.Atomic))


_TYPES = (ir.PointerType, ir.SharedType, ir.StructType, ir.ArrayType)
"""Types are dataclasses too; they hold no nodes."""


def holds(obj: object, cls: type | tuple[type, ...]) -> bool:
    """True when an IR node of class ``cls`` (or one of them) is in ``obj`` (a node or a
    tuple of them)."""
    if isinstance(obj, cls):
        return True
    if isinstance(obj, tuple):
        return any(holds(o, cls) for o in obj)
    if hasattr(obj, "__dataclass_fields__") and not isinstance(obj, _TYPES):
        return any(holds(getattr(obj, f), cls) for f in obj.__dataclass_fields__)
    return False

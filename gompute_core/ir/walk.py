"""Small queries over IR expressions and statements shared by checked mode's rewriting
(:mod:`.checked`), its race analysis (:mod:`.private`) and the work-group transforms
(:mod:`gompute_core.workgroup`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields
from typing import get_args

from . import nodes as ir

__all__ = [
    "EXPRS", "READS", "assigned_in", "children", "effects", "exprs_of", "holds", "names_in",
    "nodes_in", "reorderable",
]

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


def holds(obj: object, *classes: type | tuple[type, ...]) -> bool:
    """True when an IR node of one of ``classes`` is in ``obj`` (a node or a tuple of
    them)."""
    if isinstance(obj, classes):
        return True
    if isinstance(obj, tuple):
        return any(holds(o, *classes) for o in obj)
    if hasattr(obj, "__dataclass_fields__") and not isinstance(obj, _TYPES):
        return any(holds(getattr(obj, f), *classes) for f in obj.__dataclass_fields__)
    return False


def nodes_in(obj: object) -> Iterator[object]:
    """``obj`` and every IR node below it (expressions and statements, depth first)."""
    yield obj
    if isinstance(obj, tuple):
        for item in obj:
            yield from nodes_in(item)
    elif hasattr(obj, "__dataclass_fields__") and not isinstance(obj, _TYPES):
        for f in fields(obj):  # type: ignore[arg-type]
            child = getattr(obj, f.name)
            if isinstance(child, tuple) or hasattr(child, "__dataclass_fields__"):
                yield from nodes_in(child)


def names_in(obj: object) -> set[str]:
    """Every variable read or assigned in ``obj`` (an IR node or a tuple of them)."""
    return assigned_in(obj) | {node.name for node in nodes_in(obj) if isinstance(node, ir.Var)}


def assigned_in(obj: object) -> set[str]:
    """Every variable assigned in ``obj`` (assignments and ``for`` variables)."""
    out: set[str] = set()
    for node in nodes_in(obj):
        if isinstance(node, ir.Assign):
            out.add(node.name)
        elif isinstance(node, ir.ForRange):
            out.add(node.var)
    return out

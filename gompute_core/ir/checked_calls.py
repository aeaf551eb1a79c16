"""Checked mode across calls: a helper function's array accesses checked too.

A helper (any function of a kernel but its entry: a raw kernel's helper, a spec's element
function and what it calls) cannot write memory, so it cannot write the fault record.
Instead, an instrumented helper returns its first fault with its value: its return type
becomes a :class:`~gompute_core.ir.nodes.TupleType` of its own items followed by
:data:`FAULT_ITEMS` ``u64`` items (the fault's code, then the index, the extent and the
dimension, as words 0, 1, 2 and 9 of the record), kept in four locals that start at 0.
Its caller, at each call, takes the value items back and passes a fault on: the entry
into the record (:meth:`_Instrumenter.record_stmt`), another helper into its own locals.

Everything stays in IR nodes every renderer already runs (tuples, locals, ``If``,
``While``, ``Break``). Because a helper has no record to write from inside an expression,
its expressions whose evaluation is conditional (a conditional expression's arms, the
right operand of ``and``/``or``, a loop condition) are rewritten as statements when they
hold a checked access (:meth:`HelperFaults.linearize`, :meth:`HelperFaults.while_loop`);
helpers are pure, so evaluating a condition earlier changes nothing. Only helpers that
hold a checked access (or call one that does) are rewritten; the others, and every call
of them, stay as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from . import nodes as ir

if TYPE_CHECKING:
    from .checked import _Instrumenter

FAULT_ITEMS = 4
"""The ``u64`` items an instrumented helper returns after its own: code, index, extent,
dimension."""
_WORDS = (0, 1, 2, 9)
"""The record words those items are."""

u64 = np.uint64


def _zero64() -> ir.Const:
    return ir.Const(0, u64)  # type: ignore[arg-type]


def _nonzero(e: ir.Expr) -> ir.Expr:
    return ir.Compare("ne", e, _zero64(), np.bool_)  # type: ignore[arg-type]


def returns(fn: ir.Function) -> ir.TupleType:
    """The return type of ``fn`` instrumented: its items, then the fault's."""
    ret = fn.ret
    items, weak = ((ret.elems, ret.weak) if isinstance(ret, ir.TupleType)
                   else ((ret,), (None,)))  # type: ignore[assignment]
    return ir.TupleType((*items, *(u64,) * FAULT_ITEMS),  # type: ignore[arg-type]
                        (*weak, *(None,) * FAULT_ITEMS))


def holds_check(obj: object, calls: dict[str, ir.TupleType]) -> bool:
    """True when ``obj`` (a node, or a tuple of them) holds an access checked mode checks
    in a helper (a params array's ``Index``, a local array's load or store) or a call of
    an instrumented helper (``calls``)."""
    if isinstance(obj, (ir.Index, ir.LocalLoad, ir.LocalStore)):
        return True
    if isinstance(obj, ir.CallFunction) and obj.func in calls:
        return True
    if isinstance(obj, tuple):
        return any(holds_check(o, calls) for o in obj)
    if hasattr(obj, "__dataclass_fields__") and not isinstance(
            obj, (ir.PointerType, ir.SharedType, ir.StructType, ir.ArrayType, ir.LocalType,
                  ir.TupleType)):
        return any(holds_check(getattr(obj, f), calls) for f in obj.__dataclass_fields__)
    return False


class HelperFaults:
    """The first fault of one call of an instrumented helper: four ``u64`` locals."""

    def __init__(self, prefix: str, calls: dict[str, ir.TupleType]) -> None:
        self.calls = calls
        self.vars = tuple(ir.Var(f"{prefix}f{w}", u64) for w in _WORDS)  # type: ignore[arg-type]

    def checks(self, e: ir.Expr) -> bool:
        """True when ``e`` holds a checked access or a call of an instrumented helper."""
        return holds_check(e, self.calls)

    def locals(self) -> list[tuple[str, ir.IRType]]:
        """The fault's locals (declared by the instrumented helper)."""
        return [(v.name, v.type) for v in self.vars]

    def prologue(self) -> list[ir.Stmt]:
        """No fault yet."""
        return [ir.Assign(v.name, _zero64()) for v in self.vars]

    def keep(self, code: int | ir.Expr, words: dict[int, ir.Expr]) -> ir.Stmt:
        """Keep a fault (``code`` and record ``words``) unless the call already has one."""
        value = ir.Const(code, u64) if isinstance(code, int) else code  # type: ignore[arg-type]
        got = {0: value, **words}
        first = ir.Compare("eq", self.vars[0], _zero64(), np.bool_)  # type: ignore[arg-type]
        return ir.If(first, tuple(ir.Assign(v.name, got.get(w, _zero64()))
                                  for v, w in zip(self.vars, _WORDS, strict=True)), ())

    def returned(self, ins: _Instrumenter, value: ir.Expr, hoist: list[ir.Stmt]
                 ) -> list[ir.Stmt]:
        """``return value`` of the instrumented helper: the value's items and the fault."""
        ret = ins.fn.ret
        if isinstance(ret, ir.TupleType):
            whole = value
            if not isinstance(value, ir.Var):
                whole = ins.temp(ret)
                hoist.append(ir.Assign(whole.name, value))
            items: list[ir.Expr] = [ir.TupleItem(whole, k, t)  # type: ignore[arg-type]
                                    for k, t in enumerate(ret.elems)]
        else:
            items = [value]
        new = returns(ins.fn)
        return [*hoist, ir.Return(ir.MakeTuple((*items, *self.vars), new))]

    def linearize(self, ins: _Instrumenter, e: ir.Select | ir.Logical, hoist: list[ir.Stmt]
                  ) -> ir.Expr:
        """A conditional expression holding checked accesses as an ``If`` assigning a new
        local (appended to ``hoist``): each arm checked where it is evaluated."""
        if isinstance(e, ir.Select):
            t = ins.temp(e.type)
            cond = ins.expr(e.cond, hoist)
            then: list[ir.Stmt] = []
            a = ins.expr(e.if_true, then)
            other: list[ir.Stmt] = []
            b = ins.expr(e.if_false, other)
            hoist.append(ir.If(cond, (*then, ir.Assign(t.name, a)),
                               (*other, ir.Assign(t.name, b))))
            return t
        t = ins.temp(e.type)
        hoist.append(ir.Assign(t.name, ins.expr(e.lhs, hoist)))
        rhs: list[ir.Stmt] = []
        value = ins.expr(e.rhs, rhs)
        go = (*rhs, ir.Assign(t.name, value))
        hoist.append(ir.If(t, go, ()) if e.op == "and" else ir.If(t, (), go))
        return t

    def while_loop(self, ins: _Instrumenter, s: ir.While) -> ir.Stmt:
        """``while cond: body`` whose ``cond`` holds checked accesses, as ``while True``
        checking ``cond`` first (a ``continue`` comes back to it)."""
        head: list[ir.Stmt] = []
        cond = ins.expr(s.cond, head)
        stop = ir.If(cond, (), (ir.Break(),))
        return ir.While(ir.Const(True, np.bool_), (*head, stop, *ins.body(s.body)))  # type: ignore[arg-type]


def checked_call(ins: _Instrumenter, call: ir.CallFunction, value_type: ir.IRType,
                 hoist: list[ir.Stmt] | None) -> ir.Expr:
    """The value of ``call`` (an instrumented helper's, returning its items and a fault) as
    the original call's ``value_type``, the fault passed on to the caller: through a new
    local where the call's statement can run code first (``hoist``), else (in the entry's
    conditional expressions) by calling again, the helper being pure."""
    n = len(call.type.elems) - FAULT_ITEMS  # type: ignore[union-attr]
    whole: ir.Expr = call
    if hoist is not None:
        whole = ins.temp(call.type)
        hoist.append(ir.Assign(whole.name, call))  # type: ignore[union-attr]

    def item(k: int) -> ir.Expr:
        return ir.TupleItem(whole, k, call.type.elems[k])  # type: ignore[union-attr]

    words = {w: item(n + k) for k, w in enumerate(_WORDS) if w}
    if isinstance(value_type, ir.TupleType):
        value: ir.Expr = ir.MakeTuple(tuple(item(k) for k in range(n)), value_type)
    else:
        value = item(0)
    if hoist is not None:
        hoist.append(ir.If(_nonzero(item(n)), (ins.record_stmt(item(n), words),), ()))
        return value
    assert ins.helper is None  # a helper's conditional expressions are linearized
    recorded = ir.Select(ins.record(item(n), words), value, value, value_type)  # type: ignore[arg-type]
    return ir.Select(_nonzero(item(n)), recorded, value, value_type)  # type: ignore[arg-type]

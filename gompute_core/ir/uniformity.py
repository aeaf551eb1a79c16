"""Which values of a raw kernel differ between the threads of one block.

A value is *varying* when it may differ between two threads of the same block:
``local_id``/``global_id``, an atomic's old value (not one on checked mode's own records,
:data:`~gompute_core.ir.checked.CHECK_STATE`, whose value is never used), and anything
computed from a varying value or assigned under a varying condition. Everything else is
*uniform* (the same in every thread of the block: arguments, ``block_id``,
``block_dim``, ``grid_dim``, loads at uniform indices). The frontend rejects a
``barrier()`` under varying control; the CPU backend runs uniform statements
once per block and splits the thread loops at barriers (loop fission), which
needs the same answer, so both read it from here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields
from typing import get_args

from . import nodes as ir
from .checked import CHECK_STATE

_THREAD_GEOMETRY = frozenset({"local_id", "global_id"})


def is_varying(e: ir.Expr, varying: frozenset[str] | set[str]) -> bool:
    """True when expression ``e`` may differ between threads of a block."""
    if isinstance(e, ir.Var):
        return e.name in varying
    if isinstance(e, ir.Geometry):
        return e.func in _THREAD_GEOMETRY
    if isinstance(e, ir.Atomic) and not isinstance(e.base.type, CHECK_STATE):
        return True
    for f in fields(e):
        child = getattr(e, f.name)
        if isinstance(child, tuple):
            if any(is_varying(c, varying) for c in child if _is_expr(c)):
                return True
        elif _is_expr(child) and is_varying(child, varying):
            return True
    return False


def _is_expr(obj: object) -> bool:
    return isinstance(obj, _EXPR_CLASSES)


_EXPR_CLASSES: tuple[type, ...] = get_args(ir.Expr)


_LOOP_EXITS = (ir.Break, ir.Continue, ir.Return)


def jumps_under(body: Iterable[ir.Stmt], varying: frozenset[str] | set[str],
                divergent: bool = False, exits: tuple[type, ...] = _LOOP_EXITS) -> bool:
    """True when ``body`` holds a break, continue or return under varying control (inside
    nested loops only a return counts: their break/continue stay theirs): its loop's trip
    count varies."""
    for s in body:
        if isinstance(s, exits) and divergent:
            return True
        if isinstance(s, ir.If):
            d = divergent or is_varying(s.cond, varying)
            if jumps_under(s.body, varying, d, exits) or jumps_under(s.orelse, varying, d,
                                                                       exits):
                return True
        elif isinstance(s, (ir.While, ir.ForRange)) and jumps_under(s.body, varying,
                                                                       divergent, (ir.Return,)):
            return True
    return False


def varying_names(fn: ir.Function) -> frozenset[str]:
    """The locals of ``fn`` that may differ between threads of a block (a fixed point:
    a loop carries a value from one iteration into the next)."""
    varying: set[str] = set()
    while True:
        before = len(varying)
        _walk(fn.body, varying, False)
        if len(varying) == before:
            return frozenset(varying)


def _walk(body: Iterable[ir.Stmt], varying: set[str], divergent: bool) -> None:
    for s in body:
        if isinstance(s, ir.Assign):
            if divergent or is_varying(s.value, varying):
                varying.add(s.name)
        elif isinstance(s, ir.LocalStore):  # a per-thread array varies like a local
            if divergent or is_varying(s.value, varying) or any(
                    is_varying(i, varying) for i in s.index):
                varying.add(s.base.name)
        elif isinstance(s, ir.If):
            d = divergent or is_varying(s.cond, varying)
            _walk(s.body, varying, d)
            _walk(s.orelse, varying, d)
        elif isinstance(s, ir.While):
            d = divergent or is_varying(s.cond, varying) or jumps_under(s.body, varying)
            _walk(s.body, varying, d)
        elif isinstance(s, ir.ForRange):
            d = divergent or jumps_under(s.body, varying) or any(
                is_varying(x, varying) for x in (s.start, s.stop, s.step))
            if d:
                varying.add(s.var)
            _walk(s.body, varying, d)

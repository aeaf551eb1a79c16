"""A select whose arms compute its comparison's operands again, rendered so that each
operand is computed once.

``min(x, -0.0)`` of an f32 ``x`` returned as f64 lowers to ``(-0.0f < X) ? -0.0 :
(double)X`` with the expression ``X`` written twice. For ``X = (float)b * (float)b`` with
a ``u64`` ``b``, NVRTC 13 (on an H100) and PoCL's LLVM both returned -0.0 for ``b = 0``,
where the value is +0.0; the same select with ``X`` computed once into a variable was
right on both (CUDA fuzz seed 2026120501, case 3511). The C family has no expression that
binds a value, so such a select becomes a call of a small helper that takes the shared
operands (and the select's other scalar variables) as parameters: C evaluates each
argument once. Only selects built from scalar operations qualify (no loads, calls of the
kernel's functions or aggregates: those render as they are).
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace

from ..ir import nodes as ir
from ..ir.walk import EXPRS, nodes_in

SCALAR_NODES = (ir.Const, ir.Var, ir.Unary, ir.Not, ir.Binary, ir.Compare, ir.Logical,
                ir.Select, ir.Cast, ir.CallIntrinsic)
"""The nodes a helper's body may hold once the shared operands are parameters."""


def recomputed(e: ir.Select) -> list[ir.Expr]:
    """The operands of ``e``'s comparison (neither a constant nor a variable) that an arm
    computes again; structural identity by ``repr``, which tells ``-0.0`` from ``0.0``."""
    if not isinstance(e.cond, ir.Compare):
        return []
    in_arms = {repr(n) for n in nodes_in((e.if_true, e.if_false)) if isinstance(n, EXPRS)}
    out: list[ir.Expr] = []
    for x in (e.cond.lhs, e.cond.rhs):
        if not isinstance(x, (ir.Const, ir.Var)) and repr(x) in in_arms and \
                all(repr(x) != repr(y) for y in out):
            out.append(x)
    return out


def _substitute(obj: object, params: dict[str, ir.Var]) -> object:
    """``obj`` with every subexpression whose ``repr`` is a key of ``params`` replaced by
    that parameter."""
    if isinstance(obj, EXPRS) and repr(obj) in params:
        return params[repr(obj)]
    if isinstance(obj, tuple):
        return tuple(_substitute(x, params) for x in obj)
    if is_dataclass(obj) and isinstance(obj, EXPRS):
        return replace(obj, **{f.name: _substitute(getattr(obj, f.name), params)  # type: ignore[arg-type]
                               for f in fields(obj)})
    return obj


def with_parameters(e: ir.Select, shared: list[ir.Expr]
                    ) -> tuple[ir.Select, list[ir.Var], list[ir.Var]] | None:
    """``e`` with each shared operand replaced by a parameter variable (named ``0``, ``1``,
    ...: no kernel variable can be; a name an enclosing helper's parameter already took in
    ``e`` is skipped), those parameters, and the other variables it reads; None when the
    result holds more than scalar operations on scalar variables."""
    taken = {n.name for n in nodes_in(e) if isinstance(n, ir.Var)}  # an enclosing helper's
    fresh = (str(k) for k in range(len(taken) + len(shared) + 1) if str(k) not in taken)
    params = {repr(x): ir.Var(next(fresh), x.type) for x in shared}
    body = _substitute(e, params)
    assert isinstance(body, ir.Select)
    nodes = [n for n in nodes_in(body) if isinstance(n, EXPRS)]
    if not all(isinstance(n, SCALAR_NODES) for n in nodes):
        return None
    names = {v.name for v in params.values()}
    free: dict[str, ir.Var] = {}
    for n in nodes:
        if isinstance(n, ir.Var) and n.name not in names:
            if not isinstance(n.type, type):  # a pointer, struct, shared or local array
                return None
            free.setdefault(n.name, n)
    return body, list(params.values()), sorted(free.values(), key=lambda v: v.name)

"""Tuples: several values returned by a kernel function, and unpacking them.

``return a, b`` gives a function a :class:`~gompute_core.ir.nodes.TupleType` result (a
helper's items typed as Python types them, each item joined over the returns like a
helper's single value); ``x, y = f(...)`` and ``x, y = b, a`` assign a temporary local of
that type, then each item to its name, so the right side is evaluated once and before
any target is assigned, as in Python. ``f(...)[k]`` with a constant ``k`` reads one item.
A tuple is not a value otherwise: no tuple locals, arithmetic or nesting.
"""

from __future__ import annotations

import ast

from ..ir.nodes import Assign, MakeTuple, Return, Stmt, TupleItem, TupleType, Var
from .choice import Choice, cast_spelling, settle, stands_for
from .context import FnContext
from .values import Value, coerce, is_scalar, tuple_items, tuple_of


def literal(ctx: FnContext, node: ast.Tuple) -> Value | None:
    """``(a, b, ...)`` as a tuple value (None in a collect pass where an item is not typed
    yet)."""
    from .statements import _value_or_unresolved

    if not 2 <= len(node.elts) <= 16:
        ctx.fail(node, f"a tuple of {len(node.elts)} values: kernel functions return 2 to 16 "
                       "values at once", "Tuple")
    items: list[Value] = []
    for elt in node.elts:
        if isinstance(elt, ast.Starred):
            ctx.fail(elt, "starred expression in a tuple is not supported in kernel code",
                     "Starred")
        if isinstance(elt, ast.Tuple):
            ctx.fail(elt, "nested tuples are not supported in kernel code", "Tuple")
        operand = _value_or_unresolved(ctx, elt)
        if operand is None:
            return None
        v = ctx.typing(elt, settle, operand)
        if not is_scalar(v.type):
            ctx.fail(elt, f"a tuple holds numbers, not a {v.ty.describe()}", "Tuple")
        items.append(v)
    tt = tuple_of([v.ty for v in items])
    return Value(MakeTuple(tuple(v.expr for v in items), tt))


def returned(ctx: FnContext, node: ast.Return, v: Value) -> list[Stmt]:
    """``return`` of a tuple value ``v``."""
    tt = v.type
    assert isinstance(tt, TupleType)
    if ctx.declared_ret:
        ctx.fail(node, f"'{ctx.src.name}' returns {len(tt.elems)} values here, but its caller "
                       "takes one (a spec's element function returns one value)", "Return")
    ctx.returns.append(v.ty)
    if not ctx.emit or ctx.ret is None:
        return [Return(v.expr)]
    want = ctx.ret.type
    if not isinstance(want, TupleType) or len(want.elems) != len(tt.elems):
        ctx.fail(node, f"'{ctx.src.name}' returns {len(tt.elems)} values here but "
                       f"{ctx.ret.describe()} on another path", "Return")
    targets = tuple_items(want)
    if v.ty == ctx.ret:
        return [Return(v.expr)]
    if not isinstance(v.expr, MakeTuple):
        ctx.fail(node, f"'{ctx.src.name}' returns {v.ty.describe()} here but "
                       f"{ctx.ret.describe()} on another path: return the items converted "
                       "to one type each", "Return")
    items = []
    for k, (e, target) in enumerate(zip(v.expr.items, targets, strict=True)):
        item = Value(e, tt.weak[k])  # type: ignore[arg-type]
        if ctx.program.stack and not stands_for(item, target):
            ctx.fail(node, f"helper '{ctx.src.name}' returns item {k} as "
                           f"{item.ty.describe()} here but {target.describe()} on another "
                           f"path; convert it explicitly ({cast_spelling(target)}(...))",
                     "Return")
        items.append(ctx.typing(node, coerce, item, target).expr)
    return [Return(MakeTuple(tuple(items), want))]


def unpack(ctx: FnContext, node: ast.Assign) -> list[Stmt]:
    """``a, b = value``: the tuple into a temporary, then each item into its name."""
    from .statements import _store, _value_or_unresolved

    target = node.targets[0]
    assert isinstance(target, (ast.Tuple, ast.List))
    names = []
    for elt in target.elts:
        if isinstance(elt, ast.Starred):
            ctx.fail(elt, "starred assignment is not supported in kernel code", "Starred")
        if not isinstance(elt, ast.Name):
            ctx.fail(elt, f"unpack into names only, not '{ast.unparse(elt)}' (assign it "
                          "from a name afterwards)", type(elt).__name__)
        names.append(elt.id)
    if isinstance(node.value, ast.Tuple):
        v = literal(ctx, node.value)
    else:
        operand = _value_or_unresolved(ctx, node.value)
        if isinstance(operand, Choice):
            operand = ctx.typing(node, settle, operand)
        v = operand
    if v is None:
        return []
    tt = v.type
    if not isinstance(tt, TupleType):
        ctx.fail(node, f"cannot unpack a {v.ty.describe()} into {len(names)} names", "Assign")
    if len(tt.elems) != len(names):
        ctx.fail(node, f"cannot unpack {len(tt.elems)} values into {len(names)} names",
                 "Assign")
    key = f"tuple@{node.lineno}:{node.col_offset}"
    if key not in ctx.ir_names:
        taken = set(ctx.ir_names.values())
        name, k = f"tuple{node.lineno}", 1
        while name in taken:
            k += 1
            name = f"tuple{node.lineno}_{k}"
        ctx.ir_names[key] = name
    ctx.record_assignment(node, key, v.ty)
    ctx.defined.add(key)
    temp_type = ctx.var_types[key].type
    if ctx.emit and v.ty != ctx.var_types[key]:
        ctx.fail(node, f"the tuple unpacked here is {v.ty.describe()}, elsewhere "
                       f"{ctx.var_types[key].describe()}", "Assign")
    temp = Var(ctx.ir_names[key], temp_type)
    out: list[Stmt] = [Assign(temp.name, v.expr)] if ctx.emit else []
    for k, name in enumerate(names):
        item = Value(TupleItem(temp, k, tt.elems[k]), tt.weak[k])  # type: ignore[arg-type]
        out.extend(_store(ctx, node, name, item))
    return out


def item(ctx: FnContext, node: ast.Subscript, base: Value) -> Value:
    """``value[k]`` of a tuple value, ``k`` a constant (negative counts from the end)."""
    from .expressions import lower_expr

    tt = base.type
    assert isinstance(tt, TupleType)
    k = lower_expr(ctx, node.slice)
    n = len(tt.elems)
    if not (k.is_weak_const and isinstance(k.py, int) and not isinstance(k.py, bool)
            and -n <= k.py < n):
        ctx.fail(node, f"a tuple of {n} values is indexed with a constant from {-n} to "
                       f"{n - 1}, not '{ast.unparse(node.slice)}'", "Subscript")
    i = int(k.py) % n  # type: ignore[arg-type]
    return Value(TupleItem(base.expr, i, tt.elems[i]), tt.weak[i])  # type: ignore[arg-type]


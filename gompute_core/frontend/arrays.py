"""Per-thread local arrays: ``name = g.local_array(T, n)`` (or ``(rows, cols)``).

A local array is declared once, at the top level of a kernel function's body (spec element
functions, helpers and raw kernels alike), zero-initialized as the oracle's
``numpy.zeros(shape, T)`` is; elements are read with ``name[i]`` / ``name[i, j]`` and
written with ``name[i] = v`` / ``name[i] += v`` (the value converted to ``T`` as NumPy's
item assignment converts it). A helper may take a local array as a parameter and then
reads and writes the caller's array, as a Python function given a NumPy array does.
Element accesses lower to :class:`~gompute_core.ir.nodes.LocalLoad` and
:class:`~gompute_core.ir.nodes.LocalStore`, kept apart from device memory's ``Load`` and
``Store``.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from ..errors import KernelSyntaxError
from ..ir.nodes import LocalLoad, LocalStore, LocalType
from ..raw import builtins as B
from ..types import as_scalar_type
from .context import FnContext, Static, Unresolved
from .memory import _shape, indices
from .values import Ty, Value, coerce, is_scalar

MAX_LOCAL_ELEMENTS = 4096
"""The largest local array accepted (elements): it lives in registers or on the stack."""


def is_local_call(ctx: FnContext, value: ast.expr) -> ast.Call | None:
    """``value`` when it is a call of ``g.local_array``, else None."""
    from .expressions import lower_any

    if not isinstance(value, ast.Call):
        return None
    try:
        func = lower_any(ctx, value.func)
    except (KernelSyntaxError, Unresolved):  # not a static name: the normal path reports it
        return None
    return value if isinstance(func, Static) and func.obj is B.local_array else None


def declared_names(ctx: FnContext, body: Sequence[ast.stmt]) -> frozenset[str]:
    """The names ``body`` declares as local arrays at its top level."""
    out = set()
    for stmt in body:
        if isinstance(stmt, ast.Assign) and is_local_call(ctx, stmt.value) is not None:
            out.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
    return frozenset(out)


def declare(ctx: FnContext, node: ast.Assign, call: ast.Call) -> list[LocalStore]:
    """``name = g.local_array(T, shape)``: a local of :class:`LocalType` (zeroed where the
    function starts: it is declared once, before any use)."""
    if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
        ctx.fail(node, "assign local_array(...) to one name", "Assign")
    if ctx.depth:
        ctx.fail(node, "local_array(...) must be declared at the top level of the function's "
                       "body (not inside if/for/while): it is one array, zeroed once",
                 "Assign")
    name = node.targets[0].id
    stores = sum(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
                 for n in ast.walk(ctx.src.node))
    if stores > 1 or name in ctx.params:
        ctx.fail(node, f"'{name}' is declared as a local array and also assigned elsewhere; "
                       "a local array is declared once (assign its elements instead)",
                 "Assign")
    if len(call.args) != 2 or call.keywords:
        ctx.fail(call, "local_array takes (T, n) or (T, (rows, cols))", "Call")
    from .expressions import lower_any

    t = lower_any(ctx, call.args[0])
    elem = as_scalar_type(t.obj) if isinstance(t, Static) else None
    if elem is None:
        ctx.fail(call.args[0], f"local_array: '{ast.unparse(call.args[0])}' is not a scalar "
                               "type (g.f32, g.i32, ...)", "Call")
    lt = LocalType(elem, _shape(ctx, call.args[1], "local"))
    if lt.size > MAX_LOCAL_ELEMENTS:
        ctx.fail(call, f"local_array of {lt.size} elements: at most {MAX_LOCAL_ELEMENTS} (a "
                       "local array lives in registers or on the thread's stack)", "Call")
    ctx.var_types[name] = Ty(lt)
    ctx.defined.add(name)
    return []


def load(ctx: FnContext, node: ast.Subscript, base: Value) -> Value:
    """``name[i]`` / ``name[i, j]`` of a local array."""
    idx = indices(ctx, node.slice, base, ast.unparse(node.value))
    return Value(LocalLoad(base.expr, idx, base.type.elem,  # type: ignore[arg-type,union-attr]
                           where=ctx.where(node)))


def store(ctx: FnContext, target: ast.Subscript, base: Value, value: Value) -> list[LocalStore]:
    """``name[i] = value``: the value converted to the element type as NumPy's item
    assignment converts it (a Python number out of the type's range is an error)."""
    text = ast.unparse(target.value)
    idx = indices(ctx, target.slice, base, text)
    elem = base.type.elem  # type: ignore[union-attr]
    if not is_scalar(value.type):
        ctx.fail(target, f"cannot store a {value.ty.describe()} into '{text}'", "Assign")
    converted = ctx.typing(target, coerce, value, Ty(elem)).expr
    if not ctx.emit:
        return []
    return [LocalStore(base.expr, idx, converted,  # type: ignore[arg-type]
                       where=ctx.where(target))]


def is_local_array(t: object) -> bool:
    """True for a local array's type."""
    return isinstance(t, LocalType)

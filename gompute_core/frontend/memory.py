"""Raw-kernel constructs: device memory, launch geometry, barriers, shared arrays, atomics.

Used by the expression and statement handlers when the function being lowered
is a raw kernel's own body (``FnContext.raw``); anywhere else each construct is
a ``KernelSyntaxError`` saying it belongs in a raw kernel. Helper functions a
raw kernel calls stay pure scalar functions.
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from ..errors import KernelSyntaxError
from ..ir.nodes import (
    Atomic,
    Barrier,
    Const,
    Evaluate,
    Expr,
    Fence,
    Geometry,
    Load,
    LocalType,
    PointerType,
    SharedType,
    Store,
)
from ..raw import builtins as B
from ..types import as_scalar_type, f32, f64, i32, i64, is_int, short_name, u32, u64
from .context import FnContext, Static, Unresolved
from .values import Ty, Value, coerce, is_scalar

ATOMIC_TYPES = (i32, u32, i64, u64, f32, f64)
"""Element types atomics accept (f64 needs the device capability ``f64_atomics``)."""
MAX_SHARED_ELEMENTS = 1 << 16
"""The largest static shared array accepted (elements); devices check bytes at load."""


def require_raw(ctx: FnContext, node: ast.AST, what: str) -> None:
    """KernelSyntaxError unless lowering a raw kernel's own body."""
    if not ctx.raw:
        ctx.fail(node, f"{what} is only available in a @g.raw_kernel function's own body (not "
                       "in spec element functions or helpers they call)", type(node).__name__)


def is_memory(v: Any) -> bool:
    """True for a lowered global (pointer) or shared array."""
    return isinstance(v, Value) and isinstance(v.type, (PointerType, SharedType))


def indices(ctx: FnContext, node: ast.expr, base: Value, text: str) -> tuple[Expr, ...]:
    """The ``i64`` indices of ``base[node]`` (one per dimension; a constant index of a
    shared array must be in range; one of a local array may be negative, as NumPy's)."""
    from .expressions import lower_expr, mixed_integer_hint

    t = base.type
    parts = list(node.elts) if isinstance(node, ast.Tuple) else [node]
    dims = len(t.shape) if isinstance(t, (SharedType, LocalType)) else 1
    if len(parts) != dims:
        ctx.fail(node, f"'{text}' has {dims} dimension{'s' if dims > 1 else ''}, indexed with "
                       f"{len(parts)}", "Subscript")
    out: list[Expr] = []
    for k, part in enumerate(parts):
        if isinstance(part, ast.Slice):
            ctx.fail(part, f"slicing '{text}' is not supported; index one element", "Slice")
        v = lower_expr(ctx, part)
        if not is_scalar(v.type) or not is_int(v.type) or v.type is np.bool_:
            ctx.fail(part, f"index of '{text}' must be an integer, got {v.ty.describe()}"
                           f"{mixed_integer_hint(part, v)}", "Subscript")
        if isinstance(t, LocalType) and v.is_weak_const and -t.shape[k] <= int(v.py) < 0:
            v = Value(Const(int(v.py) + t.shape[k], i64), "int", int(v.py) + t.shape[k])
        if isinstance(t, (SharedType, LocalType)) and v.is_weak_const and \
                not 0 <= int(v.py) < t.shape[k]:
            ctx.fail(part, f"index {v.py} out of range for '{text}' (dimension {k} has "
                           f"{t.shape[k]} elements)", "Subscript")
        out.append(ctx.typing(part, coerce, v, Ty(i64)).expr if v.type is not i64 or v.weak
                   else v.expr)
    return tuple(out)


def load(ctx: FnContext, node: ast.Subscript, base: Value) -> Value:
    """``base[i]`` / ``base[i, j]`` of a global or shared array."""
    require_raw(ctx, node, "indexing device memory")
    text = ast.unparse(node.value)
    idx = indices(ctx, node.slice, base, text)
    return Value(Load(base.expr, idx, base.type.elem,  # type: ignore[arg-type,union-attr]
                      where=ctx.where(node)))


def store(ctx: FnContext, target: ast.Subscript, value: Value) -> list[Store]:
    """``base[i] = value``: the value converted to the element type as NumPy's item
    assignment converts it (a Python number out of the type's range is an error)."""
    from .expressions import lower_expr

    require_raw(ctx, target, "storing to device memory")
    base = lower_expr(ctx, target.value)
    text = ast.unparse(target.value)
    if not is_memory(base):
        ctx.fail(target, f"assignment to '{ast.unparse(target)}': only GlobalPtr parameters "
                         "and shared arrays are assignable (params are read-only)", "Subscript")
    idx = indices(ctx, target.slice, base, text)
    elem = base.type.elem  # type: ignore[union-attr]
    if not is_scalar(value.type):
        ctx.fail(target, f"cannot store a {value.ty.describe()} into '{text}'", "Assign")
    converted = ctx.typing(target, coerce, value, Ty(elem)).expr
    if not ctx.emit:
        return []
    return [Store(base.expr, idx, converted, where=ctx.where(target))]  # type: ignore[arg-type]


def _dim(ctx: FnContext, node: ast.Call, text: str) -> int:
    if len(node.args) != 1:
        ctx.fail(node, f"'{text}' takes one argument, the dimension (0, 1 or 2)", "Call")
    arg = node.args[0]
    from .expressions import lower_operand

    v = lower_operand(ctx, arg)
    if not (isinstance(v, Value) and v.is_weak_const and isinstance(v.py, int)
            and not isinstance(v.py, bool) and 0 <= v.py <= 2):
        ctx.fail(arg, f"'{text}' takes a constant dimension 0, 1 or 2 (x, y, z), got "
                      f"'{ast.unparse(arg)}'", "Call")
    return int(v.py)  # type: ignore[arg-type]


def builtin_call(ctx: FnContext, node: ast.Call, obj: Any, text: str) -> Value | None:
    """Lower a call of a ``g.builtins`` function in expression position; None if ``obj``
    is not one."""
    if obj in B.GEOMETRY:
        require_raw(ctx, node, f"'{text}'")
        return Value(Geometry(B.GEOMETRY[obj], _dim(ctx, node, text), i64))  # type: ignore[arg-type]
    if obj in B.ATOMICS:
        require_raw(ctx, node, f"'{text}'")
        return _atomic(ctx, node, B.ATOMICS[obj], text)
    if obj is B.barrier or obj is B.threadfence:
        ctx.fail(node, f"{obj.__name__}() is a statement: call it on a line of its own", "Call")
    if obj is B.shared_array:
        ctx.fail(node, "shared_array(...) must be assigned to a local at the top level of a raw "
                       "kernel's body (name = g.builtins.shared_array(T, n))", "Call")
    return None


def _atomic(ctx: FnContext, node: ast.Call, op: str, text: str) -> Value:
    from .expressions import lower_expr

    want = 4 if op == "cas" else 3
    if len(node.args) != want:
        shape = "(arr, index, compare, value)" if op == "cas" else "(arr, index, value)"
        ctx.fail(node, f"'{text}' takes {want} arguments {shape}, got {len(node.args)}", "Call")
    base = lower_expr(ctx, node.args[0])
    if not is_memory(base):
        ctx.fail(node.args[0], f"the first argument of '{text}' must be a GlobalPtr parameter or "
                               f"a shared array, got {base.ty.describe()}", "Call")
    elem = base.type.elem  # type: ignore[union-attr]
    if elem not in ATOMIC_TYPES:
        ctx.fail(node.args[0], f"'{text}' on {short_name(elem)} elements: atomics take i32, u32, "
                               "i64, u64, f32 and f64", "Call")
    idx = indices(ctx, node.args[1], base, ast.unparse(node.args[0]))
    values = []
    for a in node.args[2:]:
        v = lower_expr(ctx, a)
        if not is_scalar(v.type):
            ctx.fail(a, f"'{text}' takes a number, got {v.ty.describe()}", "Call")
        values.append(ctx.typing(a, coerce, v, Ty(elem)).expr)
    compare = values[0] if op == "cas" else None
    return Value(Atomic(op, base.expr, idx, values[-1], compare, elem,  # type: ignore[arg-type]
                        where=ctx.where(node)))


def statement_call(ctx: FnContext, node: ast.Expr) -> list[Any] | None:
    """A call used as a statement: ``barrier()``, ``threadfence()`` or an atomic whose old
    value is unused; None when the call is neither."""
    from .expressions import lower_any

    call = node.value
    if not isinstance(call, ast.Call):
        return None
    func = lower_any(ctx, call.func)
    if not isinstance(func, Static):
        return None
    if func.obj is B.barrier:
        require_raw(ctx, call, "barrier()")
        if call.args or call.keywords:
            ctx.fail(call, "barrier() takes no arguments", "Call")
        check_barrier(ctx, call)
        return [Barrier(where=ctx.where(call))] if ctx.emit else []
    if func.obj is B.threadfence:
        require_raw(ctx, call, "threadfence()")
        if call.args or call.keywords:
            ctx.fail(call, "threadfence() takes no arguments", "Call")
        return [Fence()] if ctx.emit else []
    if func.obj in B.ATOMICS:
        v = builtin_call(ctx, call, func.obj, ast.unparse(call.func))
        return [Evaluate(v.expr)] if ctx.emit and v is not None else []
    return None


def check_barrier(ctx: FnContext, node: ast.AST) -> None:
    """Reject a barrier that some threads of a block may not reach (last emit pass)."""
    if ctx.varying is None:
        return
    if ctx.divergent:
        ctx.fail(node, "barrier() under a condition or loop that depends on the thread index "
                       f"(line {ctx.divergent[-1]}): every thread of the block must reach it, "
                       "or the block deadlocks on a GPU", "barrier")
    if ctx.exited is not None:
        ctx.fail(node, f"barrier() after a return some threads may take (line {ctx.exited}): "
                       "every thread of the block must reach it; guard the work instead of "
                       "returning early", "barrier")


def declare_shared(ctx: FnContext, node: ast.Assign, call: ast.Call) -> list[Any]:
    """``name = shared_array(T, n or (rows, cols))``: a shared local of the raw kernel."""
    require_raw(ctx, call, "shared_array()")
    if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
        ctx.fail(node, "assign shared_array(...) to one name", "Assign")
    if ctx.depth:
        ctx.fail(node, "shared_array(...) must be declared at the top level of the kernel's "
                       "body (not inside if/for/while): it is one static array per block",
                 "Assign")
    name = node.targets[0].id
    if len(call.args) != 2 or call.keywords:
        ctx.fail(call, "shared_array takes (T, n) or (T, (rows, cols))", "Call")
    from .expressions import lower_any

    t = lower_any(ctx, call.args[0])
    elem = as_scalar_type(t.obj) if isinstance(t, Static) else None
    if elem is None:
        ctx.fail(call.args[0], f"shared_array: '{ast.unparse(call.args[0])}' is not a scalar "
                               "type (g.f32, g.i32, ...)", "Call")
    shape = _shape(ctx, call.args[1])
    st = SharedType(elem, shape)
    if st.size > MAX_SHARED_ELEMENTS:
        ctx.fail(call, f"shared_array of {st.size} elements: at most {MAX_SHARED_ELEMENTS}",
                 "Call")
    old = ctx.var_types.get(name)
    if old is not None and old.type != st:
        ctx.fail(node, f"'{name}' is declared as a shared array and also assigned another "
                       "value; a shared array is declared once and never reassigned", "Assign")
    ctx.var_types[name] = Ty(st)
    ctx.defined.add(name)
    return []


def _shape(ctx: FnContext, node: ast.expr, what: str = "shared") -> tuple[int, ...]:
    """The constant shape of a ``shared_array``/``local_array`` declaration (``what``)."""
    from .expressions import lower_operand

    parts = list(node.elts) if isinstance(node, ast.Tuple) else [node]
    if not 1 <= len(parts) <= 2:
        ctx.fail(node, f"{what} arrays have 1 or 2 dimensions", "Call")
    dims = []
    for p in parts:
        v = lower_operand(ctx, p)
        if not (isinstance(v, Value) and v.is_weak_const and isinstance(v.py, int)
                and not isinstance(v.py, bool) and v.py >= 1):
            ctx.fail(p, f"{what}_array dimensions must be positive integer constants, got "
                        f"'{ast.unparse(p)}'", "Call")
        dims.append(int(v.py))  # type: ignore[arg-type]
    return tuple(dims)


def is_shared_call(ctx: FnContext, value: ast.expr) -> ast.Call | None:
    """``value`` when it is a call of ``shared_array``, else None."""
    from .expressions import lower_any

    if not isinstance(value, ast.Call):
        return None
    try:
        func = lower_any(ctx, value.func)
    except (KernelSyntaxError, Unresolved):  # not a static name: the normal path reports it
        return None
    return value if isinstance(func, Static) and func.obj is B.shared_array else None

"""Statement lowering: one handler per accepted statement type.

Lowering runs in passes (see :mod:`.lowering`): *collect* passes only learn the
types of locals and returns; the final *emit* pass produces IR with every
value converted to its variable's (or the function's) type.
"""

from __future__ import annotations

import ast
import builtins
import types
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import KernelSyntaxError
from ..ir.nodes import (
    Assign,
    Break,
    Const,
    Continue,
    Evaluate,
    Expr,
    ForRange,
    If,
    Return,
    Stmt,
    TupleType,
    While,
)
from ..ir.uniformity import is_varying
from ..raw import builtins as builtins_module
from ..types import i64, is_int
from . import arrays, memory, ops, tuples
from .choice import (
    Choice,
    Operand,
    cast_spelling,
    distribute,
    settle,
    settle_store,
    settle_to,
    stands_for,
)
from .context import FnContext, Static, Unresolved
from .expressions import (
    _BINOPS,
    condition,
    construct_name,
    lower_any,
    lower_expr,
    lower_operand,
    reject,
)
from .kmath import intrinsic_of
from .limits import MAX_IR_DEPTH, ir_depth
from .values import Ty, Value, coerce, is_scalar


def lower_block(ctx: FnContext, body: Sequence[ast.stmt]) -> tuple[Stmt, ...]:
    """Lower statements in order; statements after a return/break/continue are dead and
    dropped (Python never runs them)."""
    out: list[Stmt] = []
    for node in body:
        handler = STMT_HANDLERS.get(type(node))
        if handler is None:
            reject(ctx, node)
        try:
            out.extend(handler(ctx, node))
        except Unresolved:
            # a collect pass met a local no assignment has typed yet (a store to an array
            # declared by an unsupported statement, say): types are still growing; the
            # emit pass reports what remains, with its line
            if ctx.emit:
                raise
            continue
        if out and isinstance(out[-1], (Return, Break, Continue)):
            break
    return tuple(out)


def _value_or_unresolved(ctx: FnContext, node: ast.expr) -> Operand | None:
    """Lower an expression; in collect passes a not-yet-typed local gives None, and so does
    an error: types are still growing there, so the emit pass reports the errors that
    remain with the final types (a helper first called with a narrower type, say)."""
    try:
        return lower_operand(ctx, node)
    except Unresolved:
        return None
    except KernelSyntaxError:
        if ctx.emit:
            raise
        return None


def checked(ctx: FnContext, node: ast.AST, expr: Expr) -> Expr:
    """``expr`` unless it nests deeper than the renderers accept (KernelSyntaxError)."""
    depth = ir_depth(expr)
    if depth > MAX_IR_DEPTH:
        ctx.fail(node, f"expression nested too deeply after typing (more than {MAX_IR_DEPTH} "
                       "levels); split it into assignments to locals", "nesting")
    return expr


def _condition(ctx: FnContext, node: ast.expr) -> Value | None:
    v = _value_or_unresolved(ctx, node)
    return None if v is None else condition(ctx, node, v)


def _store(ctx: FnContext, node: ast.AST, name: str, operand: Operand) -> list[Stmt]:
    local = ctx.var_types.get(name) if ctx.emit else None
    v = ctx.typing(node, settle_store, operand, local)
    if isinstance(v.type, TupleType):
        ctx.fail(node, f"cannot assign a {v.ty.describe()} to the local '{name}': locals hold "
                       f"numbers; unpack it ({', '.join(f'x{k}' for k in range(len(v.type.elems)))}"
                       " = ...)", "Assign")
    if not is_scalar(v.type):
        ctx.fail(node, f"cannot assign a {v.ty.describe()} to the local '{name}': locals hold "
                       "numbers (use the params path directly)", "Assign")
    ctx.record_assignment(node, name, v.ty)
    ctx.defined.add(name)
    if not ctx.emit:
        return []
    value = ctx.typing(node, coerce, v, ctx.var_types[name])
    return [Assign(ctx.ir_names[name], checked(ctx, node, value.expr))]


def _target_name(ctx: FnContext, target: ast.expr) -> str:
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, (ast.Attribute, ast.Subscript)):
        ctx.fail(target, f"assignment to '{ast.unparse(target)}': params are read-only in "
                         "kernel code", type(target).__name__)
    if isinstance(target, (ast.Tuple, ast.List)):
        ctx.fail(target, "unpacking with several '=' targets is not supported in kernel "
                         "code; unpack in an assignment of its own", type(target).__name__)
    return reject(ctx, target)


def _is_memory_target(ctx: FnContext, target: ast.expr) -> bool:
    """True for ``a[i]`` in a raw kernel (a store to device memory) and for an element of a
    local array."""
    return isinstance(target, ast.Subscript) and (ctx.raw or (
        isinstance(target.value, ast.Name) and target.value.id in ctx.local_arrays))


def _store_memory(ctx: FnContext, target: ast.Subscript, operand: Operand) -> list[Stmt]:
    v = ctx.typing(target, settle, operand)
    if isinstance(target.value, ast.Name) and target.value.id in ctx.local_arrays:
        base = lower_expr(ctx, target.value)
        if arrays.is_local_array(base.type):
            return list(arrays.store(ctx, target, base, v))
    return list(memory.store(ctx, target, v))


def _assign(ctx: FnContext, node: ast.Assign) -> list[Stmt]:
    shared = memory.is_shared_call(ctx, node.value)
    if shared is not None:
        return memory.declare_shared(ctx, node, shared)
    local = arrays.is_local_call(ctx, node.value)
    if local is not None:
        return list(arrays.declare(ctx, node, local))
    if len(node.targets) == 1 and isinstance(node.targets[0], (ast.Tuple, ast.List)):
        return tuples.unpack(ctx, node)
    names = [None if _is_memory_target(ctx, t) else _target_name(ctx, t) for t in node.targets]
    v = _value_or_unresolved(ctx, node.value)
    if v is None:
        return []
    out: list[Stmt] = []
    for name, target in zip(names, node.targets, strict=True):
        if name is None:
            out.extend(_store_memory(ctx, target, v))  # type: ignore[arg-type]
        else:
            out.extend(_store(ctx, node, name, v))
    return out


def _augassign(ctx: FnContext, node: ast.AugAssign) -> list[Stmt]:
    op = _BINOPS.get(type(node.op))
    if op is None:
        return reject(ctx, node, construct_name(node.op))
    if _is_memory_target(ctx, node.target):
        target = node.target
        load: ast.expr = ast.copy_location(
            ast.Subscript(value=target.value, slice=target.slice, ctx=ast.Load()), target)  # type: ignore[attr-defined]
    else:
        name = _target_name(ctx, node.target)
        load = ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node.target)
    current = _value_or_unresolved(ctx, load)
    rhs = _value_or_unresolved(ctx, node.value)
    if current is None or rhs is None:
        return []
    result = ctx.typing(node, distribute, ops.binary_rule(op, node), current, rhs)
    if isinstance(load, ast.Subscript):
        return _store_memory(ctx, node.target, result)  # type: ignore[arg-type]
    return _store(ctx, node, name, result)


def _nested(ctx: FnContext, node: ast.AST, divergent: bool, body: Sequence[ast.stmt]
            ) -> tuple[Stmt, ...]:
    """Lower a nested body (if branch, loop body); ``divergent``: its control depends on
    the thread index (barrier checks of raw kernels)."""
    ctx.depth += 1
    if divergent:
        ctx.divergent.append(getattr(node, "lineno", 0))
    try:
        return lower_block(ctx, body)
    finally:
        ctx.depth -= 1
        if divergent:
            ctx.divergent.pop()


def _varies(ctx: FnContext, *exprs: Expr | None) -> bool:
    """True in a raw kernel's checking pass when any of ``exprs`` depends on the thread."""
    if ctx.varying is None:
        return False
    return any(e is not None and is_varying(e, ctx.varying) for e in exprs)


def _if(ctx: FnContext, node: ast.If) -> list[Stmt]:
    cond = _condition(ctx, node.test)
    if cond is not None and cond.is_weak_const:
        # a compile-time condition (a captured flag): only the taken branch exists
        return list(lower_block(ctx, node.body if cond.py else node.orelse))
    before = set(ctx.defined)
    divergent = _varies(ctx, None if cond is None else cond.expr)
    body = _nested(ctx, node, divergent, node.body)
    after_body = None if _ends(body) else ctx.defined
    ctx.defined = set(before)
    orelse = _nested(ctx, node, divergent, node.orelse)
    after_orelse = None if _ends(orelse) else ctx.defined
    # definitely assigned after the if: what both fall-through branches assigned
    if after_body is None:
        ctx.defined = before if after_orelse is None else after_orelse
    else:
        ctx.defined = after_body if after_orelse is None else after_body & after_orelse
    if cond is None:
        return []
    return [If(checked(ctx, node, cond.expr), body, orelse)]


def _ends(block: tuple[Stmt, ...]) -> bool:
    """True if control never falls out of the end of ``block``."""
    return bool(block) and (isinstance(block[-1], (Break, Continue)) or always_returns(block))


def _while(ctx: FnContext, node: ast.While) -> list[Stmt]:
    if node.orelse:
        ctx.fail(node, "while-else is not supported in kernel code", "While")
    cond = _condition(ctx, node.test)
    if cond is not None and cond.is_weak_const and not cond.py:
        return []
    before = set(ctx.defined)
    ctx.loop_depth += 1
    body = _nested(ctx, node, _varies(ctx, None if cond is None else cond.expr), node.body)
    ctx.loop_depth -= 1
    ctx.defined = before  # the body may run zero times
    if cond is None:
        return []
    return [While(checked(ctx, node, cond.expr), body)]


def _range_args(ctx: FnContext, node: ast.For) -> list[ast.expr]:
    it = node.iter
    func = lower_any(ctx, it.func) if isinstance(it, ast.Call) else None
    if not (isinstance(it, ast.Call) and isinstance(func, Static) and func.obj is builtins.range):
        ctx.fail(it, f"for loops must iterate over range(...), not '{ast.unparse(it)}'", "For")
    if it.keywords or not 1 <= len(it.args) <= 3 or any(
            isinstance(a, ast.Starred) for a in it.args):
        ctx.fail(it, "range() takes 1 to 3 positional arguments", "For")
    return list(it.args)


def _for(ctx: FnContext, node: ast.For) -> list[Stmt]:
    if node.orelse:
        ctx.fail(node, "for-else is not supported in kernel code", "For")
    if not isinstance(node.target, ast.Name):
        ctx.fail(node.target, "a for loop variable must be a single name", "For")
    name = node.target.id
    arg_nodes = _range_args(ctx, node)
    values = [_value_or_unresolved(ctx, a) for a in arg_nodes]
    values = [None if v is None else ctx.typing(a, settle, v)
              for v, a in zip(values, arg_nodes, strict=True)]
    for v, a in zip(values, arg_nodes, strict=True):
        if v is not None and not (is_scalar(v.type) and (is_int(v.type) or v.weak == "bool")):
            ctx.fail(a, f"range() needs integers, got {v.ty.describe()}", "For")
    ctx.record_assignment(node, name, Ty(i64, "int"))
    var_ty = ctx.var_types[name]
    if not is_int(var_ty.type):
        ctx.fail(node, f"loop variable '{name}' is also assigned a {var_ty.describe()} value",
                 "For")
    before = set(ctx.defined)
    ctx.defined.add(name)
    ctx.loop_depth += 1
    body = _nested(ctx, node, _varies(ctx, *(None if v is None else v.expr for v in values)),
                   node.body)
    ctx.loop_depth -= 1
    ctx.defined = before  # the range may be empty: nothing assigned in the loop is certain
    if not ctx.emit or any(v is None for v in values):
        return []
    bounds = [checked(ctx, node, ctx.typing(node, coerce, v, var_ty).expr) for v in values]  # type: ignore[arg-type]
    if len(bounds) == 1:
        bounds.insert(0, Const(0, var_ty.type))
    if len(bounds) == 2:
        bounds.append(Const(1, var_ty.type))
    start, stop, step = bounds
    if isinstance(step, Const) and step.value == 0:
        ctx.fail(node.iter, "range() step must not be zero", "For")
    return [ForRange(ctx.ir_names[name], start, stop, step, body)]


def _return(ctx: FnContext, node: ast.Return) -> list[Stmt]:
    if ctx.raw:
        if node.value is not None:
            ctx.fail(node, "a raw kernel returns nothing: write results to its arrays", "Return")
        if ctx.divergent and ctx.exited is None:
            ctx.exited = node.lineno
        return [Return(None, where=ctx.where(node))]
    if node.value is None:
        ctx.fail(node, "a kernel function must return a value", "Return")
    if isinstance(node.value, ast.Tuple):
        literal = tuples.literal(ctx, node.value)
        return [] if literal is None else tuples.returned(ctx, node, literal)
    operand = _value_or_unresolved(ctx, node.value)
    if operand is None:
        return []
    if isinstance(operand, Value) and isinstance(operand.type, TupleType):
        return tuples.returned(ctx, node, operand)
    if isinstance(operand, Choice) and not ctx.emit:
        ctx.returns.extend(leaf.ty for leaf in operand.leaves())
        return []
    if isinstance(operand, Choice) and ctx.declared_ret and ctx.ret is not None:
        # converted to the declared type, each alternative on its own (exact)
        ctx.returns.append(ctx.ret)
        return [Return(checked(ctx, node, ctx.typing(node, settle_to, operand, ctx.ret).expr))]
    v = ctx.typing(node, settle, operand)
    if not is_scalar(v.type):
        ctx.fail(node, f"a kernel function returns numbers, not a {v.ty.describe()}", "Return")
    ctx.returns.append(v.ty)
    if not ctx.emit or ctx.ret is None:
        return [Return(v.expr)]
    if ctx.program.stack and not ctx.declared_ret and not stands_for(v, ctx.ret):
        # a helper's inferred type: Python returns each value unchanged to the caller
        ctx.fail(node, f"helper '{ctx.src.name}' returns '{ast.unparse(node.value)}' as "
                       f"{v.ty.describe()} here but {ctx.ret.describe()} on another path; "
                       "the caller would compute with one type where Python computes with "
                       "the other: convert the returned values to one type explicitly (e.g. "
                       f"{cast_spelling(ctx.ret)}(...) around each)", "Return")
    return [Return(checked(ctx, node, ctx.typing(node, coerce, v, ctx.ret).expr))]


def _loop_jump(ctx: FnContext, node: ast.stmt) -> list[Stmt]:
    if ctx.loop_depth == 0:
        ctx.fail(node, f"'{type(node).__name__.lower()}' outside a loop", type(node).__name__)
    return [Break() if isinstance(node, ast.Break) else Continue()]


def _is_helper(ctx: FnContext, call: ast.Call) -> bool:
    """Whether ``call`` calls a kernel function of the user's (a helper): not a ``g.math``
    intrinsic nor a ``g.builtins`` function."""
    func = lower_any(ctx, call.func)
    obj = func.obj if isinstance(func, Static) else None
    if isinstance(obj, staticmethod):
        obj = obj.__func__
    return (isinstance(obj, types.FunctionType) and intrinsic_of(obj) is None
            and obj.__module__ != builtins_module.__name__)


def _expr_stmt(ctx: FnContext, node: ast.Expr) -> list[Stmt]:
    value = node.value
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return []  # a docstring or comment string
    effect = memory.statement_call(ctx, node)
    if effect is not None:
        return effect
    if isinstance(value, (ast.Yield, ast.YieldFrom, ast.Await)):
        return reject(ctx, value)
    if isinstance(value, ast.Call):
        if _is_helper(ctx, value):
            # a helper may write an array it is passed (a local array): call it for that
            v = lower_expr(ctx, value)
            return [Evaluate(v.expr)] if ctx.emit else []
        return reject(ctx, node, f"a call of '{ast.unparse(value.func)}' as a statement (its "
                                 "result is unused; kernel functions have no side effects "
                                 "such as printing)")
    return reject(ctx, node, "an expression statement (its value is unused)")


STMT_HANDLERS: dict[type[ast.AST], Callable[[FnContext, Any], list[Stmt]]] = {
    ast.Assign: _assign,
    ast.AugAssign: _augassign,
    ast.If: _if,
    ast.While: _while,
    ast.For: _for,
    ast.Return: _return,
    ast.Break: _loop_jump,
    ast.Continue: _loop_jump,
    ast.Pass: lambda ctx, node: [],
    ast.Expr: _expr_stmt,
}
"""The accepted statement constructs; anything else is rejected by name and line."""


def always_returns(body: Sequence[Stmt]) -> bool:
    """True if every path through ``body`` ends in a Return."""
    for s in body:
        if isinstance(s, Return):
            return True
        if isinstance(s, If) and always_returns(s.body) and always_returns(s.orelse):
            return True
        if (isinstance(s, While) and isinstance(s.cond, Const) and s.cond.value
                and not _breaks(s.body)):
            return True
    return False


def _breaks(body: Sequence[Stmt]) -> bool:
    """True if ``body`` contains a break of the enclosing loop (not of a nested one)."""
    for s in body:
        if isinstance(s, Break):
            return True
        if isinstance(s, If) and (_breaks(s.body) or _breaks(s.orelse)):
            return True
    return False

"""Lowering one Python function to one IR Function, and helpers on demand.

Local variable types are found by a fixed point: *collect* passes lower the
body, joining the type of every value assigned to each local (NumPy 2
promotion; a local only ever assigned Python numbers stays weak), until no
type changes; the *emit* pass then produces the IR with every assignment and
return converted to the final types. Types only grow, so this terminates.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Callable, Sequence

import numpy as np

from ..ir.nodes import Assign, Expr, Function, LocalType, Stmt, Var
from ..ir.uniformity import varying_names
from . import arrays
from .context import FnContext, Param, Program, Specialization, fail_at
from .limits import MAX_AST_DEPTH, ast_too_deep
from .names import safe_name
from .source import FunctionSource, parse_function
from .statements import always_returns, lower_block
from .values import Ty, TypingError, Value, coerce, join


def _body(src: FunctionSource) -> list[ast.stmt]:
    node = src.node
    if isinstance(node, ast.Lambda):
        return [ast.copy_location(ast.Return(value=node.body), node.body)]
    return list(node.body)


def _assigned_names(body: Sequence[ast.stmt]) -> list[str]:
    seen: dict[str, None] = {}
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                seen.setdefault(n.id, None)
    return list(seen)


def _param_names(src: FunctionSource, arg_tys: Sequence[Ty | None]) -> list[str]:
    args = src.node.args
    if args.vararg or args.kwarg or args.kwonlyargs:
        fail_at(src, src.node, f"kernel function '{src.name}' must take plain positional "
                              "parameters (no *args, **kwargs or keyword-only)", "arguments")
    if args.defaults or args.kw_defaults:
        fail_at(src, src.node, f"kernel function '{src.name}' has default parameter values, "
                              "which kernel calls cannot use", "arguments")
    names = [a.arg for a in args.posonlyargs + args.args]
    if len(names) != len(arg_tys):
        fail_at(src, src.node, f"kernel function '{src.name}' takes {len(names)} parameter"
                              f"{'s' if len(names) != 1 else ''} but is called with "
                              f"{len(arg_tys)}", "arguments")
    return names


def lower_function(program: Program, src: FunctionSource, arg_tys: Sequence[Ty | None],
                   ret: Ty | None, ir_name: str, raw: bool = False) -> Specialization:
    """Lower ``src`` called with ``arg_tys`` (None: the parameter is unused and dropped) to
    an IR Function named ``ir_name`` returning ``ret`` (None: inferred).

    ``raw``: ``src`` is a raw kernel's entry (memory, builtins, bare returns; it returns
    nothing, ``Function.ret`` is None). Its emit pass runs twice: the second knows which
    locals vary between threads (:mod:`gompute_core.ir.uniformity`) and rejects barriers
    some threads of a block may not reach, at their line."""
    names = _param_names(src, arg_tys)
    body = _body(src)
    for stmt in body:
        deep = ast_too_deep(stmt)
        if deep is not None:
            fail_at(src, deep[0], f"expression nested {deep[1]} levels deep (the limit is "
                                  f"{MAX_AST_DEPTH}); split it into assignments to locals",
                    "nesting")
    local_names = frozenset(_assigned_names(body))
    taken: set[str] = set()
    ir_names: dict[str, str] = {}
    params: dict[str, Param] = {}
    for pname, ty in zip(names, arg_tys, strict=True):
        if ty is None:
            params[pname] = Param(None, None)
            continue
        arg_name = safe_name(f"{pname}_arg" if pname in local_names else pname, taken)
        params[pname] = Param(arg_name, ty)
    for name in [*names, *_assigned_names(body)]:
        if name in local_names and name not in ir_names:
            ir_names[name] = safe_name(name, taken)

    local_arrays: frozenset[str] = frozenset(
        n for n, p in params.items() if p.ty is not None and isinstance(p.ty.type, LocalType))

    def context(var_types: dict[str, Ty], emit: bool, ret_ty: Ty | None) -> FnContext:
        return FnContext(program, src, params, local_names, ir_names, dict(var_types), ret_ty,
                         emit=emit, lower_helper=lower_helper, defined=set(initial),
                         declared_ret=ret is not None, raw=raw, local_arrays=local_arrays)

    initial = {n: p.ty for n, p in params.items() if n in local_names and p.ty is not None}
    local_arrays |= arrays.declared_names(context({}, False, None), body)
    var_types: dict[str, Ty] = dict(initial)
    returns: Ty | None = None
    while True:  # terminates: types only move up a finite lattice
        ctx = context(var_types, False, None)
        lower_block(ctx, body)
        new_returns = _join_returns(ctx, ctx.returns)
        if ctx.var_types == var_types and new_returns == returns:
            break
        var_types, returns = ctx.var_types, new_returns
    if raw:
        ctx, stmts = _emit_raw(context, var_types, body)
        ret_ty = None
    else:
        ret_ty = ret if ret is not None else returns
        if ret_ty is None:
            lower_block(context(var_types, True, None), body)  # reports an error hidden in collect
            fail_at(src, src.node, f"kernel function '{src.name}' never returns a value (a "
                                   "helper called for what it writes into a local array "
                                   "it is passed still returns one: end it with "
                                   "'return 0')", "Return")
        ctx = context(var_types, True, ret_ty)
        stmts = lower_block(ctx, body)
        if not always_returns(stmts):
            ctx.fail(body[-1], f"kernel function '{src.name}' can reach its end without "
                               "returning a value; every path must return", "Return")
    prologue = []
    for pname, p in params.items():
        if pname in local_names and p.ty is not None and p.name is not None:
            value = coerce_param(ctx, p.name, p.ty, var_types[pname])
            prologue.append(Assign(ir_names[pname], value))
    fn = Function(
        name=ir_name,
        args=tuple((p.name, p.ty.type) for p in params.values()
                   if p.name is not None and p.ty is not None),
        ret=None if ret_ty is None else ret_ty.type,
        locals=ctx.declared(),
        body=(*prologue, *stmts),
        source=src.location,
    )
    return Specialization(fn, Ty(np.bool_) if ret_ty is None else ret_ty)


def _emit_raw(context: Callable[[dict[str, Ty], bool, Ty | None], FnContext],
              var_types: dict[str, Ty], body: list[ast.stmt]
              ) -> tuple[FnContext, tuple[Stmt, ...]]:
    """A raw kernel's emit passes: the first finds the locals that vary between threads, the
    second lowers again knowing them, checking every barrier."""
    first = context(var_types, True, None)
    probe = Function("probe", (), None, first.declared(), lower_block(first, body))
    ctx = context(var_types, True, None)
    ctx.varying = varying_names(probe)
    return ctx, lower_block(ctx, body)


def coerce_param(ctx: FnContext, name: str, ty: Ty, to: Ty) -> Expr:
    """The argument ``name`` converted to the type of the local that shadows it."""
    return ctx.typing(ctx.src.node, coerce, Value(Var(name, ty.type), ty.weak), to).expr


def _join_returns(ctx: FnContext, returns: list[Ty]) -> Ty | None:
    if not returns:
        return None
    acc = returns[0]
    for ty in returns[1:]:
        try:
            acc = join(acc, ty)
        except TypingError as exc:
            ctx.fail(ctx.src.node, f"returns of '{ctx.src.name}' have incompatible types: {exc}",
                     "Return")
    return acc


def lower_helper(ctx: FnContext, node: ast.AST, fn: types.FunctionType,
                 arg_tys: Sequence[Ty], ret: Ty | None) -> Specialization:
    """Lower (once per argument types) a kernel function called from kernel code."""
    program = ctx.program
    key = (fn, tuple(arg_tys), ret)
    spec = program.specializations.get(key)
    if spec is not None:
        return spec
    if fn in program.stack or fn is ctx.src.fn:
        ctx.fail(node, f"recursive call of '{fn.__name__}': kernel functions are inlined and "
                       "cannot recurse", "Call")
    src = parse_function(fn)
    program.stack.append(ctx.src.fn)
    try:
        spec = lower_function(program, src, list(arg_tys), ret, program.helper_name(fn.__name__))
    finally:
        program.stack.pop()
    program.specializations[key] = spec
    program.functions[spec.function.name] = spec.function
    return spec

"""Calls in kernel code: casts, ``bool/int/float``, ``abs/min/max``, ``g.math`` intrinsics
and calls of other kernel functions (lowered as helper IR functions)."""

from __future__ import annotations

import ast
import builtins
import types

import numpy as np

from ..ir.nodes import CallFunction, CallIntrinsic, Cast
from ..types import as_scalar_type, f64, i64, is_float
from . import ops
from .context import FnContext, Static
from .expressions import lower_any, lower_expr
from .kmath import BINARY_INTRINSICS, PREDICATES, intrinsic_of
from .values import (
    Ty,
    TypingError,
    Value,
    coerce,
    const_of,
    is_scalar,
    join,
    materialize,
    weak_const,
)


def lower_call(ctx: FnContext, node: ast.Call) -> Value:
    """Lower ``f(args)`` where ``f`` names a compile-time callable."""
    func = lower_any(ctx, node.func)
    text = ast.unparse(node.func)
    if node.keywords:
        ctx.fail(node, f"keyword arguments in the call of '{text}' are not supported in "
                       "kernel code", "keyword")
    for arg in node.args:
        if isinstance(arg, ast.Starred):
            ctx.fail(arg, f"starred argument in the call of '{text}'", "Starred")
    if not isinstance(func, Static):
        ctx.fail(node, f"'{text}' is a {func.ty.describe()} value, not a function", "Call")
    obj = func.obj
    if obj is builtins.range:
        ctx.fail(node, "range() is only allowed as the iterable of a for loop", "Call")
    if obj is builtins.bool or obj is builtins.int or obj is builtins.float:
        return _python_conversion(ctx, node, obj, text)
    scalar = as_scalar_type(obj) if isinstance(obj, type) else None
    if scalar is not None:
        return _cast(ctx, node, scalar, text)
    if obj is builtins.abs:
        return _abs(ctx, node)
    if obj is builtins.min or obj is builtins.max:
        return _min_max(ctx, node, "min" if obj is builtins.min else "max")
    intrinsic = intrinsic_of(obj)
    if intrinsic is not None:
        return _intrinsic(ctx, node, intrinsic, text)
    from ..fusion import Unary

    if isinstance(obj, Unary):
        return _helper(ctx, node, obj.fn, text, Ty(obj.T))
    if isinstance(obj, staticmethod):
        obj = obj.__func__
    if isinstance(obj, types.FunctionType):
        return _helper(ctx, node, obj, text, None)
    hint = ""
    if getattr(obj, "__module__", None) in ("math", "numpy") or obj is builtins.print:
        hint = " (use g.math.* for math functions; print is not available on devices)"
    ctx.fail(node, f"call of unknown function '{text}'{hint}", "Call")


def _args(ctx: FnContext, node: ast.Call, text: str, count: int | None = None,
          at_least: int | None = None) -> list[Value]:
    if count is not None and len(node.args) != count:
        ctx.fail(node, f"'{text}' takes {count} argument{'s' if count != 1 else ''}, "
                       f"got {len(node.args)}", "Call")
    if at_least is not None and len(node.args) < at_least:
        ctx.fail(node, f"'{text}' takes at least {at_least} arguments, got {len(node.args)}",
                 "Call")
    values = [lower_expr(ctx, a) for a in node.args]
    for v, a in zip(values, node.args, strict=True):
        if not is_scalar(v.type):
            ctx.fail(a, f"'{text}' takes numbers, got a {v.ty.describe()}", "Call")
    return values


def _cast(ctx: FnContext, node: ast.Call, t: type, text: str) -> Value:
    (v,) = _args(ctx, node, text, 1)
    if t is np.bool_:
        return materialize(ctx.typing(node, ops.truth, v))
    if v.is_weak_const:
        return Value(ctx.typing(node, const_of, v.py, t))
    if v.type is not t:
        return Value(Cast(v.expr, t))
    return Value(v.expr)


def _python_conversion(ctx: FnContext, node: ast.Call, fn: type, text: str) -> Value:
    """``bool(x)``, ``int(x)``, ``float(x)``: Python's conversions, giving Python (weak)
    numbers. ``int`` truncates toward zero; ``bool`` is ``x != 0``; ``float("inf")`` and
    ``float("nan")`` are constants."""
    if (fn is builtins.float and len(node.args) == 1 and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)):
        try:
            return ctx.typing(node, weak_const, float(node.args[0].value))
        except ValueError:
            ctx.fail(node, f"float({node.args[0].value!r}) is not a number", "Call")
    (v,) = _args(ctx, node, text, 1)
    if fn is builtins.bool:
        return ctx.typing(node, ops.truth, v)
    if v.is_weak_const:
        return ctx.typing(node, weak_const, fn(v.py))
    kind, t = ("int", i64) if fn is builtins.int else ("float", f64)
    expr = v.expr if v.type is t else Cast(v.expr, t)
    return Value(expr, kind)


def _abs(ctx: FnContext, node: ast.Call) -> Value:
    (v,) = _args(ctx, node, "abs", 1)
    if v.is_weak_const:
        return ctx.typing(node, weak_const, abs(v.py))  # type: ignore[arg-type]
    if v.type is np.bool_:
        return ctx.typing(node, coerce, v, Ty(i64, "int")) if v.weak else v
    return Value(CallIntrinsic("abs", (v.expr,), v.type), v.weak)


def _min_max(ctx: FnContext, node: ast.Call, which: str) -> Value:
    """Python's ``min``/``max`` folded left to right over the common promoted type (the first
    argument wins ties and NaN comparisons, as in Python)."""
    values = _args(ctx, node, which, at_least=2)
    t = values[0].ty
    for v in values[1:]:
        t = ctx.typing(node, join, t, v.ty)
    if all(v.is_weak_const for v in values):
        pick = builtins.min if which == "min" else builtins.max
        return ctx.typing(node, coerce, ctx.typing(node, weak_const, pick(v.py for v in values)), t)
    conv = [ctx.typing(node, coerce, v, t) for v in values]
    acc = conv[0].expr
    for v in conv[1:]:
        acc = CallIntrinsic(which, (acc, v.expr), t.type)  # type: ignore[arg-type]
    return Value(acc, t.weak)


def _intrinsic(ctx: FnContext, node: ast.Call, name: str, text: str) -> Value:
    count = 2 if name in BINARY_INTRINSICS else 1
    values = _args(ctx, node, text, count)
    t = values[0].ty
    for v in values[1:]:
        t = ctx.typing(node, join, t, v.ty)
    ft = t.type if t.weak is None and is_float(t.type) else f64
    args = tuple(ctx.typing(node, coerce, v, Ty(ft)).expr for v in values)
    rtype = np.bool_ if name in PREDICATES else ft
    return Value(CallIntrinsic(name, args, rtype))  # type: ignore[arg-type]


def _helper(ctx: FnContext, node: ast.Call, fn: types.FunctionType, text: str,
            ret: Ty | None) -> Value:
    values = [lower_expr(ctx, a) for a in node.args]
    arg_tys = [v.ty for v in values]
    if ctx.lower_helper is None:
        ctx.fail(node, f"cannot call '{text}' here", "Call")
    spec = ctx.lower_helper(ctx, node, fn, arg_tys, ret)
    args = []
    for v, (_, t) in zip(values, spec.function.args, strict=True):
        try:
            args.append(coerce(v, Ty(t, v.weak)).expr if v.weak else v.expr)
        except TypingError as exc:
            ctx.fail(node, f"argument of '{text}': {exc}", "Call")
    return Value(CallFunction(spec.function.name, tuple(args), spec.function.ret), spec.ret.weak)




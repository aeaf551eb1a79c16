"""Calls in kernel code: casts, ``bool/int/float``, ``abs/min/max``, ``g.math`` intrinsics
and calls of other kernel functions (lowered as helper IR functions)."""

from __future__ import annotations

import ast
import builtins
import types
from functools import partial
from typing import Any

import numpy as np

from ..ir.intrinsics import BY_NAME
from ..ir.nodes import CallFunction, CallIntrinsic, Cast, Const
from ..types import as_scalar_type, f64, i64, is_float
from . import memory, ops
from .choice import Choice, Operand, choose, distribute
from .context import FnContext, Static
from .expressions import lower_any, lower_operand
from .kmath import ARITY, PREDICATES, intrinsic_of
from .values import (
    Ty,
    TypingError,
    Value,
    coerce,
    const_of,
    fold_conversion,
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
    builtin = memory.builtin_call(ctx, node, obj, text)
    if builtin is not None:
        return builtin
    from ..fusion import Fused, Unary

    owner = getattr(obj, "__self__", None)
    if isinstance(owner, (Fused, Unary)) and getattr(obj, "__name__", "") in ("eval",
                                                                                "__call__"):
        obj = owner  # Pipeline.eval(x, p): the op itself
    if isinstance(obj, Unary):
        return _helper(ctx, node, obj.fn, text, Ty(obj.T))
    if isinstance(obj, Fused):
        return _fused(ctx, node, obj, text)
    if isinstance(obj, staticmethod):
        obj = obj.__func__
    if isinstance(obj, types.FunctionType):
        return _helper(ctx, node, obj, text, None)
    hint = ""
    if getattr(obj, "__module__", None) in ("math", "numpy") or obj is builtins.print:
        hint = " (use g.math.* for math functions; print is not available on devices)"
    ctx.fail(node, f"call of unknown function '{text}'{hint}", "Call")


def _args(ctx: FnContext, node: ast.Call, text: str, count: int | None = None,
          at_least: int | None = None) -> list[Operand]:
    if count is not None and len(node.args) != count:
        ctx.fail(node, f"'{text}' takes {count} argument{'s' if count != 1 else ''}, "
                       f"got {len(node.args)}", "Call")
    if at_least is not None and len(node.args) < at_least:
        ctx.fail(node, f"'{text}' takes at least {at_least} arguments, got {len(node.args)}",
                 "Call")
    values = [lower_operand(ctx, a) for a in node.args]
    for v, a in zip(values, node.args, strict=True):
        if isinstance(v, Value) and not is_scalar(v.type):
            ctx.fail(a, f"'{text}' takes numbers, got a {v.ty.describe()}", "Call")
    return values


def _cast(ctx: FnContext, node: ast.Call, t: type, text: str) -> Operand:
    """``g.T(x)``: each alternative of a Choice is converted on its own (exact)."""
    (v,) = _args(ctx, node, text, 1)

    def one(x: Value) -> Value:
        if t is np.bool_:
            return materialize(ops.truth(x))
        if x.is_weak_const:
            return Value(const_of(x.py, t))  # type: ignore[arg-type]
        return Value(x.expr if x.type is t else Cast(x.expr, t))

    return ctx.typing(node, distribute, one, v)


def _python_conversion(ctx: FnContext, node: ast.Call, fn: type, text: str) -> Operand:
    """``bool(x)``, ``int(x)``, ``float(x)``: Python's conversions, giving Python (weak)
    numbers. ``int`` truncates toward zero; ``bool`` is ``x != 0``; ``float("inf")`` and
    ``float("nan")`` are constants; a constant folds to its Python value."""
    if (fn is builtins.float and len(node.args) == 1 and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)):
        try:
            return ctx.typing(node, weak_const, float(node.args[0].value))
        except ValueError:
            ctx.fail(node, f"float({node.args[0].value!r}) is not a number", "Call")
    (v,) = _args(ctx, node, text, 1)
    kind, t = ("int", i64) if fn is builtins.int else ("float", f64)

    def one(x: Value) -> Value:
        if fn is builtins.bool:  # always a Python bool, whatever the argument
            b = ops.truth(x)
            if isinstance(b.expr, Const):
                return weak_const(bool(b.expr.value))
            return Value(b.expr, "bool")
        if isinstance(x.expr, Const):
            return fold_conversion(fn, x.expr.value)
        return Value(x.expr if x.type is t else Cast(x.expr, t), kind)  # type: ignore[arg-type]

    return ctx.typing(node, distribute, one, v)


def _abs_one(v: Value) -> Value:
    if v.is_weak_const:
        return weak_const(abs(v.py))  # type: ignore[arg-type]
    if v.type is np.bool_:
        return coerce(v, Ty(i64, "int")) if v.weak else v
    return Value(CallIntrinsic("abs", (v.expr,), v.type), v.weak)  # type: ignore[arg-type]


def _abs(ctx: FnContext, node: ast.Call) -> Operand:
    (v,) = _args(ctx, node, "abs", 1)
    return ctx.typing(node, distribute, _abs_one, v)


def _pick(which: str, text: str, acc: Value, v: Value) -> Operand:
    """Python's ``min(acc, v)``/``max(acc, v)``: ``v`` replaces ``acc`` only if ``v < acc``
    (``v > acc``), so the first argument wins ties and NaN comparisons."""
    if acc.is_weak_const and v.is_weak_const:
        pick = builtins.min if which == "min" else builtins.max
        return weak_const(pick(acc.py, v.py))  # type: ignore[type-var]
    if acc.ty == v.ty:
        return Value(CallIntrinsic(which, (acc.expr, v.expr), acc.type), acc.weak)  # type: ignore[arg-type]
    cond = ops.compare("lt" if which == "min" else "gt", v, acc)
    if cond.is_weak_const:
        return v if cond.py else acc
    return choose(cond.expr, v, acc, text)


def _min_max(ctx: FnContext, node: ast.Call, which: str) -> Operand:
    """Python's ``min``/``max`` folded left to right; arguments of different types give a
    Choice of the arguments themselves, unchanged (see :mod:`.choice`)."""
    values = _args(ctx, node, which, at_least=2)
    text = ast.unparse(node)
    acc = values[0]
    for v in values[1:]:
        acc = ctx.typing(node, distribute, partial(_pick, which, text), acc, v)
    return acc


def _intrinsic(ctx: FnContext, node: ast.Call, name: str, text: str) -> Operand:
    values = _args(ctx, node, text, ARITY[name])
    if BY_NAME[name].kind == "library":
        return _library(ctx, node, name, text, values[0])

    def one(*args: Value) -> Value:
        t = args[0].ty
        for v in args[1:]:
            t = join(t, v.ty)
        ft = t.type if t.weak is None and is_float(t.type) else f64
        conv = tuple(coerce(v, Ty(ft)).expr for v in args)
        rtype = np.bool_ if name in PREDICATES else ft
        return Value(CallIntrinsic(name, conv, rtype))  # type: ignore[arg-type]

    return ctx.typing(node, distribute, one, *values)


def _library(ctx: FnContext, node: ast.Call, name: str, text: str, v: Operand) -> Operand:
    """``g.math.<name>(x)`` of a ``library`` entry: the kernel-language function
    ``special.<name>_f64`` called on ``x`` converted to f64, its result converted back to
    ``x``'s float type (f64 for integers and Python numbers), as the oracle computes it."""
    from . import special

    fn = getattr(special, f"{name}_f64")

    def one(x: Value) -> Value:
        ft = x.type if x.weak is None and is_float(x.type) else f64
        arg = coerce(x, Ty(f64))
        result = _call_helper(ctx, node, fn, text, None, [arg])
        return Value(result.expr if ft is f64 else Cast(result.expr, ft))

    return ctx.typing(node, distribute, one, v)


def _helper(ctx: FnContext, node: ast.Call, fn: types.FunctionType, text: str,
            ret: Ty | None) -> Operand:
    """A call of a kernel function; called once per alternative of a Choice argument."""
    operands = [lower_operand(ctx, a) for a in node.args]
    if not any(isinstance(v, Choice) for v in operands):
        return _call_helper(ctx, node, fn, text, ret, operands)  # type: ignore[arg-type]
    return ctx.typing(node, distribute,
                      lambda *vs: _call_helper(ctx, node, fn, text, ret, list(vs)), *operands)


def _call_helper(ctx: FnContext, node: ast.Call, fn: types.FunctionType, text: str,
                 ret: Ty | None, values: list[Value]) -> Value:
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





def _fused(ctx: FnContext, node: ast.Call, fused: Any, text: str) -> Operand:
    """``Pipeline.eval(x, p)`` of a ``g.Fused``: each stage called in turn and its result
    converted to ``T``, exactly as the Python ``Fused.eval`` does (the first stage sees
    ``x`` unconverted); the stages are inlined like any helper, so a map over it is still
    one loop."""
    if len(node.args) != 2:
        ctx.fail(node, f"'{text}' takes (x, p), got {len(node.args)} arguments", "Call")
    operands = [lower_operand(ctx, a) for a in node.args]
    ret = Ty(fused.T)

    def run(x: Value, p: Value) -> Value:
        value = x
        for fn, _label in fused.stages():
            value = _call_helper(ctx, node, fn, text, ret, [value, p])
        return value

    return ctx.typing(node, distribute, run, *operands)

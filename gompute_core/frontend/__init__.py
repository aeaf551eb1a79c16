"""The kernel-language frontend: Python functions to typed IR.

``lower(fn, arg_types, ret, name)`` is the one entry point (see its docstring);
``kmath.math`` is the ``g.math`` namespace. The language itself is described
in ``docs/kernel-language.md``.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from ..errors import InvalidArgument, KernelSyntaxError
from ..ir.nodes import (
    ArrayType,
    CallFunction,
    Cast,
    Expr,
    Function,
    IRType,
    Return,
    StructType,
    Var,
)
from ..types import as_scalar_type
from .context import Program
from .lowering import lower_function
from .source import parse_function
from .values import Ty

__all__ = ["lower", "lower_raw"]


def lower(fn: Any, arg_types: Sequence[IRType | None], ret: Any, name: str
          ) -> tuple[Function, ...]:
    """Lower a kernel function to IR functions.

    ``fn`` is a plain function, a lambda, a ``g.Fused``/``g.Unary`` object or
    their bound ``.eval``. ``arg_types`` gives each parameter's IR type, or None
    for a parameter the spec binds nothing to (it must be unused; it is dropped
    from the IR arguments). ``ret`` is the scalar type the result is converted
    to (None: inferred from the returns; a ``TupleType`` for a function returning several
    values). The result lists every function
    needed, callees before callers, the main function (named ``name``) last.
    Raises KernelSyntaxError (with file:line) for code outside the language.
    """
    from ..fusion import Fused, Unary

    if not name.isidentifier() or not name.isascii():
        raise InvalidArgument(f"IR function name {name!r} is not an identifier")
    ret_t = None
    if ret is not None:
        ret_t = as_scalar_type(ret)
        if ret_t is None:
            raise InvalidArgument(f"return type must be a scalar type, got {ret!r}")
    tys: list[Ty | None] = []
    for k, t in enumerate(arg_types):
        if t is None or isinstance(t, (StructType, ArrayType)):
            tys.append(None if t is None else Ty(t))
            continue
        st = as_scalar_type(t)
        if st is None:
            raise InvalidArgument(f"argument type #{k} must be a scalar type, a params "
                                  f"StructType or None, got {t!r}")
        tys.append(Ty(st))
    program = Program(name)
    owner = getattr(fn, "__self__", None) if inspect.ismethod(fn) else None
    if isinstance(owner, (Fused, Unary)) and fn.__name__ in ("eval", "__call__"):
        fn = owner
    if isinstance(fn, Unary) and (ret_t is None or ret_t is fn.T):
        main = lower_function(program, parse_function(fn.fn), tys, Ty(fn.T), name)
        return _reachable(program, main.function)
    if isinstance(fn, Unary):
        fn = Fused(fn.T, fn.P, [fn])
    if isinstance(fn, Fused):
        main_fn = _lower_fused(program, fn, tys, ret_t, name)
        program.functions[name] = main_fn
        return _reachable(program, main_fn)
    main = lower_function(program, parse_function(fn), tys,
                          None if ret_t is None else Ty(ret_t), name)
    return _reachable(program, main.function)


def lower_raw(fn: Any, arg_types: Sequence[IRType], name: str) -> tuple[Function, ...]:
    """Lower a raw kernel's function: its parameters have ``arg_types`` (pointers, scalars,
    one params record); the result lists the helpers it calls, then the kernel itself
    (named ``name``, returning nothing)."""
    if not name.isidentifier() or not name.isascii():
        raise InvalidArgument(f"IR function name {name!r} is not an identifier")
    program = Program(name)
    main = lower_function(program, parse_function(fn), [Ty(t) for t in arg_types], None, name,
                          raw=True)
    return _reachable(program, main.function)


def _lower_fused(program: Program, fused: Any, tys: list[Ty | None], ret: type | None,
                 name: str) -> Function:
    """ONE function calling each stage in turn; each stage's result is cast to ``T``."""
    if len(tys) != 2:
        raise KernelSyntaxError(f"a Fused function takes (x, p); the spec passes {len(tys)} "
                                "arguments", construct="Fused")
    t = Ty(fused.T)
    x = Var("x", fused.T)
    p_ty = tys[1]
    args: list[tuple[str, IRType]] = [("x", fused.T)]
    if p_ty is not None:
        args.append(("p", p_ty.type))
    value: Expr = x
    for stage_fn, label in fused.stages():
        spec = _stage(program, stage_fn, label, [t, p_ty])
        call_args: tuple[Expr, ...] = (value,) if p_ty is None else (value, Var("p", p_ty.type))
        value = CallFunction(spec.name, call_args, spec.ret)
    if ret is not None and ret is not fused.T:
        value = Cast(value, ret)
    return Function(name, tuple(args), ret or fused.T, (), (Return(value),),
                    source=repr(fused))


def _stage(program: Program, fn: Any, label: str, tys: list[Ty | None]) -> Function:
    src = parse_function(fn)
    key = (src.fn, tuple(tys), tys[0])
    spec = program.specializations.get(key)
    if spec is None:
        spec = lower_function(program, src, tys, tys[0], program.helper_name(label))
        program.specializations[key] = spec
        program.functions[spec.function.name] = spec.function
    return spec.function


def _reachable(program: Program, main: Function) -> tuple[Function, ...]:
    """``main`` and every function it calls, callees first (depth-first post-order)."""
    out: list[Function] = []
    seen: set[str] = set()

    def visit(fn: Function) -> None:
        if fn.name in seen:
            return
        seen.add(fn.name)
        for callee in _callees(fn):
            visit(program.functions[callee])
        out.append(fn)

    visit(main)
    return tuple(out)


def _callees(fn: Function) -> list[str]:
    names: list[str] = []

    def walk(obj: Any) -> None:
        # children first: callees are listed in evaluation order
        if isinstance(obj, tuple):
            for item in obj:
                walk(item)
        elif hasattr(obj, "__dataclass_fields__") and not isinstance(obj, StructType):
            for f in obj.__dataclass_fields__:
                walk(getattr(obj, f))
        if isinstance(obj, CallFunction):
            names.append(obj.func)

    walk(fn.body)
    return names

"""Lowering of a :class:`~gompute_core.specs.Spec` to a :class:`KernelIR`.

The frontend lowers each Python function (element function, reduce
``combine`` and ``pre``); this module assembles them with the kind, value
types, params struct and identity. IR function names are derived from the
spec name: ``<name>_fn`` (element), ``<name>_combine``, ``<name>_pre``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .errors import KernelSyntaxError
from .ir.kernel import KernelIR
from .ir.nodes import Const, Function, IRType
from .types import ScalarType, u64

if TYPE_CHECKING:
    from .specs import Spec


def _arity(fn: Any) -> int:
    from .specs import _positional_arity

    return _positional_arity("lower", "function", fn)


def _lower_one(fn: Callable[..., Any], values: Sequence[IRType], params: IRType | None,
               ret: ScalarType | None, name: str) -> tuple[Function, ...]:
    """Lower ``fn(*values[, p])``; the ``p`` slot is None (unused) when there are no params."""
    from .frontend import lower

    arg_types: list[IRType | None] = list(values)
    if _arity(fn) == len(values) + 1:
        arg_types.append(params)
    return tuple(lower(fn, arg_types, ret, name))


def _merge(*groups: tuple[Function, ...]) -> tuple[Function, ...]:
    """Concatenate function lists, keeping one copy of helpers shared between them."""
    out: dict[str, Function] = {}
    for group in groups:
        for f in group:
            seen = out.get(f.name)
            if seen is not None and seen != f:
                raise KernelSyntaxError(
                    f"two different kernel functions lower to the IR name {f.name!r} "
                    f"({seen.source} and {f.source}); rename one of them",
                )
            out[f.name] = f
    return tuple(out.values())


def lower_spec(spec: Spec) -> KernelIR:
    """Lower every function of ``spec`` and assemble its KernelIR."""
    params: IRType | None = None
    if spec.params is not None:
        from .abi import struct_type_of

        params = struct_type_of(spec.params)
    common: dict[str, Any] = dict(
        name=spec.name, kind=spec.kind, block_size=spec.block_size,
        value_types=spec.value_types, params=params,
    )
    kind = spec.kind
    if kind in ("gather", "scatter"):
        return KernelIR(**common)
    if kind == "reduce":
        T = spec.T
        combine = _lower_one(spec.combine, (T, T), None, T, f"{spec.name}_combine")
        pre: tuple[Function, ...] = ()
        if spec.pre is not None:
            pre = _lower_one(spec.pre, (T,), params, T, f"{spec.name}_pre")
        return KernelIR(
            **common, functions=_merge(combine, pre), element=f"{spec.name}_combine",
            pre=f"{spec.name}_pre" if pre else None,
            identity=Const(spec.identity, T), reassociate=spec.preset is not None,
        )
    if kind == "map" or kind == "map_indexed":
        values: tuple[IRType, ...] = (spec.T,) if kind == "map" else (spec.T, u64)
        ret = spec.T
    elif kind == "map_to":
        values, ret = (spec.In,), spec.Out
    else:
        values, ret = (spec.A, spec.B), spec.Out
    fns = _lower_one(spec.fn, values, params, ret, f"{spec.name}_fn")
    return KernelIR(**common, functions=fns, element=f"{spec.name}_fn")

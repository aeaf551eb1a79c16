"""Lowering of a :class:`~gompute_core.specs.Spec` to a :class:`KernelIR`.

The frontend lowers each Python function (element function, reduce
``combine`` and ``pre``); the spec's kind (:meth:`gompute_core.kinds.base.Kind.lower`)
assembles them with the value types, params struct and identity, from the helpers
here. IR function names are derived from the spec name: ``<name>_fn`` (element),
``<name>_combine``, ``<name>_pre``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .errors import KernelSyntaxError
from .ir.entry import ElementLoop
from .ir.kernel import KernelIR
from .ir.nodes import Function, IRType
from .types import ScalarType

if TYPE_CHECKING:
    from .specs import Spec


def _arity(fn: Any) -> int:
    from .specs import _positional_arity

    return _positional_arity("lower", "function", fn)


def lower_function(fn: Callable[..., Any], values: Sequence[IRType], params: IRType | None,
                   ret: ScalarType | None, name: str) -> tuple[Function, ...]:
    """Lower ``fn(*values[, p])``; the ``p`` slot is None (unused) when there are no params."""
    from .frontend import lower

    arg_types: list[IRType | None] = list(values)
    if _arity(fn) == len(values) + 1:
        arg_types.append(params)
    return tuple(lower(fn, arg_types, ret, name))


def merge_functions(*groups: tuple[Function, ...]) -> tuple[Function, ...]:
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


def lower_element(spec: Spec, common: dict[str, Any], values: tuple[IRType, ...],
                  loop: ElementLoop) -> KernelIR:
    """The KernelIR of an element kind whose entry is ``loop``: ``spec.fn(*values[, p])``
    lowered as ``loop.function``, returning the output's type."""
    fns = lower_function(spec.fn, values, common["params"], loop.output.type,  # type: ignore[arg-type]
                         loop.function)
    return KernelIR(**common, functions=fns, element=loop.function, entry=loop)


def lower_spec(spec: Spec) -> KernelIR:
    """Lower every function of ``spec`` and assemble its KernelIR (by its kind)."""
    params: IRType | None = None
    if spec.params is not None:
        from .abi import struct_type_of

        params = struct_type_of(spec.params)
    common: dict[str, Any] = dict(
        name=spec.name, kind=spec.kind, block_size=spec.block_size,
        value_types=spec.value_types, params=params,
        entry_args=spec.kind_object.entry_args,
    )
    return spec.kind_object.lower(spec, common)

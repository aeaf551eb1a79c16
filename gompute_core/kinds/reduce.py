"""The ``reduce`` kind: fold ``pre(x, p)`` (or ``x``) with an associative ``combine``.

Constructors ``g.reduce`` and the presets ``g.sum``, ``g.min``, ``g.max``,
``g.any``, ``g.all``; entry ``(const T* data, u64 n, T* partials, P p)``: one
partial per block (``gridDim.x`` blocks, grid-stride over ``n``);
``launch(data, n, partials, blocks, p)``; ``run(data, p) -> T`` (the host plan
folds the partials with :meth:`ReduceKind.fold`). Checked (``checked=True``), the spec
runs as the core's raw kernels instead (:mod:`.reduce_checked`).
"""

from __future__ import annotations

from collections.abc import Callable
from types import MethodType
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidArgument
from ..ir.entry import BlockReduce, EntryArray
from ..ir.kernel import KernelIR
from ..ir.nodes import Const, Function
from ..lowering import lower_function, merge_functions
from ..presets import PRESET_COMBINE
from ..specs import (
    Preset,
    Spec,
    _check_arity,
    _check_params,
    _check_type,
    _identity_value,
    _new,
    _positional_arity,
    _where,
)
from ..types import is_float
from .base import Kind, launch_count, register

if TYPE_CHECKING:
    from ..backend.buffer import Buffer

MAX_REDUCE_BLOCKS = 1024
"""Most partials one reduce launch writes."""


def refused_blocks(blocks: int, n: int) -> InvalidArgument:
    """The refusal of a launch asking for ``blocks`` partials of ``n`` elements."""
    return InvalidArgument(f"launch: blocks must be in 1..{MAX_REDUCE_BLOCKS} (0 only with "
                           f"n == 0), got blocks={blocks}, n={n}")


def _launch_reduce(prog: Any, data: Buffer, n: int, partials: Buffer, blocks: int,
                   p: Any = None) -> None:
    n, blocks = launch_count(n, "n"), launch_count(blocks, "blocks")
    with prog._lock:
        if p is not prog._last_p:
            prog._set_params(p)
        if blocks == 0 and n == 0:
            return
        if not 1 <= blocks <= MAX_REDUCE_BLOCKS:
            raise refused_blocks(blocks, n)
        prog._go(blocks, (prog._operand(data, "data", n, "T"), n,
                          prog._operand(partials, "partials", blocks, "T")))


def _run_reduce(k: Any, data: Any, p: Any = None) -> Any:
    d = k.checks.array(data, "data", k._types["T"], False, k._at)
    k.checks.params(p, k._P, k.spec.name)
    if d.size == 0:
        return k.spec.T(k.spec.identity)
    return k._runner.reduce(d, p)


class ReduceKind(Kind):
    """An associative fold; the host folds one partial per block."""

    name = "reduce"
    roles = ("T",)
    run_args = ("data", "p")
    entry_args = (("data", "pointer"), ("n", "u64"), ("partials", "pointer"))
    checkable = True

    def open(self, device: Any, spec: Spec, checked: bool = False) -> Any:
        """Checked, a :class:`~.reduce_checked.CheckedReduce` (the core's raw kernels, which
        fold in another order than the backend's entry: float results may differ in their
        last bits); None (the backend's entry) else."""
        if not checked:
            return None
        from .reduce_checked import CheckedReduce

        return CheckedReduce(device, spec)

    def lower(self, spec: Spec, common: dict[str, Any]) -> KernelIR:
        T = spec.T
        combine = lower_function(spec.combine, (T, T), None, T, f"{spec.name}_combine")
        pre: tuple[Function, ...] = ()
        if spec.pre is not None:
            pre = lower_function(spec.pre, (T,), common["params"], T, f"{spec.name}_pre")
        entry = self.block_reduce(T, f"{spec.name}_combine", Const(spec.identity, T),
                                  f"{spec.name}_pre" if pre else None, spec.preset is not None)
        return KernelIR(
            **common, functions=merge_functions(combine, pre),
            element=entry.combine, pre=entry.pre, identity=entry.identity,
            reassociate=entry.reassociate, entry=entry,
        )

    def block_reduce(self, T: Any, combine: str, identity: Const, pre: str | None = None,
                     reassociate: bool = False) -> BlockReduce:
        """The entry of a fold of ``T`` elements with IR function ``combine`` (and ``pre``)
        over this kind's :attr:`~Kind.entry_args`: the first pointer is the input, the
        second the partials, the ``u64`` the count."""
        data, partials = (name for name, arg in self.entry_args if arg == "pointer")
        count = next(name for name, arg in self.entry_args if arg == "u64")
        return BlockReduce(count, EntryArray(data, T), EntryArray(partials, T), combine,
                           identity, pre, reassociate)

    def launch(self, program: Any) -> Callable[..., None]:
        return MethodType(_launch_reduce, program)

    def run(self, kernel: Any) -> Callable[..., Any]:
        return MethodType(_run_reduce, kernel)

    def fold(self, spec: Spec, partials: np.ndarray) -> np.generic:
        """Fold ``partials`` (one per block, dtype ``T``) into one ``T`` scalar.

        Presets use NumPy's reductions (``min``/``max`` propagate NaN); a
        custom ``combine`` runs as plain Python on NumPy scalars from
        ``identity``. An empty ``partials`` gives the identity.
        """
        T = spec.T
        ident = T(spec.identity)
        if spec.preset == "sum":
            return np.add.reduce(partials, dtype=T, initial=ident)
        if spec.preset == "min":
            return np.minimum.reduce(partials, dtype=T, initial=ident)
        if spec.preset == "max":
            return np.maximum.reduce(partials, dtype=T, initial=ident)
        if spec.preset == "any":
            return T(1) if np.any(partials != 0) else T(0)
        if spec.preset == "all":
            return T(1) if np.all(partials != 0) else T(0)
        combine = spec.combine
        acc = ident
        with np.errstate(all="ignore"):
            for x in partials:
                acc = T(combine(acc, x))
        return acc


REDUCE = register(ReduceKind())


def reduce(name: str, T: Any, P: type | None, combine: Callable[..., Any], identity: Any,
           pre: Callable[..., Any] | None = None, *, block_size: int = 256) -> Spec:
    """Fold ``pre(x, p)`` (or ``x``) of every element with an associative ``combine(a, b)``.

    ``run`` returns a ``T`` scalar; ``identity`` for empty input.
    """
    ctor = f"g.reduce({name!r})"
    t = _check_type(ctor, "T", T)
    P = _check_params(ctor, P)
    n = _positional_arity(ctor, "combine", combine)
    if n != 2:
        raise InvalidArgument(f"{ctor}: combine {_where(combine)} takes {n} argument(s); "
                              "expected exactly 2: combine(a, b)")
    if pre is not None:
        _check_arity(ctor, "pre", pre, "pre(x, p)", 1, P is not None)
    ident = _identity_value(ctor, identity, t)
    return _new(ctor, name, REDUCE, block_size, params=P, T=t, combine=combine,
                identity=ident, pre=pre)


def _preset(preset: Preset, name: str, T: Any, P: type | None,
            pre: Callable[..., Any] | None, block_size: int) -> Spec:
    ctor = f"g.{preset}({name!r})"
    t = _check_type(ctor, "T", T, allow_bool=False, ints_only=preset in ("any", "all"))
    P = _check_params(ctor, P)
    if pre is not None:
        _check_arity(ctor, "pre", pre, "pre(x, p)", 1, P is not None)
    if preset == "sum" or preset == "any":
        identity: int | float = 0
    elif preset == "all":
        identity = 1
    elif is_float(t):
        identity = float("inf") if preset == "min" else float("-inf")
    else:
        info = np.iinfo(t)
        identity = int(info.max) if preset == "min" else int(info.min)
    return _new(ctor, name, REDUCE, block_size, params=P, T=t,
                combine=PRESET_COMBINE[preset], identity=identity, pre=pre, preset=preset)


def sum(name: str, T: Any, P: type | None = None, pre: Callable[..., Any] | None = None, *,
        block_size: int = 256) -> Spec:
    """Sum of ``pre(x, p)`` (or ``x``); integers wrap; reassociation allowed."""
    return _preset("sum", name, T, P, pre, block_size)


def min(name: str, T: Any, P: type | None = None, pre: Callable[..., Any] | None = None, *,
        block_size: int = 256) -> Spec:
    """Minimum; identity ``+inf`` for floats, the type's max for integers."""
    return _preset("min", name, T, P, pre, block_size)


def max(name: str, T: Any, P: type | None = None, pre: Callable[..., Any] | None = None, *,
        block_size: int = 256) -> Spec:
    """Maximum; identity ``-inf`` for floats, the type's min for integers."""
    return _preset("max", name, T, P, pre, block_size)


def any(name: str, T: Any, P: type | None = None, pre: Callable[..., Any] | None = None, *,
        block_size: int = 256) -> Spec:
    """``T(1)`` if any ``pre(x, p)`` (or ``x``) is non-zero, else ``T(0)``; integer T only."""
    return _preset("any", name, T, P, pre, block_size)


def all(name: str, T: Any, P: type | None = None, pre: Callable[..., Any] | None = None, *,
        block_size: int = 256) -> Spec:
    """``T(1)`` if every ``pre(x, p)`` (or ``x``) is non-zero (and for empty input)."""
    return _preset("all", name, T, P, pre, block_size)

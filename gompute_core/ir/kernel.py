"""KernelIR: one spec lowered to what a renderer needs, and its stable digest.

Element-function signatures per kind (``p`` is present only when the kernel
has params, i.e. ``params is not None``):

* map: ``element(x: T, p) -> T``; entry ``(T* data, u64 n, P p)``
* map_indexed: ``element(x: T, i: u64, p) -> T``; entry ``(T* data, u64 n, P p)``
* map_to: ``element(x: In, p) -> Out``; entry ``(const In* in, Out* out, u64 n, P p)``
* zip: ``element(a: A, b: B, p) -> Out``;
  entry ``(const A* a, const B* b, Out* out, u64 n, P p)``
* reduce: ``element(a: T, b: T) -> T`` (the combine) and optionally
  ``pre(x: T, p) -> T``; entry ``(const T* data, u64 n, T* partials, P p)``
* gather: no function, ``out[i] = src[idx[i]]``;
  entry ``(const T* src, const Idx* idx, T* out, u64 n, u64 bound)``
* scatter: no function, ``out[idx[i]] = src[i]``;
  entry ``(const T* src, const Idx* idx, T* out, u64 n, u64 bound)``

The entry point's symbol is the spec name (``extern "C"``). For gather,
``bound`` is ``len(src)``; for scatter ``len(out)``; indices outside
``[0, bound)`` (negative included) are skipped. A reduce launch writes one
partial per block (``gridDim.x`` blocks, grid-stride over ``n``) which the host
folds with ``combine`` starting from ``identity``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal

from ..types import ScalarType
from .entry import BlockReduce, ElementLoop, IndexedMove
from .nodes import Const, Function, StructType

Kind = str
"""A kernel's kind: a spec kind's name (:mod:`gompute_core.kinds`) or :data:`RAW`."""
RAW: Kind = "raw"
"""The kind of a raw kernel's KernelIR: ``functions[-1]`` (named ``name``) is the entry
itself, its arguments the kernel's (pointers, scalars, params records, in order),
``block`` the declared block shape or None; no value types, params or element."""

EntryArgKind = Literal["pointer", "u64"]
"""An entry argument before the params struct: a device pointer or a ``u64`` (8 bytes)."""


def __getattr__(name: str) -> Any:
    """``KINDS`` and ``ENTRY_ARGS``, kept for backends written against them (deprecated):
    derived from the registered kinds (``gompute_core.kinds``), which own both now.

    ``KINDS``: the spec kinds' names (raw's is :data:`RAW`); ``ENTRY_ARGS``: each
    kind's entry arguments before the params struct (``Kind.entry_args``).
    """
    if name not in ("KINDS", "ENTRY_ARGS"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ..kinds import kinds

    if name == "KINDS":
        return tuple(k.name for k in kinds())
    return {k.name: k.entry_args for k in kinds()}


IR_VERSION = 1
"""Bumped whenever lowering changes in a way that must invalidate compile caches."""


@dataclass(frozen=True)
class KernelIR:
    """A spec lowered for the renderers: kind, value types, params and functions.

    ``value_types`` maps roles to scalar types: ``T`` (map, map_indexed,
    reduce, gather, scatter), ``In``/``Out`` (map_to), ``A``/``B``/``Out``
    (zip), ``Idx`` (gather, scatter). ``functions`` lists callees before callers.

    ``contract`` is the kernel's opt-in to floating-point contraction (``contract=True`` on
    ``g.Kernel``, ``g.compile`` or ``g.RawKernel``): the compiler may fuse ``a * b + c``
    into one fused multiply-add (one rounding instead of two), so results may differ
    between backends and from the oracle. Off by default: every operation rounds once,
    the same bits everywhere. It is part of the digest, hence of every cache key.

    ``entry_args`` are the entry point's arguments before the params struct, in ABI order
    (the kind's ``Kind.entry_args``, copied here so that the layers below the kinds lay
    out arguments from the kernel alone); empty for raw kernels.

    ``entry`` is the entry point's structure (:mod:`gompute_core.ir.entry`) when the kind
    builds it from the shared shapes, which every renderer implements once (the element
    kinds: an :class:`~gompute_core.ir.entry.ElementLoop`; reduce: a
    :class:`~gompute_core.ir.entry.BlockReduce`; gather and scatter: an
    :class:`~gompute_core.ir.entry.IndexedMove`); None for raw kernels.
    """

    name: str
    kind: Kind
    block_size: int
    value_types: tuple[tuple[str, ScalarType], ...]
    params: StructType | None
    functions: tuple[Function, ...] = ()
    element: str | None = None
    pre: str | None = None
    identity: Const | None = None
    reassociate: bool = False
    block: tuple[int, int, int] | None = None
    contract: bool = False
    entry_args: tuple[tuple[str, EntryArgKind], ...] = ()
    entry: ElementLoop | BlockReduce | IndexedMove | None = None
    _digest: str = field(default="", init=False, repr=False, compare=False)

    def value_type(self, role: str) -> ScalarType:
        """The scalar type playing ``role`` (``"T"``, ``"In"``, ``"Out"``, ``"A"``, ...)."""
        for r, t in self.value_types:
            if r == role:
                return t
        raise KeyError(f"kernel {self.name!r} ({self.kind}) has no value type {role!r}")

    def function(self, name: str) -> Function:
        """The IR function called ``name``."""
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(f"kernel {self.name!r} has no function {name!r}")

    def digest(self) -> str:
        """A stable hex digest of everything that affects generated code.

        Stable across processes and Python versions (built from ``repr`` of
        frozen dataclasses, NumPy type names and literal values, never from
        ``id`` or ``hash``). Compile caches key on it.
        """
        if not self._digest:
            text = f"gompute-ir/{IR_VERSION}\n{self!r}"
            object.__setattr__(self, "_digest", hashlib.sha256(text.encode()).hexdigest())
        return self._digest

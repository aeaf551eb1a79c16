"""Params records flattened into leaves: scalars and small strided arrays.

numba receives a params record as one argument per *leaf*: every scalar
field reached through struct fields only becomes a typed NumPy scalar, and
every scalar field reached through ``k`` fixed arrays becomes a ``k``-d
strided view of the packed bytes. Scalars arrive in registers (the loop
keeps them there, which keeps the loop vectorizable: no reload of params
through a pointer that may alias the data), dynamic array indexing still
works, and the host side needs nothing but the packed bytes
(:func:`gompute_core.abi.pack`), so every params shape the ABI accepts
(nested structs, arrays of structs, enums, bools, custom boundaries)
crosses the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gompute_core.backend import ParamsCache
from gompute_core.ir.kernel import KernelIR
from gompute_core.ir.nodes import ArrayType, IRType, StructType


@dataclass(frozen=True)
class Leaf:
    """One scalar field of a params type, possibly repeated through arrays.

    ``path`` holds the field names from the root (array levels are not
    named), ``shape``/``strides`` one entry per array level crossed, outer
    first; ``offset`` is the byte offset of the first element.
    """

    path: tuple[str, ...]
    dtype: np.dtype
    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]


def size_of(t: IRType) -> int:
    """Size in bytes of ``t`` in the packed params record."""
    if isinstance(t, StructType):
        return int(t.layout.size)  # type: ignore[attr-defined]
    if isinstance(t, ArrayType):
        return t.length * size_of(t.elem)
    return np.dtype(t).itemsize


def leaves(t: IRType) -> tuple[Leaf, ...]:
    """The leaves of ``t`` in declaration order (depth first)."""
    out: list[Leaf] = []

    def walk(t: IRType, path: tuple[str, ...], offset: int,
             shape: tuple[int, ...], strides: tuple[int, ...]) -> None:
        if isinstance(t, StructType):
            for f in t.layout.fields:  # type: ignore[attr-defined]
                walk(f.type, (*path, f.name), offset + f.offset, shape, strides)
        elif isinstance(t, ArrayType):
            walk(t.elem, path, offset, (*shape, t.length), (*strides, size_of(t.elem)))
        else:
            out.append(Leaf(path, np.dtype(t), offset, shape, strides))

    walk(t, (), 0, (), ())
    return tuple(out)


def is_aggregate(t: IRType) -> bool:
    """True for params structs and fixed arrays (passed as several leaves)."""
    return isinstance(t, (StructType, ArrayType))


class HostParams:
    """Turns a params object into the leaf arguments of a compiled kernel.

    ``args(p)`` checks ``p`` against the kernel and caches the leaves by
    identity for plain (frozen) params objects, so the common loop
    ``for ...: k.run(data, p)`` packs once (see
    :class:`~gompute_core.backend.ParamsCache`).
    """

    def __init__(self, kernel: KernelIR) -> None:
        struct = kernel.params
        self.leaves: tuple[Leaf, ...] = leaves(struct) if struct is not None else ()
        self.size = size_of(struct) if struct is not None else 0
        self.args: Callable[[Any], tuple[Any, ...]] = ParamsCache(kernel, self.from_bytes).get
        """Leaf arguments for the params object ``p`` (``()`` for a kernel without params)."""

    def from_bytes(self, raw: bytes) -> tuple[Any, ...]:
        """Leaf arguments read from the packed record ``raw`` (copied: the views stay valid)."""
        buf = np.frombuffer(bytearray(raw), np.uint8)
        args: list[Any] = []
        for leaf in self.leaves:
            view = np.ndarray(leaf.shape, leaf.dtype, buffer=buf, offset=leaf.offset,
                              strides=leaf.strides)
            args.append(view[()] if not leaf.shape else view)
        return tuple(args)

    def example(self) -> tuple[Any, ...]:
        """Leaf arguments of an all-zero record (to derive the compile signature)."""
        return self.from_bytes(bytes(self.size))

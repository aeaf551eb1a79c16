"""The elementwise kind's operand layout: NumPy broadcasting, element strides, collapsed
dimensions, memory spans and overlap, computed on the host before any launch.

Every array operand (input or output) is described by an :class:`Operand`: its element
type, shape, strides in ELEMENTS (negative and zero allowed), and the address of its
element ``[0, ..., 0]``. :func:`plan` broadcasts the operands' shapes as NumPy does
(outputs take part, but an output is never broadcast itself), then reduces the iteration
space to the fewest dimensions as NumPy's iterator and CuPy do: dimensions of length 1
go, the axes are ordered by the first output's strides (so a transposed or Fortran-order
problem becomes a C-order one), and neighbouring axes that every operand walks as one
are merged. The result names the variant to launch: ``flat`` (every operand contiguous,
one dimension: ``a[i]``) or ``nd`` with ``ndim`` dimensions (an index decomposed per
element, a stride per operand and dimension).

Each operand's memory is passed to the kernel as the span from its lowest-addressed
element, plus the (non-negative) offset of element ``[0, ..., 0]`` in it, so a negative
stride never makes a negative index (numba's wraparound would read the wrong element).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InvalidArgument


@dataclass(eq=False)
class Operand:
    """One array operand as the kernel sees it (see the module docstring).

    ``addr`` is the byte address of element ``[0, ..., 0]``; ``host`` the NumPy array when
    the memory is the host's; ``buffer`` a buffer of the kernel's device when the operand
    is one; ``stream`` the producer's stream to order after (foreign device arrays);
    ``keep`` what keeps the memory alive."""

    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    addr: int
    readonly: bool
    host: np.ndarray | None = None
    buffer: Any = None
    stream: int | None = None
    keep: Any = None
    iter_strides: tuple[int, ...] = field(default=(), repr=False)
    """Strides over the collapsed iteration space (set by :func:`plan`)."""

    @property
    def size(self) -> int:
        """Elements of the operand."""
        return math.prod(self.shape)

    def span(self) -> tuple[int, int]:
        """``(lowest, highest)`` element offsets from element ``[0, ..., 0]`` (0, 0 when the
        operand is empty or 0-d)."""
        lo = hi = 0
        if self.size == 0:
            return 0, 0
        for n, s in zip(self.shape, self.strides, strict=True):
            reach = s * (n - 1)
            if reach < 0:
                lo += reach
            else:
                hi += reach
        return lo, hi

    def span_bytes(self) -> tuple[int, int]:
        """``(first byte address, byte count)`` of the memory the operand touches."""
        lo, hi = self.span()
        item = self.dtype.itemsize
        return self.addr + lo * item, (hi - lo + 1) * item if self.size else 0


def element_strides(name: str, strides_bytes: tuple[int, ...], itemsize: int
                    ) -> tuple[int, ...]:
    """Byte strides as element strides (``InvalidArgument`` for one that is not a whole
    number of elements: such a view is not an array of its type)."""
    out = []
    for s in strides_bytes:
        if s % itemsize:
            raise InvalidArgument(f"{name}: stride {s} bytes is not a multiple of the element "
                                  f"size {itemsize}; pass a copy (np.ascontiguousarray)")
        out.append(s // itemsize)
    return tuple(out)


def c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """C-order element strides of ``shape``."""
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def broadcast(ins: list[Operand], outs: list[Operand]) -> tuple[int, ...]:
    """The broadcast shape of every operand (NumPy's rule); ``InvalidArgument`` naming each
    operand and its shape when they do not broadcast, or when an output would have to be
    broadcast itself."""
    ops = ins + outs
    ndim = max((len(o.shape) for o in ops), default=0)
    shape = []
    for axis in range(-ndim, 0):
        sizes = {o.shape[axis] for o in ops if len(o.shape) >= -axis} - {1}
        if len(sizes) > 1:
            listing = ", ".join(f"{o.name} {o.shape}" for o in ops)
            raise InvalidArgument(f"operands could not be broadcast together: {listing} "
                                  f"(axis {axis} has lengths {sorted(sizes)})")
        shape.append(sizes.pop() if sizes else 1)
    result = tuple(shape)
    for o in outs:
        if o.shape != result:
            raise InvalidArgument(f"{o.name}: shape {o.shape} is not the broadcast shape "
                                  f"{result} of the operands; an output is never broadcast")
    return result


def _iteration_strides(o: Operand, shape: tuple[int, ...]) -> list[int]:
    """``o``'s strides over the broadcast ``shape``: 0 along broadcast axes."""
    pad = len(shape) - len(o.shape)
    out = [0] * pad
    for n, s in zip(o.shape, o.strides, strict=True):
        out.append(0 if n == 1 else s)
    return out


@dataclass(frozen=True)
class Plan:
    """What to launch: the collapsed ``shape`` (empty: one element), the element count, and
    whether every operand is walked contiguously in one dimension (``flat``)."""

    shape: tuple[int, ...]
    size: int
    flat: bool

    @property
    def ndim(self) -> int:
        """Dimensions after collapsing."""
        return len(self.shape)


def plan(ins: list[Operand], outs: list[Operand]) -> Plan:
    """Broadcast, then collapse the iteration space (module docstring); sets each
    operand's ``iter_strides``."""
    full = broadcast(ins, outs)
    ops = ins + outs
    strides = [_iteration_strides(o, full) for o in ops]
    axes = [k for k, n in enumerate(full) if n != 1]
    if outs:  # the first output's memory order (it is never broadcast: no zero strides)
        key = strides[len(ins)]
        axes.sort(key=lambda k: -abs(key[k]))
    shape = [full[k] for k in axes]
    per = [[s[k] for k in axes] for s in strides]
    merged_shape: list[int] = []
    merged: list[list[int]] = [[] for _ in ops]
    for j, n in enumerate(shape):
        if merged_shape and all(m[-1] == p[j] * n for m, p in zip(merged, per, strict=True)):
            merged_shape[-1] *= n
            for m, p in zip(merged, per, strict=True):
                m[-1] = p[j]
        else:
            merged_shape.append(n)
            for m, p in zip(merged, per, strict=True):
                m.append(p[j])
    for o, m in zip(ops, merged, strict=True):
        o.iter_strides = tuple(m)
    size = math.prod(full)
    flat = len(merged_shape) <= 1 and all(m in ([], [1]) for m in merged)
    return Plan(tuple(merged_shape), size, flat)


def _probe(o: Operand) -> np.ndarray:
    """A NumPy array describing ``o``'s addresses (never read: only ``np.shares_memory``
    looks at it)."""
    item = o.dtype.itemsize

    class _At:
        __array_interface__ = {"shape": o.shape, "typestr": o.dtype.str, "version": 3,
                               "data": (o.addr, True),
                               "strides": tuple(s * item for s in o.strides)}

    return np.asarray(_At())


def check_overlap(ins: list[Operand], outs: list[Operand]) -> None:
    """``InvalidArgument`` when an output shares memory with another output, or with an
    input other than as the very same view (same address, type, shape and strides: an
    in-place update, where each element is read before it is written by its own thread)."""
    for k, o in enumerate(outs):
        if o.size == 0:
            continue
        for other in outs[:k] + ins:
            if other.size == 0 or not _may_share(o, other):
                continue
            is_out = any(other is x for x in outs)
            if not is_out and (o.addr, o.dtype, o.shape, o.strides) == \
                    (other.addr, other.dtype, other.shape, other.strides):
                continue
            if _shares(o, other):
                what = "another output" if is_out else other.name
                raise InvalidArgument(
                    f"{o.name}: overlaps {what} without being the same elements; the result "
                    "would depend on evaluation order (pass a separate output array, or "
                    f"{other.name} itself to work in place)")


MAX_OVERLAP_WORK = 1 << 20
"""Work ``np.shares_memory`` may spend deciding an overlap; beyond it the operands are
taken as overlapping (refused), never guessed disjoint."""


def _shares(a: Operand, b: Operand) -> bool:
    """Whether two operands share an element's memory (exactly, within
    :data:`MAX_OVERLAP_WORK`)."""
    try:
        return bool(np.shares_memory(_probe(a), _probe(b), max_work=MAX_OVERLAP_WORK))
    except np.exceptions.TooHardError:
        return True


def _may_share(a: Operand, b: Operand) -> bool:
    """Whether the two operands' spans intersect (device memory never meets host memory)."""
    if (a.host is None) != (b.host is None):
        return False
    a0, an = a.span_bytes()
    b0, bn = b.span_bytes()
    return a0 < b0 + bn and b0 < a0 + an

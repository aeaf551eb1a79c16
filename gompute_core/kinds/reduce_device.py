"""The checked reduce's device program: raw kernels the core generates per spec.

Checked, a reduce spec runs as these kernels (:mod:`.reduce_checked`), instrumented like
any raw kernel, instead of the entry each backend renders. Per level of the plan
(:func:`levels`: chunks of :func:`chunk_size` elements, a function of the count alone):

* ``<name>_reduce_first`` (level 0) and ``<name>_reduce_upper`` (the levels above):
  thread ``t`` folds chunk ``t`` (elements ``[t*chunk, min((t+1)*chunk, n))``) left to
  right and writes it to ``totals[t]``: level 0 from the identity, as every backend's
  reduce starts its accumulators (``e = identity``, then ``e = combine(e, pre(x_i))``:
  a preset such as ``any`` maps even a lone element through ``combine``), the upper
  levels from their first total (``e = t_lo``, then ``e = combine(e, t_i)``). Each
  level's totals are the next level's data, and the top level's one total is the
  result. The data are only read;
* ``<name>_reduce_fill``: ``partials[i] = identity`` for ``lo <= i < hi`` (what a
  ``launch`` writes to the partials after the first).

No barriers, shared memory or atomics; the chunks come from the data size alone, so the
result is the same on every backend and for every thread count.

No ``from __future__ import annotations`` here: the raw kernels' annotations are
evaluated where they are defined (``g.GlobalPtr[T]`` of the spec's ``T``).
"""

import threading
from typing import Any

from ..raw import builtins as B
from ..raw.kernel import raw_kernel
from ..raw.types import GlobalPtr
from ..types import u64
from .scan_device import NoParams, stage_of

CHUNK_MIN, CHUNK_MAX = 32, 1 << 16
"""Bounds of a chunk's length (elements)."""
TARGET_CHUNKS = 1 << 16
"""Chunks per level the chunk length aims at (work for every GPU thread, few levels)."""


def chunk_size(count: int) -> int:
    """The chunk length of a level of ``count`` elements (``count`` alone decides)."""
    return min(max(-(-count // TARGET_CHUNKS), CHUNK_MIN), CHUNK_MAX)


def levels(n: int) -> tuple[tuple[int, int, int], ...]:
    """The plan of a fold of ``n >= 1`` elements: ``(count, chunk, chunks)`` per level,
    from the data up to the level that fits in one chunk."""
    out = []
    count = n
    while True:
        chunk = chunk_size(count)
        chunks = -(-count // chunk)
        out.append((count, chunk, chunks))
        if chunks == 1:
            return tuple(out)
        count = chunks


_made: dict[Any, tuple[Any, Any, Any]] = {}
_made_lock = threading.Lock()


def reduce_kernels(spec: Any) -> tuple[Any, Any, Any]:
    """The raw kernel definitions of reduce ``spec`` (registered once per process under
    ``<name>_reduce_first``, ``_reduce_upper`` and ``_reduce_fill``)."""
    with _made_lock:
        found = _made.get(spec)
        if found is None:
            found = _made[spec] = _define(spec)
        return found


def _define(spec: Any) -> tuple[Any, Any, Any]:
    T, combine, P = spec.T, spec.combine, spec.params or NoParams
    identity = spec.T(spec.identity)
    stage = stage_of(spec)

    def first(data: GlobalPtr[T], n: u64, totals: GlobalPtr[T], chunk: u64, p: P) -> None:
        t = u64(B.global_id(0))
        lo = t * chunk
        if lo < n:
            hi = min(lo + chunk, n)
            acc = T(identity)
            for i in range(lo, hi):
                acc = combine(acc, stage(data[i], p))
            totals[t] = acc

    def upper(data: GlobalPtr[T], n: u64, totals: GlobalPtr[T], chunk: u64) -> None:
        t = u64(B.global_id(0))
        lo = t * chunk
        if lo < n:
            hi = min(lo + chunk, n)
            acc = data[lo]
            for i in range(lo + 1, hi):
                acc = combine(acc, data[i])
            totals[t] = acc

    def fill(partials: GlobalPtr[T], lo: u64, hi: u64) -> None:
        i = u64(B.global_id(0)) + lo
        if i < hi:
            partials[i] = T(identity)

    name = spec.name
    return (raw_kernel(first, name=f"{name}_reduce_first"),
            raw_kernel(upper, name=f"{name}_reduce_upper"),
            raw_kernel(fill, name=f"{name}_reduce_fill"))

"""The scan kind's device program: raw kernels the core generates per spec.

Written once, in the kernel language with ``g.builtins``, so every backend that runs
raw kernels runs a scan with no code of its own. Both plans compute the order of
:mod:`.scan` (tiles of :func:`~.scan.tiling`), bit for bit, in three passes: the tiles'
totals ``A_t``, their left fold ``P_t``, the tiles scanned onto their carries
``P_{t-1}``. Which plan runs is the program's choice
(:class:`~.scan_program.ScanProgram`):

* **by blocks** (devices with barriers and shared memory that are not host memory:
  GPUs): ``<name>_scan_block_totals`` and ``<name>_scan_block_apply`` give each tile a
  block, which loads it into shared memory with neighbouring threads on neighbouring
  elements (every global access coalesces), folds each thread's run, the groups' and
  the tile's totals there, and writes the total (``_totals``) or the scanned tile
  (``_apply``, onto ``prefixes[t - 1]``); ``<name>_scan_block_carries``, one block,
  folds the totals left to right through shared memory, a tile's worth at a time.
  The data are read twice and written once, with no waiting between blocks.
* **by threads** (host-memory devices, devices without barriers or shared memory):
  ``<name>_scan_totals`` (thread ``t`` scans each run of tile ``t`` in place, keeps the
  runs' totals ``R`` and folds them into ``A_t``), ``<name>_scan_carries`` (one thread:
  the ``P_t``), ``<name>_scan_apply`` (thread ``t`` combines each run's carry ``c``,
  folded again from the ``R``, with its elements: independent operations, vectorized
  on a CPU). No barriers, shared memory or atomics; a thread walks its tile in memory
  order.

No ``from __future__ import annotations`` here: the raw kernels' annotations are
evaluated where they are defined (``g.GlobalPtr[T]`` of the spec's ``T``).
"""

import threading
from typing import Any, NamedTuple

from ..abi.params import params
from ..raw import builtins as B
from ..raw.kernel import raw_kernel
from ..raw.types import GlobalPtr
from ..specs import _positional_arity
from ..types import u32, u64
from .scan import GROUP, tiling


class ScanKernels(NamedTuple):
    """A scan spec's raw kernel definitions (:func:`scan_kernels`): each plan's three
    passes."""

    by_blocks: tuple[Any, Any, Any]
    by_threads: tuple[Any, Any, Any]


_made: dict[Any, ScanKernels] = {}
_made_lock = threading.Lock()


@params
class NoParams:
    """The params record of a scan whose spec has none (never read)."""

    unused: u32


def stage_of(spec: Any) -> Any:
    """``x, p -> pre(x, p)`` (or ``x``) as a kernel function."""
    pre = spec.pre
    if pre is None:
        def stage(x: Any, p: Any) -> Any:
            return x
    elif _positional_arity(spec.name, "pre", pre) == 2:
        def stage(x: Any, p: Any) -> Any:
            return pre(x, p)  # without params, p is the unused NoParams record
    else:
        def stage(x: Any, p: Any) -> Any:
            return pre(x)
    return stage


def scan_kernels(spec: Any) -> ScanKernels:
    """The raw kernel definitions of scan ``spec``, registered once per process."""
    with _made_lock:
        found = _made.get(spec)
        if found is None:
            found = _made[spec] = ScanKernels(
                (_block_tiles(spec, False), _block_carries(spec), _block_tiles(spec, True)),
                _by_threads(spec))
        return found


def _block_tiles(spec: Any, APPLY: bool) -> Any:
    """``<name>_scan_block_totals`` (``APPLY`` false: ``aggregates[t] = A_t``) or
    ``<name>_scan_block_apply`` (true: the tile scanned onto ``prefixes[t - 1]``)."""
    T, combine, P = spec.T, spec.combine, spec.params or NoParams
    identity = T(spec.identity)
    stage = stage_of(spec)
    shape = tiling(spec)
    THREADS, ITEMS, TILE = shape.threads, shape.items, shape.tile
    GROUPS = -(-THREADS // GROUP)
    SHARED = TILE + TILE // 32

    def tiles(data: GlobalPtr[T], n: u64, aggregates: GlobalPtr[T], prefixes: GlobalPtr[T],
              inclusive: u64, p: P) -> None:
        sx = B.shared_array(T, SHARED)   # the tile (a pad element per 32: no bank conflicts)
        sr = B.shared_array(T, THREADS)  # run totals R, then W (a group's first keeps R)
        sg = B.shared_array(T, GROUPS)   # group totals G, then Q (the first keeps G)
        lid = u64(B.local_id(0))
        tile = u64(B.block_id(0))
        lo = tile * TILE
        size = min(n - lo, u64(TILE))
        for j in range(ITEMS):
            q = j * THREADS + lid
            if q < size:
                sx[q + q // 32] = stage(data[lo + q], p)
        B.barrier()
        r0 = lid * ITEMS
        at = r0 + r0 // 32
        count = u64(0)
        if r0 < size:
            count = min(size - r0, u64(ITEMS))
            acc = identity
            if inclusive != 0:
                acc = sx[at]
                for j in range(1, count):
                    acc = combine(acc, sx[at + j])
                    if APPLY:  # the totals pass keeps only the run's total
                        sx[at + j] = acc
            else:
                for j in range(count):
                    x = sx[at + j]
                    if APPLY:
                        sx[at + j] = acc
                    acc = combine(acc, x)
            sr[lid] = acc
        B.barrier()
        runs = (size + ITEMS - 1) // ITEMS
        if lid * GROUP < runs:
            g0 = lid * GROUP
            gacc = sr[g0]
            for k in range(g0 + 1, min(g0 + GROUP, runs)):
                r = sr[k]
                if APPLY:
                    sr[k] = gacc
                gacc = combine(gacc, r)
            sg[lid] = gacc
        B.barrier()
        if lid == 0:
            total = sg[0]
            for gi in range(1, (runs + GROUP - 1) // GROUP):
                gt = sg[gi]
                if APPLY:
                    sg[gi] = total
                total = combine(total, gt)
            if not APPLY:
                aggregates[tile] = total
        if APPLY:
            B.barrier()
            if count > 0:
                k = lid
                have = tile > 0
                c = identity
                if have:
                    c = prefixes[tile - 1]
                gi = k // GROUP
                if gi > 0:
                    if have:
                        c = combine(c, sg[gi])
                    else:
                        c = sg[gi]
                    have = True
                if k % GROUP != 0:
                    if have:
                        c = combine(c, sr[k])
                    else:
                        c = sr[k]
                    have = True
                if have:
                    for j in range(count):
                        sx[at + j] = combine(c, sx[at + j])
            B.barrier()
            for j in range(ITEMS):
                q = j * THREADS + lid
                if q < size:
                    data[lo + q] = sx[q + q // 32]

    name = f"{spec.name}_scan_block_{'apply' if APPLY else 'totals'}"
    return raw_kernel(tiles, name=name, block=(THREADS, 1, 1))


UNROLL = 8
"""Totals the by-blocks carries kernel loads into registers before folding them (the
loads overlap; only the combines wait for each other)."""


def _block_carries(spec: Any) -> Any:
    """``<name>_scan_block_carries``: one block folds ``aggregates[:count]`` left to right
    into ``prefixes`` (``P_t``): the block loads a tile's worth of totals into shared
    memory (coalesced), thread 0 folds them :data:`UNROLL` at a time from registers, the
    block writes them back."""
    T, combine = spec.T, spec.combine
    identity = T(spec.identity)
    shape = tiling(spec)
    THREADS, ITEMS, CHUNK = shape.threads, shape.items, shape.tile

    def carries(aggregates: GlobalPtr[T], prefixes: GlobalPtr[T], count: u64) -> None:
        s = B.shared_array(T, CHUNK)
        v = B.local_array(T, UNROLL)
        lid = u64(B.local_id(0))
        acc = identity  # thread 0's running fold
        for base in range(0, count, CHUNK):
            for j in range(ITEMS):
                i = base + j * THREADS + lid
                if i < count:
                    s[j * THREADS + lid] = aggregates[i]
            B.barrier()
            if lid == 0:
                start = base
                if base == 0:
                    acc = s[0]  # P_0 = A_0
                    start = u64(1)
                hi = min(base + u64(CHUNK), count)
                for j0 in range(start, hi, UNROLL):
                    for u in range(UNROLL):
                        if j0 + u < hi:
                            v[u] = s[j0 + u - base]
                    for u in range(UNROLL):
                        if j0 + u < hi:
                            acc = combine(acc, v[u])
                            s[j0 + u - base] = acc
            B.barrier()
            for j in range(ITEMS):
                i = base + j * THREADS + lid
                if i < count:
                    prefixes[i] = s[j * THREADS + lid]
            B.barrier()

    return raw_kernel(carries, name=f"{spec.name}_scan_block_carries", block=(THREADS, 1, 1))


def _by_threads(spec: Any) -> tuple[Any, Any, Any]:
    """The by-threads plan: ``<name>_scan_totals``, ``_scan_carries``, ``_scan_apply``."""
    T, combine, P = spec.T, spec.combine, spec.params or NoParams
    identity = T(spec.identity)
    stage = stage_of(spec)
    shape = tiling(spec)
    ITEMS, TILE = shape.items, shape.tile
    SPAN = GROUP * ITEMS

    def totals(data: GlobalPtr[T], n: u64, runs: GlobalPtr[T], aggregates: GlobalPtr[T],
               inclusive: u64, p: P) -> None:
        t = u64(B.global_id(0))
        lo = t * TILE
        if lo < n:
            hi = min(lo + u64(TILE), n)
            total = identity
            for g0 in range(lo, hi, SPAN):
                gacc = identity
                for r in range(g0, min(g0 + u64(SPAN), hi), ITEMS):
                    end = min(r + u64(ITEMS), hi)
                    acc = identity
                    if inclusive != 0:
                        acc = stage(data[r], p)
                        data[r] = acc
                        for i in range(r + 1, end):
                            acc = combine(acc, stage(data[i], p))
                            data[i] = acc
                    else:
                        for i in range(r, end):
                            x = stage(data[i], p)
                            data[i] = acc
                            acc = combine(acc, x)
                    runs[r // ITEMS] = acc
                    if r == g0:
                        gacc = acc
                    else:
                        gacc = combine(gacc, acc)
                if g0 == lo:
                    total = gacc
                else:
                    total = combine(total, gacc)
            aggregates[t] = total

    def carries(aggregates: GlobalPtr[T], prefixes: GlobalPtr[T], count: u64) -> None:
        if B.global_id(0) == 0:
            acc = aggregates[0]
            prefixes[0] = acc
            for t in range(1, count):
                acc = combine(acc, aggregates[t])
                prefixes[t] = acc

    def joined(have: bool, c: T, x: T) -> T:
        """``combine(c, x)``, or ``x`` where there is no ``c`` yet (the order's "none")."""
        if have:
            return combine(c, x)
        return x

    def apply(data: GlobalPtr[T], n: u64, runs: GlobalPtr[T], prefixes: GlobalPtr[T]
              ) -> None:
        t = u64(B.global_id(0))
        lo = t * TILE
        if lo < n:
            hi = min(lo + u64(TILE), n)
            carry = identity
            if t > 0:
                carry = prefixes[t - 1]
            q = identity
            for g0 in range(lo, hi, SPAN):
                w = identity
                for r in range(g0, min(g0 + u64(SPAN), hi), ITEMS):
                    c = joined(t > 0, carry, q) if g0 > lo else carry
                    have = t > 0 or g0 > lo
                    if r > g0:
                        c = joined(have, c, w)
                        have = True
                    if have:
                        for i in range(r, min(r + u64(ITEMS), hi)):
                            data[i] = combine(c, data[i])
                    if r == g0:
                        w = runs[r // ITEMS]
                    else:
                        w = combine(w, runs[r // ITEMS])
                if g0 == lo:
                    q = w
                else:
                    q = combine(q, w)

    name = spec.name
    return (raw_kernel(totals, name=f"{name}_scan_totals"),
            raw_kernel(carries, name=f"{name}_scan_carries"),
            raw_kernel(apply, name=f"{name}_scan_apply"))

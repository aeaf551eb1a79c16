"""The scan kind's device program: raw kernels the core generates per spec.

Written once, in the kernel language with ``g.builtins``, so every backend that runs
raw kernels runs a scan with no code of its own. Both plans compute the order of
:mod:`.scan` (tiles of :func:`~.scan.tiling`), bit for bit; which one runs is the
program's choice (:class:`~.scan_program.ScanProgram`):

* **one pass** (``<name>_scan_tiles``; devices with barriers, shared memory and atomics
  that are not host memory: GPUs): a block scans one tile. It takes the next tile in
  launch order from a ticket counter (so every tile before its own belongs to a block
  already running), loads the tile into shared memory with neighbouring threads on
  neighbouring elements, folds each thread's run, the groups' and the tile's totals, and
  publishes the tile's total ``A_t`` (flag ``A``). It then *looks back*: it reads the
  flags of the tiles before it, nearest first, keeping their totals, until one shows
  its inclusive prefix ``P`` (flag ``P``); folding the kept totals onto that prefix left
  to right gives exactly ``P_{t-1} = combine(...combine(P_j, A_{j+1})..., A_{t-1})``,
  the order's left fold, whatever the timing. It publishes ``P_t`` and writes the tile.
  Reads and writes of the data: one each. Flags carry the ticket (``ticket << 2 | A
  or P``), so a flag left by an earlier launch never matches and nothing is cleared
  between launches; values are published before their flag behind ``threadfence()``
  and read with atomics (the slots are the type widened to one with atomics:
  :func:`slot_type`).
* **three passes** (host-memory devices, devices without atomics): ``<name>_scan_totals``
  (thread ``t`` scans each run of tile ``t`` in place, keeps the runs' totals ``R`` and
  folds them into ``A_t``), ``<name>_scan_carries`` (one thread: the ``P_t``),
  ``<name>_scan_apply`` (thread ``t`` combines each run's carry ``c``, folded again from
  the ``R``, with its elements: independent operations, vectorized on a CPU). No
  barriers, shared memory or atomics; a thread walks its tile in memory order.

No ``from __future__ import annotations`` here: the raw kernels' annotations are
evaluated where they are defined (``g.GlobalPtr[T]`` of the spec's ``T``).
"""

import threading
from typing import Any, NamedTuple

import numpy as np

from ..abi.params import params
from ..raw import builtins as B
from ..raw.kernel import raw_kernel
from ..raw.types import GlobalPtr
from ..specs import _positional_arity
from ..types import f32, i32, u32, u64
from .scan import GROUP, tiling

WINDOW = 32
"""Tiles a look-back reads before it starts over from the nearest (it waits there)."""
FLAG_A, FLAG_P = 1, 2
"""A tile's flag, low bits: its total (``A``) or its inclusive prefix (``P``) is out."""
TICKET_MASK = (1 << 30) - 1
"""The ticket bits a flag keeps (``ticket & TICKET_MASK) << 2 | FLAG_*``)."""


class ScanKernels(NamedTuple):
    """A scan spec's raw kernel definitions (:func:`scan_kernels`)."""

    tiles: Any
    totals: Any
    carries: Any
    apply: Any


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


def slot_type(T: Any) -> Any:
    """The type of the one-pass plan's published totals: ``T`` where the atomics take it
    (4- and 8-byte types), else a 4-byte type holding every ``T`` value exactly."""
    dt = np.dtype(T)
    if dt.itemsize >= 4:
        return T
    return f32 if dt.kind == "f" else i32 if dt.kind == "i" else u32


def scan_kernels(spec: Any) -> ScanKernels:
    """The raw kernel definitions of scan ``spec`` (registered once per process under
    ``<name>_scan_tiles``, ``_scan_totals``, ``_scan_carries`` and ``_scan_apply``)."""
    with _made_lock:
        found = _made.get(spec)
        if found is None:
            found = _made[spec] = ScanKernels(_one_pass(spec), *_three_passes(spec))
        return found


def _one_pass(spec: Any) -> Any:
    T, combine, P = spec.T, spec.combine, spec.params or NoParams
    W = slot_type(T)
    identity = T(spec.identity)
    stage = stage_of(spec)
    shape = tiling(spec)
    THREADS, ITEMS, TILE = shape.threads, shape.items, shape.tile
    GROUPS = -(-THREADS // GROUP)
    SHARED = TILE + TILE // 32

    def tiles(data: GlobalPtr[T], n: u64, flags: GlobalPtr[u32], aggregates: GlobalPtr[W],
              prefixes: GlobalPtr[W], counter: GlobalPtr[u32], base: u32, inclusive: u64,
              p: P) -> None:
        sx = B.shared_array(T, SHARED)   # the tile (a pad element per 32: no bank conflicts)
        sr = B.shared_array(T, THREADS)  # run totals R, then W (a group's first keeps R)
        sg = B.shared_array(T, GROUPS)   # group totals G, then Q (the first keeps G)
        sw = B.shared_array(T, WINDOW)   # the totals a look-back keeps
        st = B.shared_array(u32, 1)      # the block's ticket
        sc = B.shared_array(T, 1)        # the tile's carry C_t
        lid = u64(B.local_id(0))
        if lid == 0:
            st[0] = B.atomic_add(counter, 0, u32(1))
        B.barrier()
        ticket = st[0]
        tile = u64(ticket - base)
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
                    sx[at + j] = acc
            else:
                for j in range(count):
                    x = sx[at + j]
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
                sr[k] = gacc
                gacc = combine(gacc, r)
            sg[lid] = gacc
        B.barrier()
        if lid == 0:
            total = sg[0]
            for gi in range(1, (runs + GROUP - 1) // GROUP):
                gt = sg[gi]
                sg[gi] = total
                total = combine(total, gt)
            mine = (ticket & TICKET_MASK) << 2
            if tile == 0:
                prefixes[0] = W(total)
                B.threadfence()
                B.atomic_exch(flags, 0, mine | FLAG_P)
            else:
                aggregates[tile] = W(total)
                B.threadfence()
                B.atomic_exch(flags, tile, mine | FLAG_A)
                carry = identity
                d = u64(1)
                while True:
                    want = ((ticket - u32(d)) & TICKET_MASK) << 2
                    flag = B.atomic_add(flags, tile - d, u32(0))
                    if flag == want | FLAG_P:
                        B.threadfence()
                        carry = T(B.atomic_cas(prefixes, tile - d, W(0), W(0)))
                        for e in range(1, d):
                            carry = combine(carry, sw[d - e])
                        break
                    if flag == want | FLAG_A:
                        B.threadfence()
                        sw[d] = T(B.atomic_cas(aggregates, tile - d, W(0), W(0)))
                        d += 1
                        if d == WINDOW:
                            d = u64(1)
                sc[0] = carry
                prefixes[tile] = W(combine(carry, total))
                B.threadfence()
                B.atomic_exch(flags, tile, mine | FLAG_P)
        B.barrier()
        if count > 0:
            k = lid
            have = tile > 0
            c = sc[0]
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

    return raw_kernel(tiles, name=f"{spec.name}_scan_tiles", block=(THREADS, 1, 1))


def _three_passes(spec: Any) -> tuple[Any, Any, Any]:
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
                    have = t > 0
                    c = carry
                    if g0 > lo:
                        if have:
                            c = combine(c, q)
                        else:
                            c = q
                        have = True
                    if r > g0:
                        if have:
                            c = combine(c, w)
                        else:
                            c = w
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

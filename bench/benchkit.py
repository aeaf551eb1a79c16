"""What the GPU benchmark scripts share: the kernels they time, the event timer and the
results table."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import gompute_core as g


@g.params
class Affine:
    a: g.f32
    b: g.f32


def affine(x, p: Affine):
    return x * p.a + p.b


def add_one(x):
    return x + 1


def _median_between(start: Any, stop: Any, seconds: Callable[[], float],
                    sync: Callable[[], Any], fn: Callable[[], Any], reps: int) -> float:
    """Median of ``seconds()`` over ``reps`` runs of ``fn()`` between ``start`` and ``stop``
    events (one warm-up run first, then ``sync()``)."""
    fn()
    sync()
    times = []
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(seconds())
    return statistics.median(times)


def events_median(dev: Any, fn: Callable[[], Any], reps: int = 10) -> float:
    """Median seconds of ``fn()`` on ``dev``'s default stream, timed by the backend's events."""
    start, stop = dev.create_event(), dev.create_event()
    return _median_between(start, stop, lambda: stop.elapsed_us(start) * 1e-6,
                           dev.synchronize, fn, reps)


def cupy_events_median(cp: Any, fn: Callable[[], Any], reps: int = 10) -> float:
    """Median seconds of ``fn()`` timed by CUDA events on CuPy's current stream."""
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    return _median_between(start, stop, lambda: cp.cuda.get_elapsed_time(start, stop) * 1e-3,
                           cp.cuda.Device().synchronize, fn, reps)


def metric_table(rows: list[tuple[str, str, float, float, float, str]],
                 number: str = ".4g") -> list[str]:
    """The Markdown lines of a results table: one row per (metric, peer, value, peer value,
    ratio, target), the values and the peer's in the format ``number``."""
    lines = ["| metric | peer | value | peer value | ratio | target |",
             "| --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {m} | {p} | {v:{number}} | {pv:{number}} | {r:.3f} | {t} |"
              for m, p, v, pv, r, t in rows]
    return lines


def per_call(fn: Callable[[], Any], calls: int = 2000, batches: int = 15,
             sync: Callable[[], Any] | None = None,
             pick: Callable[[list[float]], float] = statistics.median) -> float:
    """Wall seconds per call of ``fn``: one warm-up call, then ``batches`` batches of
    ``calls`` calls, ``sync()`` (when given) after the warm-up and after each batch;
    ``pick`` of the batches' times (the median, or ``min`` for the least disturbed)."""
    fn()
    if sync is not None:
        sync()
    times = []
    for _ in range(batches):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t) / calls)
        if sync is not None:
            sync()
    return pick(times)


def paired_extra(base: Callable[[], Any], other: Callable[[], Any], calls: int = 2000,
                 batches: int = 15, sync: Callable[[], Any] | None = None
                 ) -> tuple[float, float]:
    """Seconds per call of ``base`` and the extra seconds per call of ``other`` over it:
    their batches alternate (``base``, ``other``, ``base``, ...), so drift of the host's
    clock or load falls on both alike; the extra is the median of each pair's difference,
    the base the median of ``base``'s batches."""
    pairs = [(per_call(base, calls, 1, sync), per_call(other, calls, 1, sync))
             for _ in range(batches)]
    return (statistics.median(b for b, _ in pairs),
            statistics.median(o - b for b, o in pairs))


def interleaved_best(fns: dict[str, Callable[[], Any]], reps: int) -> dict[str, float]:
    """Best wall seconds of each function over ``reps`` rounds, one run of each per round
    (after one warm-up run each): other work on a shared host only ever adds time, and
    interleaving spreads it over every contender."""
    for fn in fns.values():
        fn()
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(reps):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best

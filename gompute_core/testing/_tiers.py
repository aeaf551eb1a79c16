"""Shared pieces of the tier tests: the device under test and a launch that takes long.

:class:`LongWork` sizes the ``spin`` kernel on the backend under test so that
one launch takes at least :data:`LONG_SECONDS` (measured with a
synchronize), which lets a test tell a launch that really enqueued work from
one that finished it, and a stream that really waited from one that did not.
On a device whose every operation completes before its call returns, the
same tests pass trivially.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

import gompute_core as g

from .kernels_tiers import SPIN, Spin, spin_oracle

LONG_SECONDS = 0.25
"""What a long launch takes at least."""
MAX_ELEMENTS = 1 << 22
MAX_ITERS = 1 << 16


@dataclass
class LongWork:
    """A ``spin`` launch over ``n`` elements of ``iters`` steps each, taking ``seconds``."""

    kernel: Any
    n: int
    iters: int
    seconds: float

    @property
    def params(self) -> Any:
        """The launch's params."""
        return Spin(iters=np.uint32(self.iters))

    def data(self) -> np.ndarray:
        """The input (distinct, non-trivial values)."""
        return np.arange(self.n, dtype=np.uint32) * np.uint32(2654435761)

    def expected(self) -> np.ndarray:
        """What the launch leaves in the buffer."""
        return spin_oracle(self.data(), self.iters)

    def buffer(self) -> Any:
        """A device buffer holding :meth:`data`."""
        buf = self.kernel.alloc(self.n)
        buf.upload(self.data())
        return buf

    def launch(self, buf: Any, stream: Any = None) -> None:
        """Enqueue the work on ``buf``: on ``stream`` when given (assigned to the program for
        the call), else on the kernel's stream."""
        if stream is None:
            self.kernel.launch(buf, self.n, self.params)
            return
        saved = self.kernel.stream
        self.kernel.stream = stream
        try:
            self.kernel.launch(buf, self.n, self.params)
        finally:
            self.kernel.stream = saved

    def check(self, buf: Any, context: str) -> None:
        """``buf`` holds the finished work."""
        got = np.empty(self.n, np.uint32)
        buf.download(got)
        bad = np.flatnonzero(got != self.expected())
        assert not bad.size, (f"{context}: {bad.size} of {self.n} elements are not the "
                              f"finished result (first at {bad[0]})")


def measure(kernel: Any, n: int, iters: int) -> float:
    """Seconds one launch over ``n`` elements of ``iters`` steps takes, synchronized."""
    work = LongWork(kernel, n, iters, 0.0)
    buf = work.buffer()
    try:
        kernel.context.synchronize()
        t0 = time.perf_counter()
        work.launch(buf)
        kernel.context.synchronize()
        return time.perf_counter() - t0
    finally:
        buf.free()


def long_work(backend: str) -> LongWork:
    """A :class:`LongWork` on ``backend`` taking at least :data:`LONG_SECONDS` (or the
    largest tried, when the device is faster than that at its size limits)."""
    kernel = g.Kernel(SPIN, backend)
    n, iters = 1024, 64
    seconds = measure(kernel, n, iters)
    while seconds < LONG_SECONDS and (n < MAX_ELEMENTS or iters < MAX_ITERS):
        grow = min(16.0, max(2.0, 1.5 * LONG_SECONDS / max(seconds, 1e-4)))
        if n < MAX_ELEMENTS:
            n = min(MAX_ELEMENTS, int(n * grow))
        else:
            iters = min(MAX_ITERS, int(iters * grow))
        seconds = measure(kernel, n, iters)
    return LongWork(kernel, n, iters, seconds)


def timed(fn: Any) -> float:
    """Seconds ``fn()`` takes."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0

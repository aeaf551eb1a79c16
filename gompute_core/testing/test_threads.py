"""Tier ``threads``: concurrent launches on one handle, ``run`` on separate handles."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

import gompute_core as g

from ._support import mark
from .kernels_raw import raw_tally
from .kernels_tiers import TOTAL, TWICE

TIER = "threads"
pytestmark = mark(types=("f32", "i64"))

THREADS = 8
RAW_LAUNCHES = 100_000
"""Launches of the shared raw handle, all threads together."""


def test_concurrent_launches_on_one_handle(gompute_backend: str) -> None:
    """Eight threads each launch on their own buffers through one handle."""
    with g.Kernel(TWICE, gompute_backend) as k:
        def work(i: int) -> np.ndarray:
            host = np.full(3000 + i, i, np.float32)
            buf = k.alloc(host.size)
            buf.upload(host)
            for _ in range(5):
                k.launch(buf, host.size)
            k.context.synchronize()
            out = np.empty_like(host)
            buf.download(out)
            buf.free()
            return out

        with ThreadPoolExecutor(THREADS) as pool:
            results = list(pool.map(work, range(THREADS)))
    for i, out in enumerate(results):
        want = np.float32(i)
        for _ in range(5):
            want = want * np.float32(2) + np.float32(1)
        np.testing.assert_array_equal(out, np.full(3000 + i, want, np.float32),
                                      err_msg=f"thread {i}")


def test_run_on_separate_handles(gompute_backend: str) -> None:
    """Four threads, each with its own handle of one spec, ``run`` at once."""
    def work(i: int) -> Any:
        with g.Kernel(TOTAL, gompute_backend) as k:
            return [k.run(np.arange(i * 1000 + j, dtype=np.int64)) for j in range(3)]

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(work, range(4)))
    for i, sums in enumerate(results):
        want = [(i * 1000 + j) * (i * 1000 + j - 1) // 2 for j in range(3)]
        assert [int(s) for s in sums] == want, f"thread {i}"


@mark(kind="raw")
def test_concurrent_raw_launches_on_one_handle(gompute_backend: str) -> None:
    """Eight threads share one raw handle, 100,000 launches in all, each thread adding its
    own value to its own buffer: a launch that ran with another thread's arguments leaves
    two totals wrong. The interpreter switches threads as often as it can meanwhile."""
    raw = g.RawKernel(raw_tally, gompute_backend)
    per_thread = RAW_LAUNCHES // THREADS

    def work(i: int) -> int:
        total = raw.alloc(1, g.i64)
        total.fill(0)
        add = np.int64(i + 1)
        for _ in range(per_thread):
            raw.launch(1, 1, [total, add])
        raw.synchronize()
        out = np.empty(1, np.int64)
        total.download(out)
        total.free()
        return int(out[0])

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(THREADS) as pool:
            totals = list(pool.map(work, range(THREADS)))
    finally:
        sys.setswitchinterval(interval)
    assert totals == [per_thread * (i + 1) for i in range(THREADS)]

"""Tier ``threads``: concurrent launches on one handle, ``run`` on separate handles."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

import gompute_core as g

from ._support import mark
from .kernels_tiers import TOTAL, TWICE

TIER = "threads"
pytestmark = mark(types=("f32", "i64"))

THREADS = 8


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

"""Checked mode's cost: the raw tiled transpose and shared-memory histogram, checked against
unchecked, on one backend (issue 21: within 3x on the CPU, within 2x on a GPU).

* transpose, 4096 x 4096 f32 (16 x 17 shared tile, 2-D grid and blocks): every global
  load and store and every shared access checked; on the CPU also race-stamped;
* histogram of 2**24 u8 values into 256 u32 bins (shared-memory atomics per block, a
  grid-stride loop, one global atomic per bin and block), grid 1024 x 256.

Both kernels are the conformance suite's (``gompute_core.testing.kernels_raw``); each
result is checked against NumPy once per mode. A timing is the best of 7 runs of
``reps`` launches and one synchronize (which, checked, reads the fault record); the runs of
the two modes alternate, so a busy host slows both alike, and each run's ratio is kept
too (the range printed is over the 7 pairs).

Run: ``python bench/checked.py`` (CPU) or ``python bench/checked.py --backend cuda``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import gompute_core as g
from gompute_core.testing.kernels_raw import BLOCK, TILE, raw_histogram, raw_transpose

ROWS = COLS = 4096
VALUES = 1 << 24
HIST_GRID = 1024


def seconds(fn: Callable[[], None]) -> float:
    """The time one call of ``fn`` takes."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def paired_seconds(plain: Callable[[], None], checked: Callable[[], None], runs: int = 7
                   ) -> tuple[list[float], list[float]]:
    """The times of ``runs`` calls of ``plain`` and of ``checked``, alternating (after one
    warm-up call of each)."""
    plain()
    checked()
    pairs = [(seconds(plain), seconds(checked)) for _ in range(runs)]
    return [p for p, _ in pairs], [c for _, c in pairs]


def device_array(kernel: g.RawKernel, host: np.ndarray, on_host: bool) -> Any:
    """``host`` itself on a host-memory backend, else a device copy of it."""
    if on_host:
        return host
    buf = kernel.alloc(host.size, host.dtype.type)
    buf.upload(host)
    return buf


def fetch(buf: Any, like: np.ndarray) -> np.ndarray:
    """The contents of ``buf`` (a host array, or a device buffer shaped as ``like``)."""
    if isinstance(buf, np.ndarray):
        return buf
    out = np.empty_like(like)
    buf.download(out)
    return out


def runners(backend: str, checked: bool, reps: int) -> dict[str, Callable[[], None]]:
    """A call of ``reps`` launches of each kernel in one mode, after checking its result."""
    rng = np.random.default_rng(0)
    src = rng.standard_normal(ROWS * COLS).astype(np.float32)
    values = rng.integers(0, 256, VALUES).astype(np.uint8)
    transpose = g.RawKernel(raw_transpose, backend, checked=checked)
    histogram = g.RawKernel(raw_histogram, backend, checked=checked)
    on_host = transpose.device.has("host_memory")
    d_src = device_array(transpose, src, on_host)
    d_dst = device_array(transpose, np.zeros_like(src), on_host)
    d_values = device_array(histogram, values, on_host)
    bins0 = np.zeros(256, np.uint32)
    d_bins = device_array(histogram, bins0.copy(), on_host)
    grid = (COLS // TILE, ROWS // TILE)

    def run_transpose() -> None:
        for _ in range(reps):
            transpose.launch(grid, (TILE, TILE), [d_src, d_dst, ROWS, COLS])
        transpose.synchronize()

    def run_histogram() -> None:
        for _ in range(reps):
            histogram.launch(HIST_GRID, BLOCK, [d_values, np.uint64(VALUES), d_bins])
        histogram.synchronize()

    run_transpose()
    assert np.array_equal(fetch(d_dst, src), src.reshape(ROWS, COLS).T.reshape(-1))
    if on_host:
        d_bins[:] = 0
    else:
        d_bins.upload(bins0)
    histogram.launch(HIST_GRID, BLOCK, [d_values, np.uint64(VALUES), d_bins])
    histogram.synchronize()
    assert np.array_equal(fetch(d_bins, bins0), np.bincount(values, minlength=256))
    return {"transpose": run_transpose, "histogram": run_histogram}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--reps", type=int, default=0,
                        help="launches per timing (default: 1 on the CPU, 20 elsewhere)")
    args = parser.parse_args()
    reps = args.reps or (1 if args.backend == "cpu" else 20)
    target = 3.0 if args.backend == "cpu" else 2.0
    plain = runners(args.backend, False, reps)
    checked = runners(args.backend, True, reps)
    print(f"checked vs unchecked raw kernels on {args.backend} (target <= {target:g}x)")
    for name in plain:
        p, c = paired_seconds(plain[name], checked[name])
        ratios = sorted(b / a for a, b in zip(p, c, strict=True))
        print(f"  {name:<10} unchecked {min(p) / reps * 1e3:8.3f} ms  checked "
              f"{min(c) / reps * 1e3:8.3f} ms  ratio {min(c) / min(p):5.2f}x "
              f"(per pair {ratios[0]:.2f}-{ratios[-1]:.2f}x)")


if __name__ == "__main__":
    main()

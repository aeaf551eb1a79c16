"""Scan (``g.cumsum``) against the peer of each platform, measured in the same run.

CPU:  NUMBA_NUM_THREADS=2 python bench/scan.py cpu [--log2n 26] [--out FILE.md]
GPU:  python bench/scan.py cuda [--log2n 28] [--out FILE.md]     (needs CuPy)

* cpu: ``Kernel.run`` of an f32 ``g.cumsum`` in place on a 2**log2n NumPy array
  (host memory: no copy) against ``np.cumsum`` of the same array (out of place, as
  NumPy does it), wall time, best of ``--reps``; target: ours >= 2x faster.
* cuda (or hip): ``launch`` of the cumsum on a 2**log2n f32 CuPy array on the device,
  timed by CUDA events, against ``cupy.cumsum`` of the same array; both as bandwidth
  (the array read and written once over the time); target: >= 0.9x CuPy's.

Prints each ratio; ``--out`` writes the table as Markdown.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from benchkit import cupy_events_median, metric_table

sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(
    os.path.abspath(__file__))]

import numpy as np  # noqa: E402

import gompute_core as g  # noqa: E402

SPEC = g.cumsum("bench_scan_cumsum_f32", g.f32)


def best_wall(fn, reps: int) -> float:
    """The least wall time of ``reps`` calls of ``fn`` (after one warm-up)."""
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def cpu_rows(log2n: int, reps: int) -> list[tuple[str, str, float, float, float, str]]:
    n = 1 << log2n
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, n).astype(np.float32)
    data = x.copy()
    k = g.Kernel(SPEC, "cpu")

    def ours() -> None:
        np.copyto(data, x)  # both start from the same values; the copy is timed apart
        k.run(data)

    t_copy = best_wall(lambda: np.copyto(data, x), reps)
    t_ours = best_wall(ours, reps) - t_copy
    t_numpy = best_wall(lambda: np.cumsum(x), reps)
    print(f"cpu n=2**{log2n}: ours {t_ours * 1e3:.1f} ms, np.cumsum {t_numpy * 1e3:.1f} ms, "
          f"ours is {t_numpy / t_ours:.2f}x faster", flush=True)
    return [(f"cumsum 2**{log2n} f32 in place, {os.environ.get('NUMBA_NUM_THREADS', 'all')} "
             "threads (ms)", "np.cumsum", t_ours * 1e3, t_numpy * 1e3, t_numpy / t_ours,
             ">= 2 (speed-up)")]


def gpu_rows(backend: str, log2n: int, reps: int
             ) -> list[tuple[str, str, float, float, float, str]]:
    import cupy as cp

    n = 1 << log2n
    k = g.Kernel(SPEC, backend)
    x = cp.random.default_rng(1).uniform(-1, 1, n, dtype=cp.float32)
    data = cp.empty_like(x)
    cp.copyto(data, x)
    t_ours = cupy_events_median(cp, lambda: k.launch(data, n), reps)
    t_cupy = cupy_events_median(cp, lambda: cp.cumsum(x, out=data), reps)
    bw_ours, bw_cupy = 2 * 4 * n / t_ours, 2 * 4 * n / t_cupy
    print(f"{backend} n=2**{log2n}: ours {bw_ours / 1e9:.0f} GB/s, cupy.cumsum "
          f"{bw_cupy / 1e9:.0f} GB/s, ratio {bw_ours / bw_cupy:.3f}", flush=True)
    return [(f"cumsum 2**{log2n} f32 on device (GB/s)", "cupy.cumsum", bw_ours / 1e9,
             bw_cupy / 1e9, bw_ours / bw_cupy, ">= 0.90")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("backend", choices=("cpu", "cuda", "hip"))
    ap.add_argument("--log2n", type=int)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.backend == "cpu":
        rows = cpu_rows(args.log2n or 26, args.reps)
    else:
        rows = gpu_rows(args.backend, args.log2n or 28, args.reps)
    if args.out:
        lines = [f"# Scan: {args.backend}", "", *metric_table(rows), ""]
        with open(args.out, "w") as f:
            f.write("\n".join(lines))


if __name__ == "__main__":
    main()

"""Interop numbers on a GPU, each against its peer measured in the same run.

Run on a GPU machine with CuPy:  python bench/interop.py [--out FILE.md] [--log2n 28]

* ``run`` in place on a 2**log2n f32 CuPy array, as bandwidth (bytes read and written
  over CUDA-event time), against a device-to-device copy of the same bytes: at least
  0.90x proves no hidden copy.
* the host cost of ``launch`` taking a CuPy array instead of a native buffer (wall time
  per launch, small n, batches of the two alternating; the median of the pairs'
  differences): under 1 us more.

``run``'s events start before its Python does, so its host time is part of the
bandwidth: the info rows separate the kernel alone (``launch`` on the same array) and
``run``'s host time on a small array. ``bench/interop_host.py`` times the Python part
alone, anywhere.
"""

from __future__ import annotations

import argparse
import os
import sys

from benchkit import cupy_events_median as _events
from benchkit import metric_table, paired_extra, per_call

sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(
    os.path.abspath(__file__))]

import gompute_core as g  # noqa: E402


def add_half(x):
    return x + 0.5


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--log2n", type=int, default=28)
    args = ap.parse_args()
    import cupy as cp

    n = 1 << args.log2n
    nbytes = 4 * n
    k = g.Kernel(g.map("bench_iop_add_half", g.f32, None, add_half), "cuda")
    dev = k.context
    print(f"device {dev.name} {dev.arch}; n = 2**{args.log2n}", flush=True)
    rows = []

    src, dst = cp.zeros(n, cp.float32), cp.zeros(n, cp.float32)
    t_copy = _events(cp, lambda: cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr,
                                                               nbytes, 3, 0))
    t_run = _events(cp, lambda: k.run(dst))
    t_launch = _events(cp, lambda: k.launch(dst, n))
    buf = k.alloc(n)
    t_native = _events(cp, lambda: (k.launch(buf, n), dev.synchronize()))
    bw_copy, bw_run = 2 * nbytes / t_copy, 2 * nbytes / t_run
    rows.append((f"run in place, 2**{args.log2n} f32 CuPy (TB/s)", "device-to-device copy",
                 bw_run / 1e12, bw_copy / 1e12, bw_run / bw_copy, ">= 0.90"))
    rows.append(("  launch on the CuPy array, no sync (TB/s)", "device-to-device copy",
                 2 * nbytes / t_launch / 1e12, bw_copy / 1e12, t_copy / t_launch,
                 "info (the kernel alone)"))
    rows.append(("  native buffer launch + sync (TB/s)", "device-to-device copy",
                 2 * nbytes / t_native / 1e12, bw_copy / 1e12, t_copy / t_native, "info"))

    small = 1 << 10
    xs, bs = cp.zeros(small, cp.float32), k.alloc(small)
    t_buf, extra = paired_extra(lambda: k.launch(bs, small), lambda: k.launch(xs, small),
                                sync=dev.synchronize)
    rows.append(("launch taking a CuPy array, extra host cost (us)", "native buffer",
                 extra * 1e6, t_buf * 1e6, (t_buf + extra) / t_buf, "< 1 us"))
    with cp.cuda.Stream(non_blocking=True):
        t_side = per_call(lambda: k.launch(xs, small), sync=dev.synchronize)
    rows.append(("  same, CuPy on a non-blocking stream (us)", "native buffer",
                 (t_side - t_buf) * 1e6, t_buf * 1e6, t_side / t_buf, "info (event order)"))
    t_small_run = per_call(lambda: k.run(xs), calls=500, sync=dev.synchronize)
    rows.append(("  run in place on a small CuPy array, host time (us)", "native buffer launch",
                 t_small_run * 1e6, t_buf * 1e6, t_small_run / t_buf,
                 "info (counted in the run row's event time)"))

    table = "\n".join(metric_table(rows, ".3f"))
    print(table)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(table + "\n")


if __name__ == "__main__":
    main()

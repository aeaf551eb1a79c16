"""HIP numbers, each against its peer measured in the same run.

Run on a machine with a HIP device (an AMD GPU, or an NVIDIA GPU through the test
fixture in ``tests/hip_on_cuda``):  python bench/hip.py [--out FILE.md]

* map in place on 2**28 f32: bandwidth against a device-to-device copy (HIP events);
* ``launch`` host overhead against the CUDA backend's on the same GPU, when the CUDA
  backend is available too (the fixture's case: the difference is hip-python plus the
  fixture's translation, against pycuda-free ctypes calls).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from benchkit import Affine, add_one, affine, metric_table
from benchkit import events_median as _events

# this file is named hip.py: keep its folder off the path so `import hip` (hip-python) works
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(
    os.path.abspath(__file__))]

from gompute_hip.compiler import compiler_version  # noqa: E402

import gompute_core as g  # noqa: E402
from gompute_core.plugins import manager  # noqa: E402


def _launch_us(backend: str, reps: int = 20000) -> float:
    k = g.Kernel(g.map(f"bench_hip_add_one_{backend}", g.f32, None, add_one), backend)
    buf = k.alloc(1024)
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(reps):
            k.launch(buf, 1024, None)
        k.context.synchronize()
        best = min(best, (time.perf_counter() - t) / reps)
    k.close()
    return best * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--log2n", type=int, default=28)
    args = ap.parse_args()
    dev = manager.open_device("hip", 0)
    n = 1 << args.log2n
    rows: list[tuple[str, str, float, float, float, str]] = []
    km = g.Kernel(g.map("bench_hip_affine", g.f32, Affine, affine), "hip")
    src, dst = km.alloc(n), km.alloc(n)
    src.fill(0)
    p = Affine(a=1.0001, b=0.5)
    t_copy = _events(dev, lambda: dst.copy_from_async(src))
    t_map = _events(dev, lambda: km.launch(dst, n, p))
    rows.append((f"map in place 2**{args.log2n} f32 (TB/s)", "device-to-device copy",
                 8 * n / t_map / 1e12, 8 * n / t_copy / 1e12, t_copy / t_map, ">= 0.90"))
    hip_us = _launch_us("hip")
    if manager.probe("cuda").available:
        cuda_us = _launch_us("cuda")
        rows.append(("launch host overhead (us/launch)", "the CUDA backend, same GPU", hip_us,
                     cuda_us, hip_us / cuda_us, "info"))
    else:
        rows.append(("launch host overhead (us/launch)", "none available", hip_us,
                     float("nan"), float("nan"), "info"))
    table = "\n".join([f"device {dev.name} ({dev.arch}), {compiler_version()}",
                       "", *metric_table(rows)])
    print(table, flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write(f"# HIP numbers, {time.strftime('%Y-%m-%d')}\n\n{table}\n")


if __name__ == "__main__":
    main()

"""Launch host overhead against the physical floor: a C program calling ``cuLaunchKernel``
in a loop on an empty kernel with the same three arguments (pointer, u64 count, an 8-byte
params struct; ``bench/launch_floor.c``), measured in the same run as ``Kernel.launch`` of a
1024-element f32 map with params and ``RawKernel.launch`` of a three-argument raw kernel.

Run on a GPU machine with a C compiler:  python bench/launch_floor.py [--out FILE.md]

Each side runs rounds of 20,000 launches followed by one synchronization; the best round of
each counts (the host's speed drifts between rounds; the minimum is the path's own cost).
The C program and our two paths alternate, three times. Target (issue "kinds as objects"):
both ours <= 1.25x the C floor.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
from benchkit import Affine, affine, metric_table

import gompute_core as g

B = g.builtins

LAUNCHES, ROUNDS = 20000, 7


@g.raw_kernel
def floor_tiny(data: g.GlobalPtr[g.f32], n: g.u64, x: g.f32):
    i = B.global_id(0)
    if i < n:
        data[i] = x


def c_floor(binary: str) -> float:
    """Microseconds per launch of the C loop (its best round)."""
    out = subprocess.run([binary, str(LAUNCHES), str(ROUNDS)], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"launch_floor: the C loop failed ({out.returncode}): {out.stderr.strip()}")
    return float(out.stdout.strip())


def best_round(launch_once, sync) -> float:
    """Microseconds per launch: the best of ``ROUNDS`` rounds of ``LAUNCHES`` launches."""
    launch_once()
    sync()
    best = float("inf")
    for _ in range(ROUNDS):
        t = time.perf_counter()
        for _ in range(LAUNCHES):
            launch_once()
        sync()
        best = min(best, time.perf_counter() - t)
    return best / LAUNCHES * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    args = ap.parse_args()
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        sys.exit("launch_floor: no C compiler (set CC)")
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "launch_floor")
        subprocess.run([cc, "-O2", "-o", binary, os.path.join(here, "launch_floor.c"), "-ldl"],
                       check=True)
        km = g.Kernel(g.map("floor_affine", g.f32, Affine, affine), "cuda")
        buf = km.alloc(1024)
        p = Affine(a=1.0, b=0.5)
        raw = g.RawKernel(floor_tiny, "cuda")
        rbuf = raw.alloc(1024, g.f32)
        rargs = [rbuf, np.uint64(1024), np.float32(2)]
        sync = km.context.synchronize
        launch, rlaunch = km.launch, raw.launch
        t_c = t_map = t_raw = float("inf")
        for _ in range(3):
            t_c = min(t_c, c_floor(binary))
            t_map = min(t_map, best_round(lambda: launch(buf, 1024, p), sync))
            t_raw = min(t_raw, best_round(lambda: rlaunch(4, 256, rargs), sync))
    rows = [("Kernel.launch, 1024-element f32 map with params (us/launch)",
             "C cuLaunchKernel loop", t_map, t_c, t_map / t_c, "<= 1.25"),
            ("RawKernel.launch, 3 arguments (us/launch)", "C cuLaunchKernel loop", t_raw, t_c,
             t_raw / t_c, "<= 1.25")]
    table = "\n".join(metric_table(rows, ".3f"))
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(f"# Launch overhead against the C floor, {time.strftime('%Y-%m-%d')}\n\n"
                    f"{table}\n")


if __name__ == "__main__":
    main()

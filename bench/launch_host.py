"""The Python half of a launch, without a GPU: ``Kernel.launch`` and ``RawKernel.launch`` on
a device whose launcher does nothing, this tree against an earlier one, in the same run.

A GPU launch is our checks and dispatch plus the driver call (``bench/launch_floor.py``
measures both against a C loop, on a GPU). This measures the first part alone, on any
machine: the reference backend's packed device (``tests/pybackend.py``) with a launcher
that returns at once, a 1024-element f32 map (``Kernel.launch(buf, n)``) and a raw kernel
of three arguments (``RawKernel.launch(4, 256, [buf, n, s])``), best of five rounds of
200,000 launches each. With ``--base DIR`` (an unpacked earlier tree, e.g. ``git archive
REV | tar -x -C DIR``) each tree runs in its own process, alternating, three times, and
the medians and their ratio are printed.

Run: ``python bench/launch_host.py [--base DIR]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MEASURE = r'''
import sys, time
root = sys.argv[1]
sys.path[:0] = [root, root + "/tests", *(root + "/backends/" + b for b in ("cpu", "cuda", "hip"))]
import numpy as np
import gompute_core as g
import pybackend
from gompute_core.plugins import manager


class NopDevice(pybackend.PackedPyDevice):
    """Packed arguments; every launcher returns at once (API 2 trees load raw kernels
    through ``_load_raw``, later ones through ``_load``)."""

    def _load(self, artifact, kernel, args):
        return lambda *launch: None

    _load_raw = _load


B = g.builtins


@g.raw_kernel
def lh_scale(x: g.GlobalPtr[g.f32], n: g.u64, s: g.f32):
    i = B.global_id(0)
    if i < n:
        x[i] = x[i] * s


def lh_twice(x):
    return x * 2


def per_call(f, n=200000):
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            f()
        best = min(best, (time.perf_counter() - t) / n)
    return best * 1e6


with manager.isolated():
    backend = pybackend.PyBackend("nop", host_memory=False)
    backend.device_class = NopDevice
    if hasattr(pybackend, "FEATURES"):
        backend.features = pybackend.FEATURES
    else:  # a tree whose backends declared kind names
        pybackend.KINDS = (*pybackend.KINDS, "raw")
    manager.register(backend)
    k = g.Kernel(g.map("lh_map", g.f32, None, lh_twice), "nop")
    buf = k.device.alloc(4096)
    raw = g.RawKernel(lh_scale, "nop")
    rbuf, s = raw.alloc(1024, g.f32), np.float32(2)
    print(per_call(lambda: k.launch(buf, 1024)),
          per_call(lambda: raw.launch(4, 256, [rbuf, 1024, s])))
'''


def measure(tree: str, script: str) -> tuple[float, float]:
    """(Kernel.launch, RawKernel.launch) in microseconds, in a fresh process on ``tree``
    (``script``: :data:`MEASURE` in a file, where the frontend finds the kernels' source)."""
    out = subprocess.run([sys.executable, script, tree], capture_output=True, text=True,
                         check=True, cwd=os.path.dirname(script))
    spec, raw = out.stdout.split()[-2:]
    return float(spec), float(raw)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", help="an unpacked earlier tree to compare with")
    args = ap.parse_args()
    trees = [ROOT] + ([os.path.abspath(args.base)] if args.base else [])
    samples: dict[str, list[tuple[float, float]]] = {t: [] for t in trees}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "launch_host_measure.py")
        with open(script, "w") as f:
            f.write(MEASURE)
        for _ in range(3 if args.base else 1):
            for tree in trees:
                samples[tree].append(measure(tree, script))
    print(f"Python half of a launch, no-op launcher (us per launch; median of "
          f"{len(samples[ROOT])} processes, {time.perf_counter() - start:.0f} s)")
    print("| tree | Kernel.launch (map, 2 args) | RawKernel.launch (3 args) |")
    print("| --- | ---: | ---: |")
    med = {t: tuple(statistics.median(v[i] for v in samples[t]) for i in (0, 1)) for t in trees}
    for tree in trees:
        print(f"| {'this tree' if tree == ROOT else tree} | {med[tree][0]:.3f} | "
              f"{med[tree][1]:.3f} |")
    if args.base:
        base = med[trees[1]]
        print(f"| ratio (this / base) | {med[ROOT][0] / base[0]:.3f} | "
              f"{med[ROOT][1] / base[1]:.3f} |")


if __name__ == "__main__":
    main()

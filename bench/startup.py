"""Startup cost: ``import gompute_core`` plus backend discovery, in fresh processes.

Run: ``python bench/startup.py [--runs N]`` (or ``gompute bench startup``). Each
sample is a new interpreter; the figure is the median over ``--runs`` of
(import + discovery) minus ``python -c pass``. Discovery builds the registry:
every ``gompute.backends`` entry point is imported and asked for its
``BackendInfo`` (no probe). The budget is 150 ms; the script also checks that
no GPU driver binding (pycuda.driver, pyopencl, hip) was imported by then,
and exits 1 when either fails.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

BUDGET_MS = 150.0
DRIVERS = ("pycuda.driver", "pycuda.autoinit", "cuda.bindings.driver", "hip", "pyopencl",
           "numba.cuda")
"""Modules whose import would mean a GPU driver (or its binding) was loaded."""

DISCOVER = (
    "import sys, time, json\n"
    "t0 = time.perf_counter()\n"
    "import gompute_core\n"
    "from gompute_core.plugins import manager\n"
    "records = manager.backends()\n"
    "t1 = time.perf_counter()\n"
    "print(json.dumps({'ms': (t1 - t0) * 1e3, 'backends': [r.name for r in records],\n"
    f"                  'drivers': [m for m in {DRIVERS!r} if m in sys.modules]}}))\n")


def wall_ms(code: str) -> float:
    """Milliseconds a fresh interpreter takes to run ``code`` and exit."""
    import time

    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return (time.perf_counter() - t0) * 1e3


def main() -> int:
    """Measure, print the table, check the budget."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    base = statistics.median(wall_ms("pass") for _ in range(args.runs))
    walls, inner, info = [], [], {}
    for _ in range(args.runs):
        walls.append(wall_ms(DISCOVER))
        out = subprocess.run([sys.executable, "-c", DISCOVER], check=True,
                             capture_output=True, text=True).stdout
        info = json.loads(out)
        inner.append(info["ms"])
    extra = statistics.median(walls) - base
    print(f"backends discovered: {', '.join(info['backends']) or 'none'}")
    print(f"| measure | ms (median of {args.runs}) |\n| --- | ---: |")
    print(f"| python -c pass | {base:.1f} |")
    print(f"| import + discovery, whole process | {statistics.median(walls):.1f} |")
    print(f"| import + discovery, above python -c pass | {extra:.1f} |")
    print(f"| import + discovery, timed inside | {statistics.median(inner):.1f} |")
    ok = True
    if extra > BUDGET_MS:
        print(f"OVER BUDGET: {extra:.1f} ms > {BUDGET_MS:.0f} ms")
        ok = False
    if info["drivers"]:
        print(f"GPU driver bindings imported by discovery: {', '.join(info['drivers'])}")
        ok = False
    print("ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""CPU compile time: the first kernel of a fresh process and each next one, against numba.

Each sample is a new interpreter with an empty compile cache (its own
``GOMPUTE_CACHE_DIR``; numba caches nothing by default). Inside it, after the imports
(``gompute_core`` and the CPU backend; ``numba`` for the peer), three functions of
growing size are compiled and run once on ``2**--log2n`` f32 values, and each
compile-and-run is timed (``M`` is ``g.math`` for ours, ``math`` for numba):

* ours: ``g.Kernel(g.map(name, T, None, f), "cpu").run(data)``, the spec kernel the user
  writes (in place, on a copy of ``x`` made before the clock starts);
* numba, the same work: ``@njit(parallel=True)`` over a ``prange`` loop that calls the
  same scalar function (itself ``@njit``), into a preallocated output (a copy of ``x``:
  its pages touched before the clock starts, as ours are), which is what our threaded
  map does;
* numba, serial: ``@njit`` over a ``range`` loop (the cheapest compile numba offers, for
  scale; not the same work, since ours also runs threaded).

The first function pays each side's one-time setup (numba's and LLVM's initialization
and, for ours, the renderer and the backend; ours imports numba there, not at
``import gompute_core``, so "import + 1st kernel" is the fair first-kernel figure); the
next ones show the per-kernel cost. The
figure per row is the median over ``--runs`` processes; the ratio is ours / numba
parallel (the issue's target: <= 1.0). Ours compiles each loop at the first call that runs
it, and a call runs the threaded one only when it is large enough
(``GOMPUTE_CPU_PARALLEL_THRESHOLD``): at the default ``--log2n 16`` the calls run, and
compile, the serial loop only; at ``--log2n 24`` the threaded loop only, as the peer.

Run: ``python bench/compile_cpu.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

FUNCTIONS = '''
def f1(x):
    return x * 2.0 + 1.0

def f2(x):
    y = x * x - 3.0
    if y > 0:
        y = y / (x + 1.0)
    return y * 0.5

def f3(x):
    acc = x
    for k in range(4):
        acc = acc * 0.75 + M.sqrt(abs(acc) + k)
    return M.exp(-abs(acc)) + acc
'''

OURS = '''
import json, math, time
t0 = time.perf_counter()
import numpy as np
import gompute_core as g
import gompute_cpu
M = g.math
t_import = time.perf_counter() - t0
FUNCTIONS
x = np.linspace(-2, 2, 1 << LOG2N, dtype=np.float32)
inputs = [x.copy() for _ in range(3)]
times = []
for f, data in zip((f1, f2, f3), inputs):
    t0 = time.perf_counter()
    g.Kernel(g.map(f.__name__, g.f32, None, f), "cpu").run(data)
    times.append(time.perf_counter() - t0)
print(json.dumps({"import": t_import, "times": times}))
'''

NUMBA = '''
import json, math, time
t0 = time.perf_counter()
import numpy as np
from numba import njit, prange
M = math
t_import = time.perf_counter() - t0
FUNCTIONS
x = np.linspace(-2, 2, 1 << LOG2N, dtype=np.float32)
out = x.copy()
times = []
for f in (f1, f2, f3):
    t0 = time.perf_counter()
    scalar = njit(f)
    if PARALLEL:
        @njit(parallel=True)
        def loop(x, out):
            for i in prange(x.shape[0]):
                out[i] = scalar(x[i])
    else:
        @njit
        def loop(x, out):
            for i in range(x.shape[0]):
                out[i] = scalar(x[i])
    loop(x, out)
    times.append(time.perf_counter() - t0)
print(json.dumps({"import": t_import, "times": times}))
'''


def sample(code: str) -> dict[str, object]:
    """Run ``code`` (written to a file: kernel functions need their source) in a fresh
    interpreter with an empty Gompute cache; its JSON line."""
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "cache")
        os.mkdir(cache, 0o700)
        script = os.path.join(tmp, "program.py")
        with open(script, "w") as f:
            f.write(code)
        env = dict(os.environ, GOMPUTE_CACHE_DIR=cache)
        done = subprocess.run([sys.executable, script], capture_output=True, text=True,
                              env=env)
    if done.returncode:
        raise SystemExit(f"the timed program failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    """Interleave the three programs ``--runs`` times and print the medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--log2n", type=int, default=16, help="log2 of the array size")
    args = parser.parse_args()
    programs = {
        "ours (g.map + Kernel.run)": OURS.replace("FUNCTIONS", FUNCTIONS),
        "numba parallel (same work)": NUMBA.replace("FUNCTIONS", FUNCTIONS)
                                          .replace("PARALLEL", "True"),
        "numba serial": NUMBA.replace("FUNCTIONS", FUNCTIONS).replace("PARALLEL", "False"),
    }
    samples: dict[str, list[dict[str, object]]] = {name: [] for name in programs}
    for _ in range(args.runs):
        for name, code in programs.items():
            samples[name].append(sample(code.replace("LOG2N", str(args.log2n))))
    medians = {name: [statistics.median(s["times"][k] for s in runs)  # type: ignore[index]
                      for k in range(3)] for name, runs in samples.items()}
    imports = {name: statistics.median(s["import"] for s in runs)  # type: ignore[misc]
               for name, runs in samples.items()}
    print(f"CPU compile + first run of 2**{args.log2n} f32, fresh process, empty cache "
          f"(median of {args.runs}; {os.cpu_count()} CPUs)")
    print("| program | import s | 1st kernel s | 2nd s | 3rd s |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, m in medians.items():
        print(f"| {name} | {imports[name]:.3f} | {m[0]:.3f} | {m[1]:.3f} | {m[2]:.3f} |")
    ours, peer = medians["ours (g.map + Kernel.run)"], medians["numba parallel (same work)"]
    serial = medians["numba serial"]
    first = {name: imports[name] + m[0] for name, m in medians.items()}
    print(f"import + 1st kernel: ours / numba parallel "
          f"{first['ours (g.map + Kernel.run)'] / first['numba parallel (same work)']:.2f}x "
          f"(target <= 1.0), ours / numba serial "
          f"{first['ours (g.map + Kernel.run)'] / first['numba serial']:.2f}x")
    for k, label in enumerate(("1st", "2nd", "3rd")):
        print(f"{label} kernel: ours / numba parallel {ours[k] / peer[k]:.2f}x "
              f"(target <= 1.0), ours / numba serial {ours[k] / serial[k]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

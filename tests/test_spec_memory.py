"""Memory a compiled CPU spec keeps after it is dropped (issue 8: 1,000 specs under 50 MB).

A subprocess compiles, runs and drops specs (maps and custom reduces, each a new
module compiled by numba: the cache directory starts empty) and reports its RSS
growth per spec after a warm-up; a second process runs the same specs from the
disk cache. Per spec of this mix, compiled: about 2.4 MB before the CPU backend
skipped numba's pass pipelines on declarations (``gompute_cpu.numba_passes``) and
inlined kernel functions into the loops (``_FN`` in ``gompute_cpu.kernels``); 0.58 MB
with both; 0.39 MB since a module is released with its last owner
(``gompute_cpu.compiler``: numba's dispatchers otherwise never die). From the disk
cache: 134 KB before the release, 57 KB after.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("numba")

import gompute_core as g  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WARMUP = 10
SPECS = 40
BOUND_KB = 490
"""Per-spec growth allowed when compiling (KB): about 395 now, 584 without the module
release, 1,090+ with one of the two older fixes alone, 2,450 with neither."""
CACHED_BOUND_KB = 95
"""Per-spec growth allowed when the kernels load from the disk cache (KB): about 57 now,
134 without the module release."""

_SCRIPT = textwrap.dedent("""\
    import gc, os, sys
    import numpy as np
    import gompute_core as g

    def rss_kb():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024

    @g.params
    class P:
        a: g.f32

    def scale(x, p):
        y = x * np.float32(2) + p.a
        return y if y > 0 else -y

    def combine(a, b):
        return a + b * np.float32(0.5)

    def one(i):
        data = np.arange(-4, 4, dtype=np.float32)
        if i % 2:
            spec = g.reduce(f"memspec_r{i}", g.f32, None, combine, 0)
            with g.Kernel(spec, "cpu") as k:
                got = k.run(data)
            want = np.float32(0)
            for x in data:
                want = combine(want, x)
            assert got == want, (got, want)
        else:
            spec = g.map(f"memspec_m{i}", g.f32, P, scale)
            want = [scale(x, P(a=np.float32(1))) for x in data]
            with g.Kernel(spec, "cpu") as k:
                k.run(data, P(a=1))
            assert list(data) == want, (data, want)

    warmup, specs = int(sys.argv[1]), int(sys.argv[2])
    for i in range(warmup):
        one(i)
    gc.collect()
    before = rss_kb()
    for i in range(warmup, warmup + specs):
        one(i)
    gc.collect()
    print((rss_kb() - before) / specs)
    """)


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs Linux /proc")
def test_dropped_specs_keep_little_memory(tmp_path: Path) -> None:
    script = tmp_path / "leak.py"
    script.write_text(_SCRIPT)
    paths = [ROOT, ROOT / "backends" / "cpu", os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, GOMPUTE_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join(str(p) for p in paths if p))
    kept = []
    for _ in ("compiled", "from the disk cache"):
        done = subprocess.run([sys.executable, str(script), str(WARMUP), str(SPECS)],
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        kept.append(float(done.stdout.split()[-1]))
    assert kept[0] < BOUND_KB, f"{kept[0]:.0f} KB kept per compiled spec"
    assert kept[1] < CACHED_BOUND_KB, f"{kept[1]:.0f} KB kept per spec loaded from the cache"


def _square(x):
    return x * x + np.float32(1)


def _module_of(k: g.Kernel) -> Any:
    return k.program.entry.module


def test_a_module_lives_while_a_kernel_holds_it_and_is_released_after() -> None:
    """Two kernels of one spec share its module; it stays while either lives, is released
    (collectable, out of ``sys.modules``) when both are gone, and a new kernel of the
    same spec loads it again and computes what the Python oracle does."""
    spec = g.map("memspec_shared_square", g.f32, None, _square)
    data = np.linspace(-3, 3, 64, dtype=np.float32)
    want = np.array([_square(x) for x in data], np.float32)
    first, second = g.Kernel(spec, "cpu"), g.Kernel(spec, "cpu")
    module = _module_of(first)
    assert _module_of(second) is module
    name, gone = module.__name__, weakref.ref(module)
    del module
    first.close()
    del first
    gc.collect()
    assert gone() is not None and name in sys.modules
    np.testing.assert_array_equal(second.run(data.copy()), want)
    second.close()
    del second
    gc.collect()
    again = g.Kernel(spec, "cpu")  # the load releases what the collection queued
    gc.collect()
    assert gone() is None, "the released module is still alive"
    assert _module_of(again).__name__ == name and sys.modules[name] is _module_of(again)
    np.testing.assert_array_equal(again.run(data.copy()), want)
    again.close()


_SAME_CODE = textwrap.dedent("""\
    import re
    import numpy as np
    from numba import njit
    from gompute_cpu import numba_passes

    SOURCE = '''
    @njit(error_model="numpy", boundscheck=False)
    def f(x, a):
        return x * np.float32(2) + a if x > 0 else -x

    @njit(error_model="numpy", boundscheck=False)
    def k(data, n, a):
        for i in range(n):
            data[i] = f(data[i], a)
    '''

    def assembly():
        namespace = {"njit": njit, "np": np}
        exec(SOURCE, namespace)
        data = np.arange(-4, 4, dtype=np.float32)
        namespace["k"](data, 8, np.float32(1))
        text = next(iter(namespace["k"].inspect_asm().values()))
        return re.sub(r"[0-9]+", "0", text)  # numba numbers each compiled function

    before = assembly()
    assert numba_passes.install()
    print(before == assembly(), len(before))
    """)


def test_skipping_declarations_emits_the_same_code(tmp_path: Path) -> None:
    script = tmp_path / "same.py"
    script.write_text(_SAME_CODE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(ROOT / "backends" / "cpu"), os.environ.get("PYTHONPATH", "")) if p))
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    same, length = done.stdout.split()
    assert int(length) > 1000 and same == "True"


def test_numba_passes_opt_out_keeps_numbas_method() -> None:
    """``GOMPUTE_CPU_NUMBA_PASSES=numba`` leaves numba's own method in place; without it the
    backend's replacement is installed."""
    probe = ("from numba.core.codegen import CPUCodeLibrary as L\n"
             "from gompute_cpu import numba_passes as n\n"
             "print(n.install(), L._optimize_functions is n._optimize_defined_functions)\n")
    for value, want in (("numba", "False False"), ("", "True True")):
        env = {**os.environ, "GOMPUTE_CPU_NUMBA_PASSES": value}
        out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                             text=True, check=True, timeout=120)
        assert out.stdout.split()[-2:] == want.split(), (value, out.stdout, out.stderr)

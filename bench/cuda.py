"""CUDA numbers, each against its peer measured in the same run.

Run on a GPU machine:  python bench/cuda.py [--out FILE.md]
Prints a markdown table (metric, peer, value, peer value, ratio) and writes it
to ``--out`` when given. Timings: CUDA events for device work (median of
repeats), ``time.perf_counter`` for host-side costs (median of repeats).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from benchkit import Affine, add_one, affine, cupy_events_median, metric_table
from benchkit import events_median as _events

# this file is named cuda.py: keep its folder off the path so `import cuda` (CuPy) works
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(
    os.path.abspath(__file__))]

import gompute_core as g  # noqa: E402
from gompute_core.plugins import manager  # noqa: E402


def _wall(fn, reps: int = 7) -> float:
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--log2n", type=int, default=28)
    args = ap.parse_args()
    import cupy as cp
    import pycuda.driver as drv

    rows: list[tuple[str, str, float, float, float, str]] = []
    dev = manager.open_device("cuda", 0)
    # the pycuda peers run in the device's primary context, the one ours runs in
    drv.init()
    peer_context = drv.Device(dev.ordinal).retain_primary_context()
    peer_context.push()
    n = 1 << args.log2n
    nbytes = 4 * n
    print(f"device {dev.name} {dev.arch}, {dev.sm_count} SMs; n = 2**{args.log2n}", flush=True)

    # ---- map in place vs device-to-device copy ----------------------------------------
    km = g.Kernel(g.map("bench_affine", g.f32, Affine, affine), "cuda")
    src, dst = km.alloc(n), km.alloc(n)
    src.fill_async(0)
    p = Affine(a=1.0001, b=0.5)
    t_copy = _events(dev, lambda: dst.copy_from_async(src))
    bw_copy = 2 * nbytes / t_copy
    prog = km.program
    base_blocks = prog._max_blocks
    wave = dev.sm_count * (dev.max_threads_per_sm // 256)
    best = (0.0, base_blocks)
    for waves in (1, 2, 4, 8, 16, 32):
        prog._max_blocks, prog._last_n = wave * waves, -1
        t = _events(dev, lambda: km.launch(dst, n, p))
        bw = 2 * nbytes / t
        print(f"  map grid {wave * waves} blocks ({waves} waves): {bw / 1e12:.3f} TB/s",
              flush=True)
        best = max(best, (bw, wave * waves))
    prog._max_blocks, prog._last_n = base_blocks, -1
    bw_map_default = 2 * nbytes / _events(dev, lambda: km.launch(dst, n, p))
    rows.append((f"map in place 2**{args.log2n} f32 (TB/s)", "device-to-device copy",
                 bw_map_default / 1e12, bw_copy / 1e12, bw_map_default / bw_copy, ">= 0.90"))
    rows.append((f"  same, best grid ({best[1]} blocks)", "device-to-device copy",
                 best[0] / 1e12, bw_copy / 1e12, best[0] / bw_copy, "info"))
    cx = cp.zeros(n, cp.float32)
    ek = cp.ElementwiseKernel("float32 a, float32 b", "float32 x", "x = x * a + b", "bench_ek")

    bw_ek = 2 * nbytes / cupy_events_median(cp, lambda: ek(np.float32(1.0001), np.float32(0.5), cx))
    rows.append(("map in place (TB/s)", "CuPy ElementwiseKernel", bw_map_default / 1e12,
                 bw_ek / 1e12, bw_map_default / bw_ek, "info"))

    # ---- sum ----------------------------------------------------------------------------
    ks = g.Kernel(g.sum("bench_sum", g.f32, None), "cuda")
    blocks = ks.reduce_blocks(n)
    partials = ks.alloc(blocks)
    t_sum = _events(dev, lambda: ks.launch(dst, n, partials, blocks, None))
    cs = cp.ones(n, cp.float32)
    t_cupy_sum = cupy_events_median(cp, lambda: cs.sum())
    rows.append((f"sum 2**{args.log2n} f32 (TB/s)", "CuPy sum", nbytes / t_sum / 1e12,
                 nbytes / t_cupy_sum / 1e12, t_cupy_sum / t_sum, ">= 0.95"))
    host = np.random.default_rng(0).standard_normal(1 << 22).astype(np.float32)
    got = ks.run(host)
    print(f"  sum check: {got} vs numpy {host.sum(dtype=np.float64)}", flush=True)
    src.free()
    dst.free()

    # ---- launch overhead ---------------------------------------------------------------
    k1 = g.Kernel(g.map("bench_add_one", g.f32, None, add_one), "cuda")
    small = k1.alloc(1024)
    reps = 20000

    def ours():
        launch = k1.launch
        for _ in range(reps):
            launch(small, 1024, None)
        dev.synchronize()

    fn = drv.module_from_buffer(k1.artifact.image).get_function(k1.artifact.entry)
    fn.prepare("PQ")
    stream = drv.Stream()
    ptr = small.addr

    def pyc():
        call = fn.prepared_async_call
        for _ in range(reps):
            call((1, 1), (256, 1, 1), stream, ptr, 1024)
        dev.synchronize()

    csmall = cp.zeros(1024, cp.float32)
    ek1 = cp.ElementwiseKernel("", "float32 x", "x = x + 1", "bench_ek1")

    def cpk():
        for _ in range(reps):
            ek1(csmall)
        cp.cuda.Device().synchronize()

    # interleaved rounds, best of each: the host's speed drifts between back-to-back
    # blocks of 20,000 launches (seen: pycuda alone from 4.6 to 7.1 us/launch), and the
    # minimum is the launch path's own cost, free of scheduler noise
    t_ours = t_pyc = t_cp = float("inf")
    for _ in range(7):
        t_ours = min(t_ours, _wall(ours, 1))
        t_pyc = min(t_pyc, _wall(pyc, 1))
        t_cp = min(t_cp, _wall(cpk, 1))
    rows.append(("launch overhead, 20000 launches (us/launch)", "pycuda prepared_async_call",
                 t_ours / reps * 1e6, t_pyc / reps * 1e6, t_ours / t_pyc, "<= 1.15"))
    rows.append(("launch overhead (us/launch)", "CuPy ElementwiseKernel", t_ours / reps * 1e6,
                 t_cp / reps * 1e6, t_ours / t_cp, "< 1"))

    # ---- graph replay ------------------------------------------------------------------
    s = dev.create_stream()
    k1.stream = s
    s.begin_capture()
    for _ in range(10):
        k1.launch(small, 1024, None)
    exe = s.end_capture().instantiate()

    def ten():
        for _ in range(10):
            k1.launch(small, 1024, None)
        s.synchronize()

    def replay():
        exe.launch(s)
        s.synchronize()

    t_ten, t_graph = _wall(ten, 201), _wall(replay, 201)
    rows.append(("graph replay of 10 launches (us)", "10 separate launches", t_graph * 1e6,
                 t_ten * 1e6, t_graph / t_ten, "< 0.5"))
    k1.stream = dev.stream

    # ---- run from host: pipelined upload/launch/download vs pageable pycuda ---------------
    fa = drv.module_from_buffer(km.artifact.image).get_function(km.artifact.entry)
    fa.prepare("PQff")
    for log2m in (20, 26):
        m = 1 << log2m
        y = np.random.default_rng(2).standard_normal(m).astype(np.float32)
        # the peer's own array: run page-locks y (its design), which would make the
        # peer's "pageable" copies pinned ones too if they used y
        z = y.copy()
        dbuf = drv.mem_alloc(4 * m)

        def pageable(z=z, dbuf=dbuf, m=m):
            drv.memcpy_htod(dbuf, z)
            fa.prepared_call((dev.sm_count * 8, 1), (256, 1, 1), int(dbuf), m, 1.0001, 0.5)
            drv.Context.synchronize()
            drv.memcpy_dtoh(z, dbuf)

        t_run = t_page = float("inf")
        for _ in range(5):  # interleaved rounds, best of each
            t_run = min(t_run, _wall(lambda y=y: km.run(y, p), 5))
            t_page = min(t_page, _wall(pageable, 5))
        rows.append((f"run 2**{log2m} f32 map (ms)", "pycuda pageable copies + launch",
                     t_run * 1e3, t_page * 1e3, t_run / t_page, "<= 0.6"))
        check = np.random.default_rng(3).standard_normal(m).astype(np.float32)
        want = check * np.float32(1.0001) + np.float32(0.5)
        np.testing.assert_array_equal(km.run(check, p), want)
        dbuf.free()

    # small and large sizes: the peers write into preallocated host memory as our run does
    # (get(out=...)); a peer that allocates fresh host memory on every call pays page faults
    # ours does not
    for log2m in (20, 24, 28):
        m = 1 << log2m
        hsum = np.random.default_rng(4).standard_normal(m).astype(np.float32)
        t_run = t_cp = float("inf")
        for _ in range(5):
            t_run = min(t_run, _wall(lambda hsum=hsum: ks.run(hsum), 5))
            t_cp = min(t_cp, _wall(lambda hsum=hsum: float(cp.asarray(hsum).sum()), 5))
        rows.append((f"reduce run from host, 2**{log2m} f32 (ms)", "CuPy asarray(x).sum()",
                     t_run * 1e3, t_cp * 1e3, t_run / t_cp, "<= 1.0"))

    kg = g.Kernel(g.gather("bench_gather", g.f32, g.i32), "cuda")
    ksc = g.Kernel(g.scatter("bench_scatter", g.f32, g.i32), "cuda")
    for log2m in (20, 24):
        m = 1 << log2m
        rng = np.random.default_rng(5)
        gsrc = rng.standard_normal(m).astype(np.float32)
        gidx = rng.integers(0, m, m, dtype=np.int32)
        gout, gout_peer = np.zeros(m, np.float32), np.zeros(m, np.float32)
        sidx = rng.permutation(m).astype(np.int32)
        sout, sout_peer = np.zeros(m, np.float32), np.zeros(m, np.float32)

        def cp_gather(gsrc=gsrc, gidx=gidx, gout_peer=gout_peer):
            return cp.take(cp.asarray(gsrc), cp.asarray(gidx)).get(out=gout_peer)

        def cp_scatter(gsrc=gsrc, sidx=sidx, sout=sout, sout_peer=sout_peer):
            o = cp.asarray(sout)
            o[cp.asarray(sidx)] = cp.asarray(gsrc)
            return o.get(out=sout_peer)

        t_g = t_cg = t_s = t_cs = float("inf")
        for _ in range(5):
            t_g = min(t_g, _wall(lambda a=(gsrc, gidx, gout): kg.run(*a), 5))
            t_cg = min(t_cg, _wall(cp_gather, 5))
            t_s = min(t_s, _wall(lambda a=(gsrc, sidx, sout): ksc.run(*a), 5))
            t_cs = min(t_cs, _wall(cp_scatter, 5))
        np.testing.assert_array_equal(kg.run(gsrc, gidx, gout), cp_gather())
        np.testing.assert_array_equal(ksc.run(gsrc, sidx, sout), cp_scatter())
        target = "<= 1.0" if log2m == 20 else "<= 1.1"
        rows.append((f"gather run 2**{log2m} f32 (ms)", "CuPy take + get(out=)", t_g * 1e3,
                     t_cg * 1e3, t_g / t_cg, target))
        rows.append((f"scatter run 2**{log2m} f32 (ms)", "CuPy scatter + get(out=)", t_s * 1e3,
                     t_cs * 1e3, t_s / t_cs, "<= 1.1"))

    # ---- compile ----------------------------------------------------------------------
    from gompute_cuda.compiler import CudaCompiler
    from gompute_cuda.nvrtc import load_nvrtc

    from gompute_core.compilation import compile_kernel

    load_nvrtc()
    with tempfile.TemporaryDirectory() as cache:
        os.environ["GOMPUTE_CACHE_DIR"] = cache
        spec = g.map(f"bench_fresh_{os.getpid()}", g.f32, Affine, affine)
        kir = spec.lower()
        t0 = time.perf_counter()
        compile_kernel(CudaCompiler(), kir, dev.arch)
        t_first = time.perf_counter() - t0
        script = os.path.join(cache, "hit.py")
        with open(script, "w") as f:
            f.write(
                "import time\nimport gompute_core as g\n"
                "from gompute_cuda.compiler import CudaCompiler\n"
                "from gompute_core.compilation import compile_kernel\n"
                "@g.params\nclass Affine:\n    a: g.f32\n    b: g.f32\n"
                "def affine(x, p: Affine):\n    return x * p.a + p.b\n"
                f"kir = g.map({spec.name!r}, g.f32, Affine, affine).lower()\n"
                "t = time.perf_counter()\n"
                f"compile_kernel(CudaCompiler(), kir, {dev.arch!r})\n"
                "print(time.perf_counter() - t)\n")
        out = subprocess.run([sys.executable, script], capture_output=True, text=True,
                             env=dict(os.environ))
        try:
            t_hit = float(out.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            print(out.stdout, out.stderr)
            t_hit = float("nan")
    rows.append(("first compile of a new kernel (ms)", "budget 150 ms", t_first * 1e3, 150.0,
                 t_first * 1e3 / 150.0, "< 1"))
    rows.append(("disk-cache hit in a new process (ms)", "budget 2 ms", t_hit * 1e3, 2.0,
                 t_hit * 1e3 / 2.0, "< 1"))

    table = "\n".join(metric_table(rows))
    print(table, flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write(f"# CUDA numbers: {dev.name} ({dev.arch}), {time.strftime('%Y-%m-%d')}\n\n"
                    f"{table}\n")
    peer_context.pop()


if __name__ == "__main__":
    main()

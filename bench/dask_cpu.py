"""Dask scale-out: map then sum with 1 and 2 worker processes (CPU backend by default).

Run: ``python bench/dask_cpu.py [--log2n 26] [--chunks 16] [--workers 1,2] [--dtype i64]``
(or ``gompute bench --out DIR dask_cpu`` for a table and a chart). The graph
builds ``x = arange(n) % 1000`` (``--dtype`` i64 or f32) chunk by chunk on the workers,
maps ``x * 3 + 1`` and sums, all in ``--chunks`` chunks; ``reduce`` fuses the map into
the sum's kernel (one task per chunk) unless ``--no-fuse``. Each worker has one
thread; on the CPU it runs our serial loops (``GOMPUTE_CPU_PARALLEL_THRESHOLD``
past the chunk size), so the workers are the only parallelism. On GPUs
(``--backend cuda``) worker ``k`` sees only GPU ``k`` (``CUDA_VISIBLE_DEVICES``);
``--cupy`` makes the chunks CuPy arrays and runs the same pipeline in CuPy's own
operations under Dask as the peer, on the same cluster. Prints the best of
``--repeats`` wall times per worker count, the speed-up against one worker, the
optimized graphs' task counts, the same graph run in this process with Dask's
synchronous scheduler and one ``Kernel.run`` per kernel over the whole array; checks
every result against the exact sum (i64: equal; f32: within ``F32_RTOL``) and prints
whether the distributed results have the synchronous one's bits (they should: the
partials are folded in chunk order).
The issue's GPU configuration: ``--backend cuda --cupy --dtype f32 --log2n 33 --chunks 32``.
No target on a 2-core machine (the scheduler and the client share the cores).
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys
import time
from functools import partial

# first of all: the workers and this process import the specs from bench/dask_workers, and
# bench/ itself leaves the path, before anything imports CuPy (whose `cuda` package
# bench/cuda.py would shadow) or hip-python (`hip`, shadowed by bench/hip.py)
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dask_workers")
sys.path[:] = [HERE, *(p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(
    HERE))]

import dask  # noqa: E402
import dask.array as da  # noqa: E402
import distributed  # noqa: E402
from dask_bench_kernels import SPECS, arange_mod  # noqa: E402

import gompute_core as g  # noqa: E402
from gompute_core import dask as gd  # noqa: E402
from gompute_core.benchreport import BenchReport  # noqa: E402

DTYPES = {"i64": "int64", "f32": "float32"}
F32_RTOL = 1e-3
"""An f32 sum of 2**33 terms is not exact: results must be this close to the exact one."""


def chunk_sizes(n: int, chunks: int) -> tuple[int, ...]:
    """``n`` split into ``chunks`` chunks (the last one shorter)."""
    size = -(-n // chunks)
    return (size,) * (n // size) + ((n % size,) if n % size else ())


def exact_sum(n: int) -> int:
    """The exact sum of ``(k % 1000) * 3 + 1`` for ``k < n`` (Python integers)."""
    cycles, rest = divmod(n, 1000)
    return cycles * (3 * 999 * 1000 // 2 + 1000) + 3 * rest * (rest - 1) // 2 + rest


def source(n: int, chunks: int, module: str, dtype: str) -> da.Array:
    """The lazy ``arange(n) % 1000``, each chunk made by ``module`` where it runs."""
    meta = importlib.import_module(module).empty(0, dtype=DTYPES[dtype])
    return da.map_blocks(arange_mod, chunks=(chunk_sizes(n, chunks),), dtype=DTYPES[dtype],
                         module=module, value_type=DTYPES[dtype], meta=meta)


def graph(n: int, chunks: int, backend: str, module: str, dtype: str,
          fuse: bool) -> da.Array:
    """The lazy map-then-sum of ``arange(n) % 1000`` with our map and sum."""
    mapper, total, params = SPECS[dtype]
    device = None  # on GPUs each worker sees only its own GPU, as device 0 (see _cluster)
    y = gd.map_blocks(mapper, source(n, chunks, module, dtype), p=params(a=3, b=1),
                      backend=backend, device=device)
    return gd.reduce(total, y, backend=backend, device=device, fuse=fuse)


def cupy_graph(n: int, chunks: int, dtype: str) -> da.Array:
    """The same map then sum written with CuPy chunks and Dask's own operations."""
    return (source(n, chunks, "cupy", dtype) * 3 + 1).sum()


def task_count(work: da.Array) -> int:
    """Tasks of ``work``'s graph after Dask's optimizations (what the scheduler runs)."""
    (optimized,) = dask.optimize(work)
    return len(optimized.__dask_graph__())


def release_memory(module: str) -> None:
    """Give the memory CuPy's pool keeps in this process back to the GPU (worker 0 shares
    GPU 0 with this process)."""
    if module == "cupy":
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()


def one_process(n: int, chunks: int, backend: str, module: str,
                dtype: str) -> tuple[object, float]:
    """The whole array (made chunk by chunk) through two ``Kernel.run`` calls here."""
    mapper, total_spec, params = SPECS[dtype]
    p = params(a=3, b=1)
    data = importlib.import_module(module).empty(n, dtype=DTYPES[dtype])
    lo = 0
    for size in chunk_sizes(n, chunks):
        data[lo:lo + size] = arange_mod({None: {"array-location": [(lo, lo + size)]}},
                                        module, DTYPES[dtype])
        lo += size
    with g.Kernel(mapper, backend) as kmap, g.Kernel(total_spec, backend) as ksum:
        # warm-up: compile, first launch (and on the CPU the thread pool: full size; on a
        # GPU a full-size copy would double the memory this process holds on GPU 0)
        kmap.run(data.copy() if module == "numpy" else data[:1 << 20].copy(), p)
        ksum.run(data)
        t = time.perf_counter()
        kmap.run(data, p)
        total = ksum.run(data)
        elapsed = time.perf_counter() - t
    del data
    release_memory(module)
    return total, elapsed


def agrees(got: object, expected: int, dtype: str) -> bool:
    """``got`` is the exact sum (i64) or within ``F32_RTOL`` of it (f32)."""
    if dtype == "i64":
        return int(got) == expected
    return abs(float(got) - expected) <= F32_RTOL * expected


def _cluster(workers: int, backend: str) -> distributed.deploy.Cluster:
    """``workers`` single-threaded worker processes; on GPUs worker ``k`` sees only GPU ``k``
    (``CUDA_VISIBLE_DEVICES``, as dask-cuda's LocalCUDACluster arranges), so CuPy's current
    device and the kernels' device 0 are that GPU."""
    if backend == "cpu":
        return distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                        processes=True, dashboard_address=None)
    specs = {k: {"cls": distributed.Nanny,
                 "options": {"nthreads": 1, "env": {"CUDA_VISIBLE_DEVICES": str(k)}}}
             for k in range(workers)}
    scheduler = {"cls": distributed.Scheduler, "options": {"dashboard_address": None}}
    return distributed.SpecCluster(workers=specs, scheduler=scheduler)


def _compute(client: distributed.Client, work: da.Array) -> object:
    return client.compute(work).result()


def timed(fn, repeats: int) -> tuple[object, float]:
    """``fn()``'s result and its best wall time over ``repeats`` runs after a warm-up."""
    result = fn()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return result, best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2n", type=int, default=26)
    ap.add_argument("--chunks", type=int, default=16)
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--backend", default="cpu", help="backend of every worker (cpu, cuda, ...)")
    ap.add_argument("--cupy", action="store_true", help="CuPy chunks (GPU backends)")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="i64")
    ap.add_argument("--worker-saturation", default=None,
                    help="the scheduler's distributed.scheduler.worker-saturation (Dask's "
                         "default 1.1 queues root tasks on the scheduler; inf sends them "
                         "all to the workers at once)")
    ap.add_argument("--no-fuse", action="store_true",
                    help="run the map as its own step (gompute_core.dask.reduce(fuse=False))")
    args = ap.parse_args()
    module = "cupy" if args.cupy else "numpy"
    n, fuse = 2 ** args.log2n, not args.no_fuse
    report = BenchReport.from_env("dask_cpu")
    bench = f"Dask map then sum, {args.backend} backend, {module} chunks"
    report.chart(bench, "workers", "speed-up vs 1 worker")
    print(f"# host: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"dask {dask.__version__}, distributed {distributed.__version__}; "
          f"n = 2**{args.log2n} {args.dtype} in {args.chunks} {module} chunks, backend "
          f"{args.backend}, map {'fused into the sum' if fuse else 'a separate step'}",
          flush=True)
    if args.worker_saturation is not None:
        dask.config.set({"distributed.scheduler.worker-saturation":
                         float(args.worker_saturation)})
    saturation = dask.config.get("distributed.scheduler.worker-saturation")
    print(f"# scheduler worker-saturation: {saturation}", flush=True)
    expected = exact_sum(n)
    work = graph(n, args.chunks, args.backend, module, args.dtype, fuse)
    tasks = f"optimized graph: {task_count(work)} tasks"
    if args.cupy:
        tasks += f" (CuPy's: {task_count(cupy_graph(n, args.chunks, args.dtype))})"
    print(tasks, flush=True)
    single, t_single = one_process(n, args.chunks, args.backend, module, args.dtype)
    print(f"one Kernel.run each, no Dask:           {t_single * 1e3:9.1f} ms", flush=True)
    sync, t_sync = timed(lambda: graph(n, args.chunks, args.backend, module, args.dtype,
                                       fuse).compute(scheduler="sync"), args.repeats)
    release_memory(module)
    print(f"same graph, Dask sync scheduler:        {t_sync * 1e3:9.1f} ms", flush=True)
    assert agrees(single, expected, args.dtype) and agrees(sync, expected, args.dtype), \
        (single, sync, expected)
    env = {"PYTHONPATH": os.pathsep.join([HERE, *sys.path])}
    if args.backend == "cpu":
        env["GOMPUTE_CPU_PARALLEL_THRESHOLD"] = str(1 << 62)
    base = None
    for workers in (int(w) for w in args.workers.split(",")):
        os.environ.update(env)
        with _cluster(workers, args.backend) as cluster, distributed.Client(cluster) as client:
            got, t = timed(partial(_compute, client, graph(
                n, args.chunks, args.backend, module, args.dtype, fuse)), args.repeats)
            if args.cupy:  # the peer: the same pipeline in CuPy's own operations
                peer, t_peer = timed(partial(_compute, client,
                                             cupy_graph(n, args.chunks, args.dtype)),
                                     args.repeats)
                assert agrees(peer, expected, args.dtype), (workers, peer, expected)
        assert agrees(got, expected, args.dtype), (workers, got, expected)
        base = base or t
        print(f"distributed, {workers} worker(s):          {t * 1e3:9.1f} ms   "
              f"speed-up {base / t:5.2f}x vs 1 worker   same bits as sync: {got == sync}",
              flush=True)
        if args.cupy:
            print(f"  CuPy under Dask, {workers} worker(s):    {t_peer * 1e3:9.1f} ms   "
                  f"ours / CuPy time {t / t_peer:5.2f}", flush=True)
        report.add(bench, "ours (gompute_core.dask)", workers, base / t)
        report.add(bench, "ideal", workers, workers)
    for path in report.write():
        print(f"wrote {path}")


if __name__ == "__main__":
    main()

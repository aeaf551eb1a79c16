"""Dask scale-out: map then sum with 1 and 2 worker processes (CPU backend by default).

Run: ``python bench/dask_cpu.py [--log2n 26] [--chunks 16] [--workers 1,2]``
(or ``gompute bench --out DIR dask_cpu`` for a table and a chart). The graph
builds ``x = arange(n) % 1000`` (i64) chunk by chunk on the workers, maps
``x * 3 + 1`` and sums, all in ``--chunks`` chunks. Each worker has one
thread; on the CPU it runs our serial loops (``GOMPUTE_CPU_PARALLEL_THRESHOLD``
past the chunk size), so the workers are the only parallelism. On GPUs
(``--backend cuda``) worker ``k`` uses device ``k``; ``--cupy`` makes the
chunks CuPy arrays (``Kernel.run`` must take device arrays). Prints the best of ``--repeats`` wall
times per worker count, the speed-up against one worker, the same graph run
in this process with Dask's synchronous scheduler, and checks that every
result is identical to it and to one ``Kernel.run`` over the whole array.
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
import numpy as np  # noqa: E402
from dask_bench_kernels import AFFINE, TOTAL, Affine, arange_mod  # noqa: E402

import gompute_core as g  # noqa: E402
from gompute_core import dask as gd  # noqa: E402
from gompute_core.benchreport import BenchReport  # noqa: E402

P = Affine(a=3, b=1)


def graph(n: int, chunks: int, backend: str, module: str) -> da.Array:
    """The lazy map-then-sum of ``arange(n) % 1000`` (chunks made by ``module``)."""
    size = -(-n // chunks)
    sizes = (size,) * (n // size) + ((n % size,) if n % size else ())
    meta = importlib.import_module(module).empty(0, dtype=np.int64)
    x = da.map_blocks(arange_mod, chunks=(sizes,), dtype=np.int64, module=module, meta=meta)
    device = None  # on GPUs each worker sees only its own GPU, as device 0 (see _cluster)
    y = gd.map_blocks(AFFINE, x, p=P, backend=backend, device=device)
    return gd.reduce(TOTAL, y, backend=backend, device=device)


def one_process(n: int, backend: str, module: str) -> tuple[np.int64, float]:
    """The whole array through two ``Kernel.run`` calls in this process."""
    data = arange_mod({None: {"array-location": [(0, n)]}}, module)
    with g.Kernel(AFFINE, backend) as kmap, g.Kernel(TOTAL, backend) as ksum:
        kmap.run(data.copy(), P)
        ksum.run(data)  # warm-up: compile and first touch
        t = time.perf_counter()
        kmap.run(data, P)
        total = ksum.run(data)
        return total, time.perf_counter() - t


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


def _cupy_graph(n: int, chunks: int) -> da.Array:
    """The same map then sum written with CuPy chunks and Dask's own operations."""
    size = -(-n // chunks)
    sizes = (size,) * (n // size) + ((n % size,) if n % size else ())
    import cupy

    x = da.map_blocks(arange_mod, chunks=(sizes,), dtype=np.int64, module="cupy",
                      meta=cupy.empty(0, dtype=np.int64))
    return (x * 3 + 1).sum()


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
    args = ap.parse_args()
    module = "cupy" if args.cupy else "numpy"
    n = 2 ** args.log2n
    report = BenchReport.from_env("dask_cpu")
    bench = f"Dask map then sum, {args.backend} backend, {module} chunks"
    report.chart(bench, "workers", "speed-up vs 1 worker")
    print(f"# host: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"dask {dask.__version__}, distributed {distributed.__version__}; "
          f"n = 2**{args.log2n} i64 in {args.chunks} {module} chunks, backend "
          f"{args.backend}", flush=True)
    expected = np.int64(((np.arange(n, dtype=np.int64) % 1000) * 3 + 1).sum())
    single, t_single = one_process(n, args.backend, module)
    sync, t_sync = timed(lambda: graph(n, args.chunks, args.backend, module).compute(
        scheduler="sync"), args.repeats)
    print(f"one Kernel.run each, no Dask:           {t_single * 1e3:9.1f} ms", flush=True)
    print(f"same graph, Dask sync scheduler:        {t_sync * 1e3:9.1f} ms", flush=True)
    assert single == sync == expected, (single, sync, expected)
    env = {"PYTHONPATH": os.pathsep.join([HERE, *sys.path])}
    if args.backend == "cpu":
        env["GOMPUTE_CPU_PARALLEL_THRESHOLD"] = str(1 << 62)
    base = None
    for workers in (int(w) for w in args.workers.split(",")):
        os.environ.update(env)
        with _cluster(workers, args.backend) as cluster, distributed.Client(cluster) as client:
            got, t = timed(partial(_compute, client, graph(n, args.chunks, args.backend,
                                                           module)), args.repeats)
            if args.cupy:  # the peer: the same pipeline in CuPy's own operations
                peer_graph = partial(_compute, client, _cupy_graph(n, args.chunks))
                peer, t_peer = timed(peer_graph, args.repeats)
                assert int(peer) == expected, (workers, peer, expected)
        assert got == expected, (workers, got, expected)
        base = base or t
        print(f"distributed, {workers} worker(s):          {t * 1e3:9.1f} ms   "
              f"speed-up {base / t:5.2f}x vs 1 worker   result identical: {got == single}",
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

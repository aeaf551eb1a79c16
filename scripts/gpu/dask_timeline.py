"""Where the time of the Dask GPU graph goes: the issue's configuration of
``bench/dask_cpu.py`` (2**33 f32 in CuPy chunks of 2**28, map fused into the sum) on 1 and
2 single-GPU workers, with Dask's task stream per run.

Prints, per configuration (1 and 2 workers, worker-saturation 1.1 and inf): Dask's own
cost for a graph of 33 empty tasks; the wall time of each run; per worker, its task count and the
span from the run's start to its first task's start and its last task's end; the
tasks that waited for data from the other worker and the last task, with their steps.
First, the GPU time alone: the 32 chunk tasks run back to back in this process and
synchronized once (what one worker cannot beat), and 16 of them (half the graph, what
each of two workers does). Variants: each chunk task returning only once the previous
chunk's GPU work is done (the host at most one chunk ahead, so that the scheduler sees the
GPU's progress), and the partials made host scalars inside each chunk task (a
synchronization per task, nothing on the device crosses workers).

Run on a GPU machine with dask, distributed and CuPy: ``python scripts/gpu/dask_timeline.py``.
"""

from __future__ import annotations

import os
import sys
import time
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import dask  # noqa: E402
import dask_cpu as bench  # noqa: E402  (it fixes sys.path for the workers first)
import distributed  # noqa: E402

from gompute_core import dask as gd  # noqa: E402

N, CHUNKS, DTYPE = 2 ** 33, 32, "f32"


def gpu_alone(chunks: int) -> float:
    """``chunks`` chunk tasks of the fused graph run here back to back, one sync at the end."""
    import cupy

    mapper, total, params = bench.SPECS[DTYPE]
    fused = (mapper, params(a=3, b=1))
    size = N // CHUNKS

    def once() -> None:
        for c in range(chunks):
            x = bench.arange_mod({None: {"array-location": [(c * size, (c + 1) * size)]}},
                                 "cupy", bench.DTYPES[DTYPE])
            gd._reduce_chunk(x, None, True, spec=total, p=None, backend="cuda", device=None,
                             map_step=fused)
        cupy.cuda.runtime.deviceSynchronize()

    once()
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        once()
        best = min(best, time.perf_counter() - t)
    cupy.get_default_memory_pool().free_all_blocks()
    return best


def _wrap_chunks(after) -> None:
    """Worker side: every chunk task's partial passes through ``after`` (replacing an
    earlier wrapper, not stacking on it)."""
    from gompute_core import dask as wd

    original = getattr(wd._reduce_chunk, "original", wd._reduce_chunk)

    def chunk(*args, **kwargs):
        return after(original(*args, **kwargs))

    chunk.original = original
    wd._reduce_chunk = chunk


def host_partials() -> None:
    """Worker side: every chunk's partial becomes a NumPy array inside its task."""
    import cupy as cp

    _wrap_chunks(lambda out: cp.asnumpy(out) if isinstance(out, cp.ndarray) else out)


def run_ahead_one() -> None:
    """Worker side: a chunk task returns once the previous chunk's GPU work is done (the
    host at most one chunk ahead of the GPU, so task completions follow the GPU)."""
    import cupy as cp

    previous = []

    def wait_for_previous(out):
        event = cp.cuda.Event(disable_timing=True)
        event.record()
        if previous:
            previous.pop().synchronize()
        previous.append(event)
        return out

    _wrap_chunks(wait_for_previous)


def trivial_floor(client: distributed.Client) -> None:
    """Dask's own cost: 32 one-element chunks summed (33 tasks doing nothing)."""
    import dask.array as da

    work = da.ones(32, chunks=1).sum(split_every=32)
    client.compute(work).result()
    times = []
    for _ in range(10):
        with distributed.get_task_stream(client) as ts:
            t0 = time.time()
            client.compute(work).result()
            wall = time.time() - t0
        first = min(s["start"] for t in ts.data for s in t["startstops"])
        last = max(s["stop"] for t in ts.data for s in t["startstops"])
        times.append((wall, first - t0, t0 + wall - last))
    wall, first, after = sorted(times)[len(times) // 2]
    print(f"  trivial 33-task graph (median of 10): {wall * 1e3:6.1f} ms; first task starts "
          f"at {first * 1e3:.1f} ms, the result arrives {after * 1e3:.1f} ms after the last "
          "task ends", flush=True)


def summary(data: list[dict], t0: float) -> str:
    """Per worker: tasks, first start and last end (ms from t0); then each task that waited
    for data from another worker, and the last task to end."""
    per = defaultdict(list)
    lines = []
    for task in data:
        per[task["worker"]].append(task)
    for worker, tasks in sorted(per.items()):
        computes = [s for t in tasks for s in t["startstops"] if s["action"] == "compute"]
        first = min(s["start"] for s in computes) - t0
        last_end = max(s["stop"] for s in computes) - t0
        busy = sum(s["stop"] - s["start"] for s in computes)
        lines.append(f"    worker {worker[-5:]}: {len(tasks)} tasks, first start "
                     f"{first * 1e3:7.1f} ms, last end {last_end * 1e3:7.1f} ms, compute busy "
                     f"{busy * 1e3:6.1f} ms")
    last = max(data, key=lambda t: t["startstops"][-1]["stop"])
    for task in data:
        if task is last or any(s["action"] == "transfer" for s in task["startstops"]):
            acts = ", ".join(f"{s['action']} {(s['start'] - t0) * 1e3:.1f}-"
                             f"{(s['stop'] - t0) * 1e3:.1f}" for s in task["startstops"])
            lines.append(f"    {str(task['key'])[:60]} on {task['worker'][-5:]}: {acts}")
    return "\n".join(lines)


def run(client: distributed.Client, work, label: str, repeats: int = 3) -> None:
    client.compute(work).result()  # warm-up
    for _ in range(repeats):
        with distributed.get_task_stream(client) as ts:
            t0 = time.time()
            got = client.compute(work).result()
            wall = time.time() - t0
        ok = bench.agrees(got, bench.exact_sum(N), DTYPE)
        print(f"  {label}: {wall * 1e3:7.1f} ms (result correct: {ok})", flush=True)
    print(summary(ts.data, t0), flush=True)


def main() -> None:
    print(f"GPU alone, 32 chunks: {gpu_alone(32) * 1e3:7.1f} ms; 16 chunks: "
          f"{gpu_alone(16) * 1e3:7.1f} ms", flush=True)
    os.environ["PYTHONPATH"] = os.pathsep.join([bench.HERE, *sys.path])
    work = bench.graph(N, CHUNKS, "cuda", "cupy", DTYPE, True)
    for saturation in (1.1, float("inf")):
        dask.config.set({"distributed.scheduler.worker-saturation": saturation})
        for workers in (1, 2):
            with bench._cluster(workers, "cuda") as cluster, \
                    distributed.Client(cluster) as client:
                print(f"== {workers} worker(s), worker-saturation {saturation}", flush=True)
                trivial_floor(client)
                run(client, work, "fused graph")
                client.run(run_ahead_one)
                run(client, work, "host at most one chunk ahead")
                if workers == 2 and saturation == 1.1:
                    client.run(host_partials)
                    run(client, work, "host partials")


if __name__ == "__main__":
    main()

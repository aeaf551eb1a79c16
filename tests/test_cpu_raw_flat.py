"""CPU raw kernels whose threads never meet (no barrier, no shared memory) run a large 1-D
launch as one flat parallel loop over the threads; other launches of them run by blocks.
Each against a plain-Python run of every thread."""

from __future__ import annotations

import numpy as np
import pytest
from test_cpu_raw import cpu_block_sum, cpu_collatz
from test_cpu_raw import mode as mode  # the serial / threaded-blocks fixture

import gompute_core as g
from gompute_core.raw.kernel import RawKernelDef
from gompute_core.workgroup import plan

B = g.builtins


def flat_kernel(block: int | None, name: str) -> RawKernelDef:
    """A flat kernel: a block statement run once, a thread's return from inside a loop,
    every geometry builtin, atomics; ``block`` declared or given at launch. Thread
    ``(x, y, z)`` reads ``data[x]`` and writes its own element of ``out``."""

    @g.raw_kernel(name=name, block=block)
    def flat(data: g.GlobalPtr[g.i64], n: g.u64, lim: g.i64, out: g.GlobalPtr[g.i64],
             hits: g.GlobalPtr[g.u64]):
        half = lim // 2
        i = B.global_id(0)
        j = (B.global_id(2) * B.grid_dim(1) * B.block_dim(1) + B.global_id(1)) \
            * B.grid_dim(0) * B.block_dim(0) + i
        if i >= n:
            return
        x = data[i]
        k = 0
        while k < 20:
            if x > lim:
                out[j] = -x
                return
            x += half + k
            k += 1
        out[j] = -x * 1000000 + B.local_id(0) * 1000 + B.block_id(0) + B.global_id(1) \
            + B.local_id(1) + B.block_id(1) + B.global_id(2) + B.local_id(2) + B.block_id(2)
        B.atomic_add(hits, B.local_id(0) % 4, 1)

    return flat


cpu_flat_declared = flat_kernel(64, "cpu_flat_declared")
cpu_flat_any = flat_kernel(None, "cpu_flat_any")


@g.raw_kernel
def cpu_guard_u64(data: g.GlobalPtr[g.f64], n: g.u64, scale: g.f64):
    """The usual guard, ``i64 < u64``: a flat loop over the threads that pass it."""
    i = B.global_id(0)
    k = i * 2
    if i < n:
        data[i] = data[i] * scale + k


@g.raw_kernel(block=32)
def cpu_guard_i64(data: g.GlobalPtr[g.f64], n: g.i64, scale: g.f64):
    i = B.global_id(0)
    if i < n - 1:
        data[i] = data[i] * scale + i


def _oracle(data: np.ndarray, n: int, lim: int, grid: tuple[int, int, int],
            block: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Every thread of the launch run in Python."""
    nx, ny = grid[0] * block[0], grid[1] * block[1]
    out = np.full(nx * ny * grid[2] * block[2], 7, np.int64)
    hits = np.zeros(4, np.uint64)
    for b2, b1, b0 in np.ndindex(grid[2], grid[1], grid[0]):
        for t2, t1, t0 in np.ndindex(block[2], block[1], block[0]):
            i = b0 * block[0] + t0
            j = ((b2 * block[2] + t2) * ny + b1 * block[1] + t1) * nx + i
            if i >= n:
                continue
            x, k, done = int(data[i]), 0, False
            while k < 20:
                if x > lim:
                    out[j], done = -x, True
                    break
                x += lim // 2 + k
                k += 1
            if done:
                continue
            ids = (b1 * block[1] + t1) + t1 + b1 + (b2 * block[2] + t2) + t2 + b2
            out[j] = -x * 1000000 + t0 * 1000 + b0 + ids
            hits[t0 % 4] += 1
    return out, hits


def test_flat_plan() -> None:
    """Flat: the kernel above (its ``half`` runs once), a kernel with a lockstep loop is
    not, nor one with barriers and shared memory."""
    p = plan(cpu_flat_declared.lower().functions[-1], "cpu_flat_declared")
    flat = p.flat()
    assert flat is p.phases[0] and len(p.items) == 2  # half = lim // 2, then the phase
    assert plan(cpu_collatz.lower().functions[-1], "cpu_collatz").flat() is None
    assert plan(cpu_block_sum.lower().functions[-1], "cpu_block_sum").flat() is None


@pytest.mark.parametrize("kernel", [cpu_flat_declared, cpu_flat_any], ids=["declared", "any"])
@pytest.mark.parametrize(("grid", "n"), [((5, 1, 1), 300), ((40, 1, 1), 2000), ((1, 1, 1), 9)])
def test_flat_1d_launch(mode: str, kernel: RawKernelDef, grid: tuple[int, int, int],
                        n: int) -> None:
    block = (64, 1, 1)
    size = grid[0] * 64
    data = np.random.default_rng(n).integers(-3500, 200, size).astype(np.int64)
    data[:3] = (200, -5000, 100)  # returns at once, runs its loop out, returns in it
    out = np.full(size, 7, np.int64)
    hits = np.zeros(4, np.uint64)
    lim = 150
    g.RawKernel(kernel, "cpu").launch(grid, block, [data, n, lim, out, hits])
    want_out, want_hits = _oracle(data, n, lim, grid, block)
    assert (want_out[:n] < 0).any() and (want_out[:n] > 0).any()
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(hits, want_hits)


def test_flat_kernel_on_a_3d_launch_runs_by_blocks(mode: str) -> None:
    """Only a 1-D launch runs flat; the others see the geometry of y and z."""
    grid, block = (3, 2, 2), (8, 2, 3)
    n = 20
    data = np.random.default_rng(3).integers(-3500, 200, 3 * 8).astype(np.int64)
    out = np.full(3 * 8 * 2 * 2 * 2 * 3, 7, np.int64)
    hits = np.zeros(4, np.uint64)
    g.RawKernel(cpu_flat_any, "cpu").launch(grid, block, [data, n, 150, out, hits])
    want_out, want_hits = _oracle(data, n, 150, grid, block)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(hits, want_hits)


@pytest.mark.parametrize("n", [0, 1, 100, 128, 129, 5000])
def test_flat_guard_bounds_the_loop(mode: str, n: int) -> None:
    """Threads past the guard do nothing, whatever ``n`` against the launch (4 x 32)."""
    data = np.random.default_rng(n).standard_normal(200)
    for kernel, stop in ((cpu_guard_u64, n), (cpu_guard_i64, n - 1)):
        got = data.copy()
        g.RawKernel(kernel, "cpu").launch(4, 32, [got, n, 0.5])
        want = data.copy()
        live = np.arange(200) < min(max(stop, 0), 128)
        extra = np.arange(200) * (2 if kernel is cpu_guard_u64 else 1)
        want[live] = data[live] * 0.5 + extra[live]
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [10_000, 20_000, 30_000])
def test_flat_guard_across_launch_slices(n: int) -> None:
    """A launch of more threads than one slice (the CPU runs 2**14 threads first, then
    more): each slice takes the threads of its own that pass the guard."""
    threads = 200 * 128
    data = np.random.default_rng(n).standard_normal(threads)
    for kernel, stop in ((cpu_guard_u64, n), (cpu_guard_i64, n - 1)):
        got = data.copy()
        grid, block = (200, 128) if kernel is cpu_guard_u64 else (800, 32)  # 32 declared
        g.RawKernel(kernel, "cpu").launch(grid, block, [got, n, 0.5])
        want = data.copy()
        live = np.arange(threads) < min(stop, threads)
        extra = np.arange(threads) * (2 if kernel is cpu_guard_u64 else 1)
        want[live] = data[live] * 0.5 + extra[live]
        np.testing.assert_array_equal(got, want)

"""CPU raw kernels: ``for ... in range(...)`` loops whose start or step differs between
threads run in lockstep rounds (lowered to the equivalent ``while``), with Python's
``range`` semantics intact; each against a plain-Python oracle or NumPy. (The ``while``
lockstep tests are in ``test_cpu_raw.py``.)"""

from __future__ import annotations

import numpy as np
import pytest
from test_cpu_raw import block_sum_oracle
from test_cpu_raw import mode as mode  # the serial / threaded-blocks fixture

import gompute_core as g
from gompute_core.workgroup import plan

B = g.builtins
BLOCK = 256
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1


@g.raw_kernel(block=BLOCK)
def cpu_for_block_sum(data: g.GlobalPtr[g.f32], n: g.u64, out: g.GlobalPtr[g.f32]):
    """The block sum with its grid-stride loop written as a ``for``."""
    s = B.shared_array(g.f32, BLOCK)
    lid = B.local_id(0)
    acc = g.f32(0)
    for i in range(B.global_id(0), n, B.grid_dim(0) * B.block_dim(0)):
        acc += data[i]
    s[lid] = acc
    B.barrier()
    step = B.block_dim(0) // 2
    while step > 0:
        if lid < step:
            s[lid] += s[lid + step]
        B.barrier()
        step //= 2
    if lid == 0:
        out[B.block_id(0)] = s[0]


@g.raw_kernel(block=32)
def cpu_for_bounds(lo: g.GlobalPtr[g.i64], hi: g.GlobalPtr[g.i64], by: g.GlobalPtr[g.i64],
                   out: g.GlobalPtr[g.i64]):
    """Per-thread bounds read from memory: the stop is read once (the body overwrites it),
    assigning the loop variable does not change the iteration, and the variable keeps its
    last value after the loop (its old one when there is no iteration)."""
    t = B.global_id(0)
    j = g.i64(-5)
    mix = g.i64(0)
    count = g.i64(0)
    for j in range(lo[t], hi[t], by[t]):
        mix = (mix ^ j) % 1000003 * 3
        count += 1
        hi[t] = lo[t]
        j = j ^ 1
    out[3 * t] = mix
    out[3 * t + 1] = count
    out[3 * t + 2] = j


def _for_bounds(lo: int, hi: int, by: int) -> tuple[int, int, int]:
    """``cpu_for_bounds``'s loop for one thread, in Python."""
    j, mix, count = -5, 0, 0
    for j in range(lo, hi, by) if by else ():  # a zero step runs no iteration
        mix = (mix ^ j) % 1000003 * 3
        count += 1
        j = j ^ 1
    return mix, count, j


@g.raw_kernel
def cpu_for_narrow(data: g.GlobalPtr[g.i32], n: g.i32, out: g.GlobalPtr[g.i32]):
    """An ``i32`` loop variable, a step the body changes (read once, at the start), the
    variable read after the loop, on a block shape known only at launch."""
    nt = B.block_dim(0) * B.block_dim(1) * B.block_dim(2)
    t = g.i32(B.block_id(0) * nt + (B.local_id(2) * B.block_dim(1) + B.local_id(1))
              * B.block_dim(0) + B.local_id(0))
    s = t % 3 + 1
    acc = g.i32(0)
    k = g.i32(0)
    for k in range(t, n, s):
        acc = acc * 7 + data[k]
        s += 5
    out[t] = acc + k


@g.raw_kernel(block=32)
def cpu_for_uniform(data: g.GlobalPtr[g.f64], n: g.i64, out: g.GlobalPtr[g.f64]):
    """Start and step uniform, the stop per thread: every thread walks the same indices,
    one counted loop per thread."""
    t = B.global_id(0)
    acc = g.f64(0)
    for k in range(0, t % n, 2):
        acc += data[k]
    out[t] = acc


@g.raw_kernel(block=32)
def cpu_for_break(data: g.GlobalPtr[g.i32], out: g.GlobalPtr[g.i32]):
    """A ``break`` of its own keeps the loop per thread."""
    t = B.global_id(0)
    hit = -1
    for k in range(t, 64 * 32, 32):
        if data[k] == 0:
            hit = k
            break
    out[t] = hit


@g.raw_kernel(block=64)
def cpu_for_two_phases(data: g.GlobalPtr[g.f64], n: g.i64, out: g.GlobalPtr[g.f64]):
    """Two lockstep ``for`` loops over one variable, a barrier between them: ``i`` lives
    in both phases (a slot per thread) and is read after the second loop."""
    s = B.shared_array(g.f64, 64)
    lid = B.local_id(0)
    acc = g.f64(0)
    i = g.i64(-1)
    for i in range(B.global_id(0), n, B.grid_dim(0) * B.block_dim(0)):
        acc += data[i]
    s[lid] = acc
    B.barrier()
    total = g.f64(0)
    for i in range(lid, 64, 7):
        total += s[i] * i
    out[B.global_id(0)] = total + i


def _raw(kernel: object) -> g.RawKernel:
    return g.RawKernel(kernel, "cpu")


def _lockstep(kernel: object) -> object:
    return plan(kernel.lower().functions[-1], kernel.name).phases[0].lockstep  # type: ignore[attr-defined]


@pytest.mark.parametrize(("n", "grid"), [(1, 1), (1000, 3), (100_003, 7), (70_001, 300),
                                         (5000, 64)])
def test_for_block_sum_bit_exact(mode: str, n: int, grid: int) -> None:
    """The grid-stride ``for`` runs in lockstep, each thread adding in the kernel's order:
    every partial equals the in-order f32 oracle bit for bit."""
    ls = _lockstep(cpu_for_block_sum)
    assert ls is not None and set(ls.carried) == {"acc", "i_next", "i_left"}  # type: ignore[attr-defined]
    data = np.random.default_rng(n).uniform(-1, 1, n).astype(np.float32)
    out = np.zeros(grid, np.float32)
    _raw(cpu_for_block_sum).launch(grid, BLOCK, [data, n, out])
    np.testing.assert_array_equal(out, block_sum_oracle(data, grid))


def test_for_bounds_follow_python_range(mode: str) -> None:
    """Positive, negative and zero steps, empty ranges, and ranges at both ends of
    ``i64`` (where ``next += step`` past the stop would overflow): Python's iterations."""
    rng = np.random.default_rng(11)
    threads = 4 * 32
    lo = rng.integers(-60, 60, threads)
    hi = rng.integers(-60, 60, threads)
    by = rng.integers(-7, 8, threads)
    by[::9] = 0
    lo[1], hi[1], by[1] = I64_MAX - 100, I64_MAX, 37
    lo[2], hi[2], by[2] = I64_MIN + 50, I64_MIN, -13
    lo[3], hi[3], by[3] = I64_MIN, I64_MAX, 1 << 62
    lo[4], hi[4], by[4] = I64_MAX, I64_MIN, I64_MIN
    lo[5], hi[5], by[5] = 0, 1000, 1  # the longest loop: many rounds
    bounds = [np.asarray(a, np.int64) for a in (lo, hi, by)]
    want = np.array([_for_bounds(int(a), int(b), int(c)) for a, b, c in zip(*bounds,
                                                                             strict=True)])
    assert _lockstep(cpu_for_bounds) is not None
    out = np.zeros(3 * threads, np.int64)
    stops = bounds[1].copy()
    _raw(cpu_for_bounds).launch(4, 32, [*bounds, out])
    np.testing.assert_array_equal(out, want.reshape(-1))
    iterated = want[:, 1] > 0  # those threads overwrote their stop
    assert iterated.sum() > threads // 3 and (~iterated).sum() > threads // 10
    np.testing.assert_array_equal(bounds[1], np.where(iterated, bounds[0], stops))


@pytest.mark.parametrize("block", [(64, 1, 1), (5, 3, 2)])
def test_for_narrow_variable_and_changing_step(mode: str, block: tuple[int, int, int]) -> None:
    n = 200  # the threads past it run no iteration
    data = np.random.default_rng(n).integers(-9, 9, n).astype(np.int32)
    threads = 4 * block[0] * block[1] * block[2]
    out = np.zeros(threads, np.int32)
    assert _lockstep(cpu_for_narrow) is not None
    _raw(cpu_for_narrow).launch(4, block, [data, n, out])
    want = []
    with np.errstate(over="ignore"):
        for t in range(threads):
            s, acc, k = np.int32(t % 3 + 1), np.int32(0), np.int32(0)
            for k in map(np.int32, range(t, n, int(s))):
                acc = acc * np.int32(7) + data[k]
            want.append(acc + k)
    np.testing.assert_array_equal(out, np.array(want, np.int32))


def test_for_with_uniform_start_and_step_stays_per_thread(mode: str) -> None:
    assert _lockstep(cpu_for_uniform) is None
    n = 40
    data = np.random.default_rng(2).standard_normal(n)
    out = np.zeros(64)
    _raw(cpu_for_uniform).launch(2, 32, [data, n, out])
    want = [sum(data[k] for k in range(0, t % n, 2)) for t in range(64)]
    np.testing.assert_array_equal(out, np.array(want))


def test_for_with_break_stays_per_thread(mode: str) -> None:
    assert _lockstep(cpu_for_break) is None
    data = np.random.default_rng(4).integers(0, 40, 64 * 32).astype(np.int32)
    out = np.zeros(32, np.int32)
    _raw(cpu_for_break).launch(1, 32, [data, out])
    want = [next((k for k in range(t, 64 * 32, 32) if data[k] == 0), -1) for t in range(32)]
    np.testing.assert_array_equal(out, np.array(want, np.int32))


def test_two_for_loops_over_one_variable_across_a_barrier(mode: str) -> None:
    p = plan(cpu_for_two_phases.lower().functions[-1], "cpu_for_two_phases")
    assert p.phases[0].lockstep is not None and p.phases[1].lockstep is not None
    assert "i" in p.arrays
    grid, n = 3, 1000
    data = np.random.default_rng(8).standard_normal(n)
    out = np.zeros(grid * 64)
    _raw(cpu_for_two_phases).launch(grid, 64, [data, n, out])
    want = np.zeros(grid * 64)
    for b in range(grid):
        s = [0.0] * 64
        for lid in range(64):
            for i in range(b * 64 + lid, n, grid * 64):
                s[lid] += data[i]
        for lid in range(64):
            total = 0.0
            for i in range(lid, 64, 7):
                total += s[i] * i
            want[b * 64 + lid] = total + i
    np.testing.assert_array_equal(out, want)

"""CPU raw kernels: loop fission at barriers, per-thread values across them, blocks in
parallel with real atomics, early returns, block shapes known only at launch, params
spliced among the arguments; each against NumPy. (Every backend's raw conformance tier
is in ``gompute_core.testing.test_raw``.)"""

from __future__ import annotations

import numpy as np
import pytest

import gompute_core as g
from gompute_core.testing.kernels_raw import block_sum_kernel
from gompute_core.workgroup import plan

cpu_block_sum = block_sum_kernel(g.f32, "cpu_block_sum")
B = g.builtins
BLOCK = 256
TILE = 16


@g.raw_kernel(block=128)
def cpu_scan(data: g.GlobalPtr[g.f64], n: g.u64, out: g.GlobalPtr[g.f64]):
    """Hillis-Steele inclusive scan per block: ``add`` is read before a barrier and used
    after it, and ``v`` scaled after a barrier, so both live across barriers per thread."""
    s = B.shared_array(g.f64, 128)
    lid = B.local_id(0)
    i = B.global_id(0)
    v = g.f64(0)
    if i < n:
        v = data[i]
    s[lid] = v
    B.barrier()
    offset = 1
    while offset < B.block_dim(0):
        add = g.f64(0)
        if lid >= offset:
            add = s[lid - offset]
        B.barrier()
        s[lid] += add
        B.barrier()
        offset *= 2
    if i < n:
        out[i] = s[lid] + v * 0.5


@g.raw_kernel(block=(TILE, TILE))
def cpu_transpose(src: g.GlobalPtr[g.f32], dst: g.GlobalPtr[g.f32], rows: g.i64,
                  cols: g.i64):
    tile = B.shared_array(g.f32, (TILE, TILE + 1))
    x = B.block_id(0) * TILE + B.local_id(0)
    y = B.block_id(1) * TILE + B.local_id(1)
    if x < cols and y < rows:
        tile[B.local_id(1), B.local_id(0)] = src[y * cols + x]
    B.barrier()
    ox = B.block_id(1) * TILE + B.local_id(0)
    oy = B.block_id(0) * TILE + B.local_id(1)
    if ox < rows and oy < cols:
        dst[oy * rows + ox] = tile[B.local_id(0), B.local_id(1)]


@g.raw_kernel(block=BLOCK)
def cpu_histogram(values: g.GlobalPtr[g.u8], n: g.u64, bins: g.GlobalPtr[g.u32]):
    """Shared atomics per block, then one global atomic per bin and block."""
    local = B.shared_array(g.u32, 256)
    lid = B.local_id(0)
    local[lid] = 0
    B.barrier()
    i = B.global_id(0)
    stride = B.grid_dim(0) * B.block_dim(0)
    while i < n:
        B.atomic_add(local, g.i64(values[i]), 1)
        i += stride
    B.barrier()
    B.atomic_add(bins, lid, local[lid])


@g.raw_kernel
def cpu_f64_total(values: g.GlobalPtr[g.f64], n: g.u64, total: g.GlobalPtr[g.f64]):
    """Every thread adds its element to one cell (f64 atomics, contended by all blocks)."""
    i = B.global_id(0)
    if i < n:
        B.atomic_add(total, 0, values[i])


@g.raw_kernel(block=64)
def cpu_early_return(data: g.GlobalPtr[g.i32], n: g.u64, out: g.GlobalPtr[g.i32]):
    i = B.global_id(0)
    if i >= n:
        return
    out[i] = data[i] * 3 + 1


@g.raw_kernel(block=64)
def cpu_return_then_phase(data: g.GlobalPtr[g.i32], n: g.u64, out: g.GlobalPtr[g.i32]):
    """A thread's return in a loop, then a uniform load that starts a new phase: the
    returned threads must stay done in the later phase."""
    i = B.global_id(0)
    k = 0
    while k < 4:
        if i + k >= n:
            return
        k += 1
    first = data[0]
    out[i] = data[i] + first


@g.raw_kernel
def cpu_reverse3d(data: g.GlobalPtr[g.i32], out: g.GlobalPtr[g.i32]):
    """Reverse each block's elements through shared memory; the block shape (3-D) is known
    only at launch."""
    s = B.shared_array(g.i32, 1024)
    nt = B.block_dim(0) * B.block_dim(1) * B.block_dim(2)
    t = (B.local_id(2) * B.block_dim(1) + B.local_id(1)) * B.block_dim(0) + B.local_id(0)
    b = (B.block_id(2) * B.grid_dim(1) + B.block_id(1)) * B.grid_dim(0) + B.block_id(0)
    s[t] = data[b * nt + t]
    B.barrier()
    out[b * nt + t] = s[nt - 1 - t]


@g.raw_kernel(block=32)
def cpu_uniform_if(data: g.GlobalPtr[g.i32], mode: g.i32, out: g.GlobalPtr[g.i32]):
    """A barrier under a uniform ``if``, a uniform ``return`` ending the whole block."""
    s = B.shared_array(g.i32, 32)
    lid = B.local_id(0)
    i = B.global_id(0)
    if mode == 0:
        return
    if mode > 1:
        s[lid] = data[i]
        B.barrier()
        out[i] = s[31 - lid]
    else:
        out[i] = -data[i]


@g.params
class Shift:
    add: g.i32
    mul: g.Array[g.i32, 2]


@g.raw_kernel(block=32)
def cpu_params_middle(data: g.GlobalPtr[g.i32], p: Shift, n: g.u64, out: g.GlobalPtr[g.i32]):
    i = B.global_id(0)
    if i < n:
        out[i] = data[i] * p.mul[i % 2] + p.add


@g.raw_kernel(block=32)
def cpu_uniform_in_thread_loop(data: g.GlobalPtr[g.i32], rounds: g.i32,
                               out: g.GlobalPtr[g.i32]):
    """``k`` and ``m`` are uniform but assigned in per-thread code (a loop that stores; in
    it an ``if`` on a uniform load), so each thread computes them; a loop and an ``if`` holding
    barriers then read them: rotate the block's values left ``k`` times, adding ``m``."""
    s = B.shared_array(g.i32, 32)
    lid = B.local_id(0)
    i = B.global_id(0)
    k = 0
    m = 1
    for q in range(rounds):
        out[i] = q
        k += 1
        if data[0] > 0:
            m = data[0] % 5 + 2
    s[lid] = data[i]
    while k > 0:
        B.barrier()
        v = s[(lid + 1) % 32]
        B.barrier()
        s[lid] = v + m
        k -= 1
    if m > 3:
        B.barrier()
        out[i] = s[lid] * 10
    else:
        out[i] = s[lid]


@g.raw_kernel(block=64)
def cpu_phase_temps(data: g.GlobalPtr[g.f32], out: g.GlobalPtr[g.f32], rounds: g.i32):
    """Per round: ``t`` and the loop variable ``j`` are assigned before they are read in
    every phase (scalars, though used in several repeated phases); ``acc`` carries across
    barriers (a slot per thread)."""
    s = B.shared_array(g.f32, 64)
    lid = B.local_id(0)
    acc = g.f32(0)
    for r in range(rounds):
        t = data[B.global_id(0)] * g.f32(r)
        for j in range(2):
            t += g.f32(j)
        s[lid] = t
        B.barrier()
        acc += s[(lid + 1) % 64]
        for j in range(3):
            acc += g.f32(j)
        B.barrier()
    out[B.global_id(0)] = acc


def _raw(kernel: object) -> g.RawKernel:
    return g.RawKernel(kernel, "cpu")


@pytest.fixture(params=["serial", "parallel"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run serially (threshold above any launch) or with blocks in parallel (threshold 0)."""
    monkeypatch.setenv("GOMPUTE_CPU_PARALLEL_THRESHOLD",
                       "0" if request.param == "parallel" else str(1 << 40))
    return str(request.param)


def block_sum_oracle(data: np.ndarray, grid: int) -> np.ndarray:
    """Each block's partial as the kernel computes it: thread ``t`` adds ``data[t]``,
    ``data[t + grid * BLOCK]``, ... in that order in f32, then the halving tree in f32."""
    acc = np.zeros(grid * BLOCK, np.float32)
    for start in range(0, data.size, acc.size):
        chunk = data[start:start + acc.size]
        acc[:chunk.size] = acc[:chunk.size] + chunk
    s = acc.reshape(grid, BLOCK)
    step = BLOCK // 2
    while step:
        s[:, :step] = s[:, :step] + s[:, step:2 * step]
        step //= 2
    return s[:, 0].copy()


@pytest.mark.parametrize(("n", "grid"), [(1, 1), (1000, 3), (100_003, 7), (70_001, 300),
                                         (300_000, 2), (5000, 64)])
def test_block_sum_bit_exact(mode: str, n: int, grid: int) -> None:
    """The grid-stride loop runs in lockstep rounds, yet each thread adds its elements in
    the kernel's order: every partial equals the in-order f32 oracle bit for bit."""
    data = np.random.default_rng(n).uniform(-1, 1, n).astype(np.float32)
    out = np.zeros(grid, np.float32)
    _raw(cpu_block_sum).launch(grid, BLOCK, [data, n, out])
    np.testing.assert_array_equal(out, block_sum_oracle(data, grid))


@pytest.mark.parametrize("n", [1, 127, 128, 1000, 40_001])
def test_scan_keeps_per_thread_values_across_barriers(mode: str, n: int) -> None:
    data = np.random.default_rng(n).integers(-50, 50, n).astype(np.float64)
    out = np.full(n, np.nan)
    blocks = -(-n // 128)
    _raw(cpu_scan).launch(blocks, 128, [data, n, out])
    padded = np.zeros(blocks * 128)
    padded[:n] = data
    want = np.cumsum(padded.reshape(blocks, 128), axis=1).reshape(-1)[:n] + data * 0.5
    np.testing.assert_array_equal(out, want)


def test_scan_plan_keeps_only_crossing_values_per_thread() -> None:
    """``add`` crosses a barrier (a slot per thread); ``lid``/``i`` are recomputed from
    the geometry; ``v`` crosses barriers too; the loop counter is one per block."""
    p = plan(cpu_scan.lower().functions[-1], "cpu_scan")
    assert p.arrays == {"add", "v"}
    assert set(p.remat) == {"lid", "i"}
    assert "offset" not in p.thread_vars
    p = plan(cpu_block_sum.lower().functions[-1], "cpu_block_sum")
    assert p.arrays == frozenset()  # acc and i stay scalars in the hot loop
    assert {"step", "stride"}.isdisjoint(p.thread_vars)


@pytest.mark.parametrize("rounds", [0, 1, 3])
def test_phase_temps_stay_scalars(mode: str, rounds: int) -> None:
    """Only a value some phase reads before assigning it gets a slot per thread; the
    kernel's results are the per-round oracle's (small integers: exact in f32)."""
    p = plan(cpu_phase_temps.lower().functions[-1], "cpu_phase_temps")
    assert p.arrays == {"acc"}
    assert {"t", "j"} <= p.thread_vars
    data = np.random.default_rng(rounds).integers(-9, 9, 192).astype(np.float32)
    out = np.full(192, np.nan, np.float32)
    _raw(cpu_phase_temps).launch(3, 64, [data, out, rounds])
    acc = np.zeros(192, np.float32)
    for r in range(rounds):
        t = data * np.float32(r) + np.float32(1)
        acc += np.roll(t.reshape(3, 64), -1, axis=1).reshape(-1) + np.float32(3)
    np.testing.assert_array_equal(out, acc)


@pytest.mark.parametrize(("rows", "cols"), [(1, 1), (16, 16), (37, 53), (300, 129)])
def test_transpose_2d_grid(mode: str, rows: int, cols: int) -> None:
    src = np.random.default_rng(rows * cols).standard_normal((rows, cols)).astype(np.float32)
    dst = np.zeros((cols, rows), np.float32)
    grid = (-(-cols // TILE), -(-rows // TILE))
    _raw(cpu_transpose).launch(grid, (TILE, TILE), [src.reshape(-1), dst.reshape(-1), rows,
                                                    cols])
    np.testing.assert_array_equal(dst, src.T)


def test_histogram_atomics_contend_across_parallel_blocks(mode: str) -> None:
    n = 1_000_003
    values = np.random.default_rng(7).integers(0, 256, n).astype(np.uint8)
    values[::3] = 42  # one hot bin: every block hits it
    bins = np.zeros(256, np.uint32)
    raw = _raw(cpu_histogram)
    for _ in range(3):
        raw.launch(512, BLOCK, [values, n, bins])
    np.testing.assert_array_equal(bins, 3 * np.bincount(values, minlength=256))


def test_f64_atomic_add_from_every_thread(mode: str) -> None:
    n = 200_001
    values = np.arange(n, dtype=np.float64)  # integers: exact in any order
    total = np.zeros(1)
    _raw(cpu_f64_total).launch(-(-n // 128), 128, [values, n, total])
    assert total[0] == values.sum()


@pytest.mark.parametrize("n", [1, 63, 64, 1001])
def test_early_return_without_barrier(mode: str, n: int) -> None:
    data = np.arange(n, dtype=np.int32) - 7
    out = np.full(n + 5, -99, np.int32)
    _raw(cpu_early_return).launch(-(-n // 64) + 1, 64, [data, n, out])
    np.testing.assert_array_equal(out[:n], data * 3 + 1)
    assert (out[n:] == -99).all()


def test_return_in_a_loop_keeps_threads_done_in_later_phases(mode: str) -> None:
    n = 200
    data = np.arange(n, dtype=np.int32) + 1
    out = np.full(3 * 64, -1, np.int32)
    p = plan(cpu_return_then_phase.lower().functions[-1], "cpu_return_then_phase")
    assert p.done_flags and len(p.phases) == 2
    _raw(cpu_return_then_phase).launch(3, 64, [data, n, out])
    want = np.full(3 * 64, -1, np.int32)
    live = np.arange(3 * 64) + 3 < n  # threads whose i + k < n for k = 0..3
    want[live] = data[np.arange(3 * 64)[live]] + data[0]
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("block", [(8, 4, 2), (1, 1, 1), (5, 3, 7), (32, 32, 1)])
def test_block_shape_known_at_launch(mode: str, block: tuple[int, int, int]) -> None:
    grid = (3, 2, 2)
    nt, nb = block[0] * block[1] * block[2], 12
    data = np.arange(nb * nt, dtype=np.int32)
    out = np.zeros_like(data)
    _raw(cpu_reverse3d).launch(grid, block, [data, out])
    np.testing.assert_array_equal(out, data.reshape(nb, nt)[:, ::-1].reshape(-1))


@pytest.mark.parametrize("flag", [0, 1, 2])
def test_barrier_under_uniform_if_and_uniform_return(flag: int) -> None:
    data = np.arange(96, dtype=np.int32)
    out = np.full(96, 7, np.int32)
    _raw(cpu_uniform_if).launch(3, 32, [data, flag, out])
    want = {0: np.full(96, 7), 1: -data, 2: data.reshape(3, 32)[:, ::-1].reshape(-1)}[flag]
    np.testing.assert_array_equal(out, want)


def test_params_between_arguments(mode: str) -> None:
    n = 1000
    data = np.arange(n, dtype=np.int32)
    out = np.zeros(n, np.int32)
    _raw(cpu_params_middle).launch(-(-n // 32), 32, [data, Shift(add=5, mul=(2, -3)), n, out])
    np.testing.assert_array_equal(out, data * np.where(np.arange(n) % 2, -3, 2) + 5)


@pytest.mark.parametrize(("rounds", "first"), [(0, 7), (5, 7), (37, 9), (3, -4)])
def test_barrier_control_on_uniform_values_from_per_thread_code(mode: str, rounds: int,
                                                                  first: int) -> None:
    data = np.random.default_rng(rounds).integers(-100, 100, 64).astype(np.int32)
    data[0] = first
    out = np.zeros(64, np.int32)
    p = plan(cpu_uniform_in_thread_loop.lower().functions[-1], "cpu_uniform_in_thread_loop")
    assert p.uniform == {"k", "m"} and "k" in p.thread_vars
    _raw(cpu_uniform_in_thread_loop).launch(2, 32, [data, rounds, out])
    m = data[0] % 5 + 2 if data[0] > 0 and rounds > 0 else 1
    want = np.roll(data.reshape(2, 32), -rounds, axis=1).reshape(-1) + rounds * m
    np.testing.assert_array_equal(out, want * 10 if m > 3 else want)


# lockstep loops ------------------------------------------------------------------------


@g.raw_kernel
def cpu_collatz(data: g.GlobalPtr[g.i64], n: g.u64, out: g.GlobalPtr[g.i64]):
    """Divergent trip counts, an ``if`` in the loop, a value from before the loop (``x``)
    and one after it (``steps``), on a block shape known only at launch."""
    nt = B.block_dim(0) * B.block_dim(1) * B.block_dim(2)
    t = (B.local_id(2) * B.block_dim(1) + B.local_id(1)) * B.block_dim(0) + B.local_id(0)
    i = ((B.block_id(2) * B.grid_dim(1) + B.block_id(1)) * B.grid_dim(0) + B.block_id(0)) \
        * nt + t
    x = g.i64(1)
    if i < n:
        x = data[i]
    steps = g.i64(0)
    peak = x
    while x != 1:
        if x % 2 == 0:
            x //= 2
        else:
            x = 3 * x + 1
        peak = max(peak, x)
        steps += 1
    if i < n:
        out[2 * i] = steps
        out[2 * i + 1] = peak


def _collatz(x: int) -> tuple[int, int]:
    steps, peak = 0, x
    while x != 1:
        x = x // 2 if x % 2 == 0 else 3 * x + 1
        peak = max(peak, x)
        steps += 1
    return steps, peak


@pytest.mark.parametrize("block", [(64, 1, 1), (8, 4, 2), (5, 3, 7)])
def test_lockstep_divergent_trip_counts(mode: str, block: tuple[int, int, int]) -> None:
    grid = (3, 2, 1)
    nt = block[0] * block[1] * block[2]
    n = 6 * nt - 5
    data = np.random.default_rng(nt).integers(1, 5000, n).astype(np.int64)
    data[:3] = (1, 27, 2)  # 0 iterations, 111, 1
    out = np.full(2 * 6 * nt, -1, np.int64)
    assert plan(cpu_collatz.lower().functions[-1], "cpu_collatz").phases[0].lockstep
    _raw(cpu_collatz).launch(grid, block, [data, n, out])
    want = np.full_like(out, -1)
    want[:2 * n] = np.array([_collatz(int(x)) for x in data]).reshape(-1)
    np.testing.assert_array_equal(out, want)


@g.raw_kernel(block=32)
def cpu_chase(nxt: g.GlobalPtr[g.i32], val: g.GlobalPtr[g.f64], head: g.GlobalPtr[g.i32],
              out: g.GlobalPtr[g.f64], hist: g.GlobalPtr[g.f64]):
    """The loop condition reads memory; a nested loop breaks out of itself; the thread
    writes then re-reads its own memory inside the loop (``hist``)."""
    s = B.shared_array(g.f64, 32)
    lid = B.local_id(0)
    i = B.global_id(0)
    j = head[i]
    total = g.f64(0)
    k = 0
    while nxt[j] >= 0:
        for r in range(5):
            if r * r > j:
                break
            total += val[j] * r
        hist[i * 64 + k] = total
        if k > 0:
            total -= hist[i * 64 + k - 1] * 0.5
        j = nxt[j]
        k += 1
    s[lid] = total
    B.barrier()
    out[i] = s[31 - lid] + k


def _chase(nxt: np.ndarray, val: np.ndarray, head: np.ndarray) -> tuple[np.ndarray, ...]:
    threads = head.size
    mine, hist = np.zeros(threads), np.zeros(threads * 64)
    counts = np.zeros(threads)
    for i in range(threads):
        j, total, k = int(head[i]), 0.0, 0
        while nxt[j] >= 0:
            for r in range(5):
                if r * r > j:
                    break
                total += val[j] * r
            hist[i * 64 + k] = total
            if k > 0:
                total -= hist[i * 64 + k - 1] * 0.5
            j = int(nxt[j])
            k += 1
        mine[i], counts[i] = total, k
    out = mine.reshape(-1, 32)[:, ::-1].reshape(-1) + counts
    return out, hist


def test_lockstep_memory_condition_nested_break_own_writes(mode: str) -> None:
    rng = np.random.default_rng(3)
    nodes = 400
    nxt = np.full(nodes, -1, np.int32)
    order = rng.permutation(nodes)
    for a, b in zip(order[:-1], order[1:], strict=True):  # one chain, cut at random places
        nxt[a] = -1 if rng.random() < 0.05 else b
    val = rng.standard_normal(nodes)
    head = rng.integers(0, nodes, 4 * 32).astype(np.int32)
    out, hist = np.zeros(head.size), np.zeros(head.size * 64)
    steps = np.zeros(nodes, np.int64)
    for a in range(nodes):  # every chain is shorter than 64 links
        j = a
        while nxt[j] >= 0:
            j, steps[a] = nxt[j], steps[a] + 1
    assert steps.max() < 64
    p = plan(cpu_chase.lower().functions[-1], "cpu_chase")
    ls = p.phases[0].lockstep  # k, read after the barrier, is kept per thread anyway
    assert ls is not None and set(ls.carried) == {"j", "total", "r"} and "k" in p.arrays
    _raw(cpu_chase).launch(4, 32, [nxt, val, head, out, hist])
    want_out, want_hist = _chase(nxt, val, head)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(hist, want_hist)


@g.raw_kernel(block=64)
def cpu_lockstep_after_return(data: g.GlobalPtr[g.i32], n: g.u64, out: g.GlobalPtr[g.i64]):
    """Threads past ``n`` return; a uniform load starts a new phase (done flags), whose
    loop runs in lockstep for the threads left."""
    i = B.global_id(0)
    if i >= n:
        return
    base = data[0]
    acc = g.i64(0)
    k = 0
    while k < data[i]:
        acc += base + k
        k += 1
    out[i] = acc


def test_lockstep_phase_after_returns(mode: str) -> None:
    n = 150
    data = np.random.default_rng(5).integers(0, 40, n).astype(np.int32)
    out = np.full(3 * 64, -7, np.int64)
    p = plan(cpu_lockstep_after_return.lower().functions[-1], "cpu_lockstep_after_return")
    assert p.done_flags and p.phases[-1].lockstep is not None
    _raw(cpu_lockstep_after_return).launch(3, 64, [data, n, out])
    want = np.full_like(out, -7)
    want[:n] = [sum(int(data[0]) + k for k in range(int(d))) for d in data]
    np.testing.assert_array_equal(out, want)


@g.raw_kernel(block=32)
def cpu_loop_with_break(data: g.GlobalPtr[g.i32], out: g.GlobalPtr[g.i32]):
    i = B.global_id(0)
    k = 0
    while k < 100:
        if data[i] == k:
            break
        k += 1
    out[i] = k


def test_lockstep_plan() -> None:
    """The block sum's grid-stride loop runs in lockstep carrying ``acc`` and ``i`` (``lid``
    is recomputed); a loop with its own ``break`` or a phase with a ``return`` does not."""
    p = plan(cpu_block_sum.lower().functions[-1], "cpu_block_sum")
    ls = p.phases[0].lockstep
    assert ls is not None and set(ls.carried) == {"acc", "i"}
    assert len(ls.prefix) == 3 and len(ls.suffix) == 1
    assert all(q.lockstep is None for q in p.phases[1:])
    p = plan(cpu_loop_with_break.lower().functions[-1], "cpu_loop_with_break")
    assert p.phases[0].lockstep is None
    p = plan(cpu_return_then_phase.lower().functions[-1], "cpu_return_then_phase")
    assert all(q.lockstep is None for q in p.phases)


def test_loop_with_break_stays_per_thread(mode: str) -> None:
    data = np.random.default_rng(9).integers(0, 120, 64).astype(np.int32)
    out = np.zeros(64, np.int32)
    _raw(cpu_loop_with_break).launch(2, 32, [data, out])
    np.testing.assert_array_equal(out, np.minimum(data, 100))

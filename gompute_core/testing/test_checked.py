"""Tier ``checked``: checked mode (``checked=True``, ``$GOMPUTE_CHECKED=1``), for backends
that list the ``raw`` kind.

Checked mode is built into the core (the kernel's IR is rewritten in nodes every renderer
runs, :mod:`gompute_core.ir.checked`), so every backend that runs raw kernels runs it;
there is no feature to declare. The tier holds it to what ``docs/raw-kernels.md``
promises:

* no false report: the ``raw`` tier's kernel tests (every kernel of
  :mod:`.kernels_raw` against its NumPy oracle, and the launch checks) run again here with
  every kernel loaded checked, and so does ``raw_tally``;
* an out-of-bounds read or write of a global buffer, past the end or at a negative index,
  raises :class:`~gompute_core.errors.OutOfBounds` at ``synchronize`` naming the kernel,
  the array, the index, the extent, the thread and the line of this file; the access is
  not performed (a read gives 0), the other buffers keep their bytes, and the record is
  cleared once raised;
* a shared-array and a local-array access are checked the same way, and so is a spec
  kernel's params array (``g.Kernel(spec, backend, checked=True)``, ``'p.<field>'``);
* races and barrier divergence, tracked only where the device runs a block's threads one
  after another (the capability ``serial_threads``): tests deselected elsewhere.

Each faulting launch has exactly one faulting thread, so the report is the same whatever
order a parallel device runs the threads in.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import gompute_core as g

from . import test_raw as R
from ._support import mark, marked_line
from .kernels_raw import raw_add, raw_tally

TIER = "checked"
pytestmark = mark(kind="raw")
B = g.builtins
HERE = Path(__file__).resolve()

N = 1000
"""Elements of the global-memory tests: four blocks of :data:`BLOCK`, the last partial."""
BLOCK = 256
SHARED = 64
"""Threads of the one block of the shared-array tests (and the shared array's extent)."""


def line_of(marker: str) -> str:
    """``file:line`` of the line of this module that ends with ``# <marker>``."""
    return marked_line(HERE, marker)


# ------------------------------------------------------------------ the raw tier, checked
@pytest.fixture(scope="module")
def raws(gompute_backend: str) -> R.RawCache:
    """The raw tier's kernels, loaded checked (used by the raw tier's tests below)."""
    return R.RawCache(checked=True)


test_raw_add = R.test_raw_add
test_block_sum = R.test_block_sum
test_block_scan = R.test_block_scan
test_tiled_transpose = R.test_tiled_transpose
test_stencil = R.test_stencil
test_histogram = R.test_histogram
test_cas_float_max = R.test_cas_float_max
test_atomic_ops = R.test_atomic_ops
test_index_3d = R.test_index_3d
test_fused_pipeline_in_raw_kernel = R.test_fused_pipeline_in_raw_kernel
test_wrong_argument_types_rejected = R.test_wrong_argument_types_rejected
test_scalar_range_checked_like_params_fields = R.test_scalar_range_checked_like_params_fields
test_checks_hold_after_good_launches = R.test_checks_hold_after_good_launches
test_block_shapes_checked = R.test_block_shapes_checked
test_checked_shapes_are_not_confused_with_equal_values = \
    R.test_checked_shapes_are_not_confused_with_equal_values


def test_raw_kernels_load_checked(raws: R.RawCache, gompute_backend: str) -> None:
    """The cache the tests above share loads checked kernels."""
    assert R.load(raws, raw_add, gompute_backend).checked


def test_tally(gompute_backend: str) -> None:
    """``raw_tally`` (the threads tier's kernel): two launches add up, nothing reported."""
    raw = g.RawKernel(raw_tally, gompute_backend, checked=True)
    total = R.upload(raw, np.array([5], np.int64))
    raw.launch(3, 32, [total, 7])
    raw.launch(1, 1, [total, -2])
    raw.synchronize()
    assert R.download(total, 1, np.int64)[0] == 10


# ------------------------------------------------------------------ global memory
@g.raw_kernel(block=BLOCK)
def conf_ck_shift_read(src: g.GlobalPtr[g.f32], dst: g.GlobalPtr[g.f32], n: g.u64,
                       shift: g.i64):
    """``dst[i] = src[i + shift]``."""
    i = B.global_id(0)
    if i < n:
        dst[i] = src[i + shift]  # shifted read


@g.raw_kernel(block=BLOCK)
def conf_ck_shift_write(src: g.GlobalPtr[g.f32], dst: g.GlobalPtr[g.f32], n: g.u64,
                        shift: g.i64):
    """``dst[i + shift] = src[i]``."""
    i = B.global_id(0)
    if i < n:
        dst[i + shift] = src[i]  # shifted write


class Buffers:
    """``src`` (1..N), ``dst`` and an unrelated ``other`` buffer on the kernel's device,
    filled with sentinels, and their host copies."""

    def __init__(self, raw: g.RawKernel) -> None:
        self.src_host = np.arange(1, N + 1, dtype=np.float32)
        self.dst_host = np.full(N, -1, np.float32)
        self.other_host = np.full(64, 7, np.float32)
        self.src, self.dst, self.other = (R.upload(raw, h) for h in
                                          (self.src_host, self.dst_host, self.other_host))

    def args(self, shift: int) -> list[object]:
        """The shift kernels' arguments."""
        return [self.src, self.dst, np.uint64(N), np.int64(shift)]

    def check(self, dst: np.ndarray) -> None:
        """``dst`` holds ``dst``; ``src`` and ``other`` hold what they were given."""
        np.testing.assert_array_equal(R.download(self.dst, N, np.float32), dst)
        np.testing.assert_array_equal(R.download(self.src, N, np.float32), self.src_host)
        np.testing.assert_array_equal(R.download(self.other, 64, np.float32),
                                      self.other_host)


def raised(raw: g.RawKernel) -> g.OutOfBounds:
    """The ``OutOfBounds`` that ``raw.synchronize()`` raises."""
    with pytest.raises(g.OutOfBounds) as info:
        raw.synchronize()
    return info.value


@pytest.mark.parametrize("shift", [1, -1], ids=["past_the_end", "negative"])
def test_global_read_out_of_bounds(gompute_backend: str, shift: int) -> None:
    """One thread reads ``src`` at ``N`` (or -1): reported with every field, the read gave
    0, the other buffers untouched; the record is cleared (an in-range launch then
    synchronizes cleanly)."""
    raw = g.RawKernel(conf_ck_shift_read, gompute_backend, checked=True)
    assert raw.checked
    bufs = Buffers(raw)
    raw.launch(g.Dim3.linear(N, BLOCK), BLOCK, bufs.args(shift))
    err = raised(raw)
    index, faulty = (N, N - 1) if shift > 0 else (-1, 0)
    assert (err.kernel, err.array, err.access, err.index, err.extent, err.where) == \
        ("conf_ck_shift_read", "src", "read", index, N, line_of("shifted read"))
    assert (err.block, err.thread) == ((faulty // BLOCK, 0, 0), (faulty % BLOCK, 0, 0))
    assert line_of("shifted read") in str(err) and f"index {index}" in str(err)
    src = bufs.src_host
    bufs.check(np.r_[src[1:], 0] if shift > 0 else np.r_[0, src[:-1]])
    raw.launch(g.Dim3.linear(N, BLOCK), BLOCK, bufs.args(0))
    raw.synchronize()
    bufs.check(src)


@pytest.mark.parametrize("shift", [1, -1], ids=["past_the_end", "negative"])
def test_global_write_out_of_bounds(gompute_backend: str, shift: int) -> None:
    """One thread writes ``dst`` at ``N`` (or -1): reported, not performed (``dst``'s
    other elements written, ``src`` and the other buffer untouched); the record is
    cleared."""
    raw = g.RawKernel(conf_ck_shift_write, gompute_backend, checked=True)
    bufs = Buffers(raw)
    raw.launch(g.Dim3.linear(N, BLOCK), BLOCK, bufs.args(shift))
    err = raised(raw)
    index, faulty = (N, N - 1) if shift > 0 else (-1, 0)
    assert (err.kernel, err.array, err.access, err.index, err.extent, err.where) == \
        ("conf_ck_shift_write", "dst", "write", index, N, line_of("shifted write"))
    assert (err.block, err.thread) == ((faulty // BLOCK, 0, 0), (faulty % BLOCK, 0, 0))
    src = bufs.src_host
    bufs.check(np.r_[-1, src[:-1]] if shift > 0 else np.r_[src[1:], -1])
    raw.launch(g.Dim3.linear(N, BLOCK), BLOCK, bufs.args(0))
    raw.synchronize()
    bufs.check(src)


# ------------------------------------------------------------------ shared and local arrays
@g.raw_kernel(block=SHARED)
def conf_ck_shared(out: g.GlobalPtr[g.f32], pad: g.i64):
    """Each thread stores its id + 1 in a shared array, then reads its neighbour's."""
    s = B.shared_array(g.f32, SHARED)
    lid = B.local_id(0)
    s[lid] = g.f32(lid + 1)
    B.barrier()
    out[lid] = s[lid + pad]  # padded shared read


@pytest.mark.parametrize("pad", [1, -1], ids=["past_the_end", "negative"])
def test_shared_array_out_of_bounds(gompute_backend: str, pad: int) -> None:
    """The last (first) thread reads the shared array at its extent (at -1)."""
    raw = g.RawKernel(conf_ck_shared, gompute_backend, checked=True)
    out = R.upload(raw, np.full(SHARED, -1, np.float32))
    raw.launch(1, SHARED, [out, pad])
    err = raised(raw)
    index, faulty = (SHARED, SHARED - 1) if pad > 0 else (-1, 0)
    assert (err.kernel, err.array, err.access, err.index, err.extent, err.where) == \
        ("conf_ck_shared", "s", "read", index, SHARED, line_of("padded shared read"))
    assert (err.block, err.thread) == ((0, 0, 0), (faulty, 0, 0))
    ids = np.arange(1, SHARED + 1, dtype=np.float32)
    want = np.r_[ids[1:], 0] if pad > 0 else np.r_[0, ids[:-1]]
    np.testing.assert_array_equal(R.download(out, SHARED, np.float32), want)
    raw.launch(1, SHARED, [out, 0])
    raw.synchronize()
    np.testing.assert_array_equal(R.download(out, SHARED, np.float32), ids)


@g.raw_kernel(block=BLOCK)
def conf_ck_local(out: g.GlobalPtr[g.f32], n: g.u64, k: g.i64):
    """Each thread fills a local array of four; the last one reads it at ``k``, the others
    at 0."""
    acc = g.local_array(g.f32, 4)
    i = B.global_id(0)
    if i < n:
        for j in range(4):
            acc[j] = g.f32(i * 4 + j)
        at = g.i64(0)
        if i == n - 1:
            at = k
        out[i] = acc[at]  # local read


@pytest.mark.parametrize("k", [4, -1], ids=["past_the_end", "negative"])
def test_local_array_out_of_bounds(gompute_backend: str, k: int) -> None:
    """The last thread reads its local array at 4 (at -1): reported against the array's
    shape, the read gave 0."""
    raw = g.RawKernel(conf_ck_local, gompute_backend, checked=True)
    out = R.upload(raw, np.full(N, -1, np.float32))
    raw.launch(g.Dim3.linear(N, BLOCK), BLOCK, [out, np.uint64(N), k])
    err = raised(raw)
    assert (err.kernel, err.array, err.access, err.index, err.extent, err.where) == \
        ("conf_ck_local", "acc", "read", k, 4, line_of("local read"))
    last = N - 1
    assert (err.block, err.thread) == ((last // BLOCK, 0, 0), (last % BLOCK, 0, 0))
    want = np.arange(N, dtype=np.float32) * 4
    np.testing.assert_array_equal(R.download(out, N, np.float32), np.r_[want[:-1], 0])
    raw.launch(g.Dim3.linear(N, BLOCK), BLOCK, [out, np.uint64(N), 3])
    raw.synchronize()
    np.testing.assert_array_equal(R.download(out, N, np.float32), np.r_[want[:-1], want[-1] + 3])


# ------------------------------------------------------------------ spec kernels
@g.params
class Weights:
    """Four weights and which one to use."""

    weights: g.Array[g.f32, 4]
    k: g.i64


def weighted(x, p):
    """``x`` times the weight ``p.k``."""
    return x * p.weights[p.k]  # map weights read


WEIGHTED = g.map("conf_ck_map", g.f32, Weights, weighted)
W = np.array([1.5, -2, 3, 0.25], np.float32)


@pytest.mark.parametrize("index", [4, -1], ids=["past_the_end", "negative"])
@mark(kind="map")
def test_spec_params_array_out_of_bounds(gompute_backend: str, index: int) -> None:
    """A ``g.map`` loaded checked reports the params array by its path; in range it gives
    NumPy's answer."""
    k = g.Kernel(WEIGHTED, gompute_backend, checked=True)
    assert k.checked
    x = np.linspace(-3, 3, 3001, dtype=np.float32)
    with pytest.raises(g.OutOfBounds) as info:
        k.run(x.copy(), Weights(weights=W, k=index))
    err = info.value
    assert err.kernel.startswith("conf_ck_map")
    assert (err.array, err.access, err.index, err.extent, err.where) == \
        ("p.weights", "read", index, 4, line_of("map weights read"))
    for j in range(4):
        np.testing.assert_array_equal(k.run(x.copy(), Weights(weights=W, k=j)), x * W[j])


def test_environment_turns_it_on(gompute_backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``$GOMPUTE_CHECKED=1`` loads a raw kernel checked unless ``checked=False``."""
    monkeypatch.setenv("GOMPUTE_CHECKED", "1")
    raw = g.RawKernel(conf_ck_shift_read, gompute_backend)
    assert raw.checked
    assert not g.RawKernel(conf_ck_shift_read, gompute_backend, checked=False).checked
    bufs = Buffers(raw)
    raw.launch(g.Dim3.linear(N, BLOCK), BLOCK, bufs.args(1))
    assert raised(raw).index == N


# ------------------------------------------------------------------ serial devices only
@g.raw_kernel(block=8)
def conf_ck_racy(out: g.GlobalPtr[g.f32]):
    """Each thread writes its element of a shared array, then reads its neighbour's before
    the barrier: a race between neighbours."""
    s = B.shared_array(g.f32, 8)
    tx = B.local_id(0)
    s[tx] = g.f32(tx)  # racy write
    v = s[(tx + 1) % 8]  # racy read
    B.barrier()
    out[tx] = v


@mark(capability="serial_threads")
def test_shared_memory_race(gompute_backend: str) -> None:
    """Reported whatever order the threads ran in: the element, both lines, the writer
    (the element's own thread) and the reader (its left neighbour)."""
    raw = g.RawKernel(conf_ck_racy, gompute_backend, checked=True)
    out = raw.alloc(8, g.f32)
    raw.launch(1, 8, [out])
    with pytest.raises(g.DataRace) as info:
        raw.synchronize()
    err = info.value
    assert (err.kernel, err.array, err.block) == ("conf_ck_racy", "s", (0, 0, 0))
    writer, reader = {"write after read": (err.thread, err.other_thread),
                      "read after write": (err.other_thread, err.thread)}[err.kind]
    assert writer == (err.element, 0, 0) and reader == ((err.element - 1) % 8, 0, 0)
    assert {err.where, err.other_where} == {line_of("racy write"), line_of("racy read")}


@g.raw_kernel(block=8)
def conf_ck_diverge(flags: g.GlobalPtr[g.i32], out: g.GlobalPtr[g.i32]):
    """Thread 0 sets a flag that makes the threads reading it after return before the
    barrier (the frontend cannot see that the condition depends on the thread)."""
    lid = B.local_id(0)
    k = 0
    while k < 4:
        if flags[k] < 0:
            return  # early return
        k += 1
    if lid == 0:
        flags[2] = -1
    B.barrier()  # the barrier
    out[lid] = 1


@mark(capability="serial_threads")
def test_barrier_divergence(gompute_backend: str) -> None:
    """A barrier that some threads of the block skipped by returning is reported with the
    barrier's line and a returning thread's."""
    raw = g.RawKernel(conf_ck_diverge, gompute_backend, checked=True)
    flags = R.upload(raw, np.zeros(4, np.int32))
    out = R.upload(raw, np.zeros(8, np.int32))
    raw.launch(1, 8, [flags, out])
    with pytest.raises(g.BarrierDivergence) as info:
        raw.synchronize()
    err = info.value
    assert (err.kernel, err.where, err.block, err.threads) == \
        ("conf_ck_diverge", line_of("the barrier"), (0, 0, 0), 8)
    assert 1 <= err.arrived < 8
    assert err.returned_where == line_of("early return")

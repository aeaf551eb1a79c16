"""Checked mode (``checked=True``, ``GOMPUTE_CHECKED=1``): every array access of a raw
kernel checked against its extent, shared-memory races and barrier divergence on the CPU,
each report's fields, the user's other memory untouched, the cache key, and unchecked code
unchanged. Real kernels on the CPU backend (and on OpenCL where a device exists; the
C-family source compiled with NVRTC and hiprtc where they load)."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import numpy as np
import pytest
from raw_examples import EXAMPLES

import gompute_core as g
from gompute_core.compilation.pipeline import cache_key
from gompute_core.errors import (
    BarrierDivergence,
    DataRace,
    GomputeError,
    GomputeWarning,
    InvalidArgument,
    OutOfBounds,
    Unsupported,
)
from gompute_core.ir.checked import ShadowType, instrument
from gompute_core.testing._support import marked_line
from gompute_core.testing.kernels_raw import raw_transpose

B = g.builtins
HERE = Path(__file__).resolve()


def line_of(marker: str) -> str:
    """``file:line`` of the line of this file that ends with ``# <marker>``."""
    return marked_line(HERE, marker)


@g.raw_kernel
def ck_shift_read(src: g.GlobalPtr[g.f32], dst: g.GlobalPtr[g.f32], n: g.u64, shift: g.i64):
    i = B.global_id(0)
    if i < n:
        dst[i] = src[i + shift]  # shifted read


@g.raw_kernel
def ck_shift_write(src: g.GlobalPtr[g.f32], dst: g.GlobalPtr[g.f32], n: g.u64, shift: g.i64):
    i = B.global_id(0)
    if i < n:
        dst[i + shift] = src[i]  # shifted write


@g.raw_kernel(block=(8, 8))
def ck_shared_pad(out: g.GlobalPtr[g.f32], pad: g.i64):
    tile = B.shared_array(g.f32, (8, 8))
    tx = B.local_id(0)
    ty = B.local_id(1)
    tile[ty, tx] = g.f32(tx + 1)
    B.barrier()
    out[ty * 8 + tx] = tile[ty, tx + pad]  # padded shared read


@g.params
class Taps:
    """Four weights, indexed by the thread."""

    w: g.Array[g.f32, 4]


@g.raw_kernel
def ck_taps(out: g.GlobalPtr[g.f32], n: g.u64, p: Taps):
    i = B.global_id(0)
    if i < n:
        out[i] = p.w[i]  # params read


@g.raw_kernel
def ck_compact(src: g.GlobalPtr[g.f32], n: g.u64, out: g.GlobalPtr[g.f32],
               count: g.GlobalPtr[g.u32]):
    i = B.global_id(0)
    if i < n and src[i] > 0:
        out[B.atomic_add(count, 0, 1)] = src[i]  # compacting write


@g.raw_kernel(block=(8, 8))
def ck_racy(out: g.GlobalPtr[g.f32]):
    tile = B.shared_array(g.f32, (8, 8))
    tx = B.local_id(0)
    ty = B.local_id(1)
    tile[ty, tx] = g.f32(tx)  # racy write
    v = tile[ty, (tx + 1) % 8]  # racy read
    B.barrier()
    out[ty * 8 + tx] = v


@g.raw_kernel(block=8)
def ck_diverge(flags: g.GlobalPtr[g.i32], out: g.GlobalPtr[g.i32]):
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


def _raise(kernel: g.RawKernel) -> GomputeError:
    with pytest.raises(GomputeError) as info:
        kernel.synchronize()
    return info.value


# ---- out of bounds ---------------------------------------------------------------------
def test_out_of_bounds_read_reads_zero_and_names_everything() -> None:
    k = g.RawKernel(ck_shift_read, "cpu", checked=True)
    src = np.arange(1, 11, dtype=np.float32)
    dst = np.full(10, -1, np.float32)
    k.launch(1, 16, [src, dst, np.uint64(10), 2])
    err = _raise(k)
    assert isinstance(err, OutOfBounds)
    assert (err.kernel, err.array, err.access, err.index, err.extent, err.where) == \
        ("ck_shift_read", "src", "read", 10, 10, line_of("shifted read"))
    assert (err.block, err.thread) == ((0, 0, 0), (8, 0, 0))
    assert line_of("shifted read") in str(err) and "'src'" in str(err)
    np.testing.assert_array_equal(dst, np.r_[src[2:], 0, 0])
    np.testing.assert_array_equal(src, np.arange(1, 11, dtype=np.float32))


def test_out_of_bounds_write_is_not_performed() -> None:
    k = g.RawKernel(ck_shift_write, "cpu", checked=True)
    src = np.arange(1, 11, dtype=np.float32)
    memory = np.full(16, -1, np.float32)
    dst = memory[:10]  # the elements after it are the user's too
    k.launch(1, 16, [src, dst, np.uint64(10), 3])
    err = _raise(k)
    assert isinstance(err, OutOfBounds)
    assert (err.array, err.access, err.index, err.extent, err.where, err.thread) == \
        ("dst", "write", 10, 10, line_of("shifted write"), (7, 0, 0))
    np.testing.assert_array_equal(memory, np.r_[[-1] * 3, src[:7], [-1] * 6])


def test_negative_index_is_out_of_bounds_not_wrapped() -> None:
    k = g.RawKernel(ck_shift_read, "cpu", checked=True)
    src = np.arange(1, 11, dtype=np.float32)
    dst = np.full(10, -1, np.float32)
    k.launch(1, 16, [src, dst, np.uint64(10), -3])
    err = _raise(k)
    assert isinstance(err, OutOfBounds)
    assert (err.index, err.extent, err.thread) == (-3, 10, (0, 0, 0))
    assert "index -3" in str(err)
    np.testing.assert_array_equal(dst, np.r_[0, 0, 0, src[:7]])


def test_shared_array_out_of_bounds_names_the_dimension() -> None:
    k = g.RawKernel(ck_shared_pad, "cpu", checked=True)
    out = np.zeros(64, np.float32)
    k.launch(1, (8, 8), [out, 1])
    err = _raise(k)
    assert isinstance(err, OutOfBounds)
    assert (err.array, err.access, err.index, err.extent, err.dim, err.where, err.thread) == \
        ("tile", "read", 8, 8, 1, line_of("padded shared read"), (7, 0, 0))
    want = np.tile(np.r_[np.arange(2, 9), 0].astype(np.float32), 8)
    np.testing.assert_array_equal(out, want)


def test_params_array_out_of_bounds() -> None:
    k = g.RawKernel(ck_taps, "cpu", checked=True)
    out = np.full(6, -1, np.float32)
    k.launch(1, 8, [out, np.uint64(6), Taps(w=np.arange(1, 5, dtype=np.float32))])
    err = _raise(k)
    assert isinstance(err, OutOfBounds)
    assert (err.array, err.index, err.extent, err.where) == \
        ("p.w", 4, 4, line_of("params read"))
    np.testing.assert_array_equal(out, [1, 2, 3, 4, 0, 0])


def test_an_index_computed_by_an_atomic_is_evaluated_once() -> None:
    k = g.RawKernel(ck_compact, "cpu", checked=True)
    src = np.array([1, -1, 2, 3, -4, 5, 6], np.float32)
    memory = np.full(6, -1, np.float32)
    out = memory[:3]
    count = np.zeros(1, np.uint32)
    k.launch(1, 8, [src, np.uint64(7), out, count])
    err = _raise(k)
    assert isinstance(err, OutOfBounds)
    assert (err.array, err.access, err.index, err.extent, err.where) == \
        ("out", "write", 3, 3, line_of("compacting write"))
    assert count[0] == 5  # one atomic per positive element, none repeated by the check
    np.testing.assert_array_equal(memory, [1, 2, 3, -1, -1, -1])


@g.raw_kernel
def ck_bins(values: g.GlobalPtr[g.i32], n: g.u64, bins: g.GlobalPtr[g.u32]):
    i = B.global_id(0)
    if i < n:
        B.atomic_add(bins, values[i], 1)  # binning atomic


def test_an_atomic_indexed_by_a_loaded_value() -> None:
    """The index (a read, kept in a new local) is checked, then used by the atomic."""
    k = g.RawKernel(ck_bins, "cpu", checked=True)
    values = np.array([0, 3, 1, 3, 9, 2, 3, -1], np.int32)
    memory = np.zeros(6, np.uint32)
    bins = memory[:4]
    k.launch(1, 8, [values, np.uint64(8), bins])
    err = _raise(k)
    assert isinstance(err, OutOfBounds)
    assert (err.array, err.access, err.extent, err.where) == \
        ("bins", "atomic", 4, line_of("binning atomic"))
    assert (err.index, err.thread) in ((9, (4, 0, 0)), (-1, (7, 0, 0)))
    inside = values[(values >= 0) & (values < 4)]
    np.testing.assert_array_equal(memory, np.r_[np.bincount(inside, minlength=4), 0, 0])


def test_an_atomic_index_in_a_conditional_expression_is_refused() -> None:
    @g.raw_kernel
    def ck_atomic_in_select(out: g.GlobalPtr[g.f32], count: g.GlobalPtr[g.u32]):
        i = B.global_id(0)
        out[0] = out[B.atomic_add(count, 0, 1)] if i < 4 else g.f32(0)

    g.RawKernel(ck_atomic_in_select, "cpu")  # unchecked: fine
    with pytest.raises(Unsupported, match="assign the atomic's result to a variable"):
        g.RawKernel(ck_atomic_in_select, "cpu", checked=True)


def test_the_record_is_cleared_after_it_is_raised() -> None:
    k = g.RawKernel(ck_shift_read, "cpu", checked=True)
    src = np.arange(10, dtype=np.float32)
    dst = np.zeros(10, np.float32)
    k.launch(1, 16, [src, dst, np.uint64(10), 5])
    assert isinstance(_raise(k), OutOfBounds)
    k.launch(1, 16, [src, dst, np.uint64(10), 0])
    k.synchronize()
    np.testing.assert_array_equal(dst, src)


# ---- helper functions ------------------------------------------------------------------
def ck_tap(q, i):
    return q.w[i]  # helper params read


def ck_first_set(i, k):
    acc = g.local_array(g.i64, 4)
    acc[i % 4] = i + 1
    j = 0
    while acc[j] == 0:  # helper local read
        j += 1
    return acc[k] + j  # helper local read k


def ck_pair(q, i):
    return ck_tap(q, i), q.w[0]


@g.raw_kernel
def ck_helpers(out: g.GlobalPtr[g.f32], n: g.u64, k: g.i64, p: Taps):
    i = B.global_id(0)
    if i < n:
        a, b = ck_pair(p, i)
        out[i] = a + b + g.f32(ck_first_set(i, k)) if i >= 0 else g.f32(0)


def test_a_helpers_accesses_are_checked_and_name_the_helpers_line() -> None:
    """A helper cannot write the record: it returns its first fault with its value, through
    a helper calling it and a conditional expression, to the entry, which records it."""
    k = g.RawKernel(ck_helpers, "cpu", checked=True)
    taps = Taps(w=np.arange(1, 5, dtype=np.float32))
    out = np.full(6, -1, np.float32)
    k.launch(1, 8, [out, np.uint64(6), 0, taps])
    err = _raise(k)
    assert isinstance(err, OutOfBounds)
    assert (err.kernel, err.array, err.access, err.index, err.extent, err.where) == \
        ("ck_helpers", "q.w", "read", 4, 4, line_of("helper params read"))
    # each thread's own oracle: the kernel as plain Python, an out-of-range read giving 0
    w = [1, 2, 3, 4]
    want = [(w[i] if i < 4 else 0) + 1 + (i + 1 if i % 4 == 0 else 0) + i % 4
            for i in range(6)]
    np.testing.assert_array_equal(out, want)


def test_a_helpers_local_array_is_checked() -> None:
    k = g.RawKernel(ck_helpers, "cpu", checked=True)
    out = np.full(3, -1, np.float32)
    k.launch(1, 4, [out, np.uint64(3), 5, Taps(w=np.arange(1, 5, dtype=np.float32))])
    err = _raise(k)
    assert isinstance(err, OutOfBounds)
    assert (err.array, err.access, err.index, err.extent) == ("acc", "read", 5, 4)
    assert err.where == line_of("helper local read k")  # the access's line, not the def's
    k.launch(1, 4, [out, np.uint64(3), 1, Taps(w=np.arange(1, 5, dtype=np.float32))])
    k.synchronize()
    np.testing.assert_array_equal(out, [1 + 1 + 0 + 0, 2 + 1 + 2 + 1, 3 + 1 + 0 + 2])


def test_a_helper_without_checked_accesses_is_left_as_it_is() -> None:
    ins = instrument(ck_helpers.lower())
    plain = {f.name: f for f in ck_helpers.lower().functions}
    for f in ins.kernel.functions[:-1]:
        assert f.ret != plain[f.name].ret  # every helper here indexes an array
    assert [s.array for s in ins.sites][:2] == ["q.w", "q.w"]
    assert instrument(ck_shift_read.lower()).kernel.functions[:-1] == \
        ck_shift_read.lower().functions[:-1]


# ---- the CPU's races and barriers ------------------------------------------------------
def test_shared_memory_race_names_both_threads_and_lines() -> None:
    k = g.RawKernel(ck_racy, "cpu", checked=True)
    out = np.zeros(64, np.float32)
    k.launch(1, (8, 8), [out])
    err = _raise(k)
    assert isinstance(err, DataRace)
    assert (err.kernel, err.array, err.element, err.kind) == \
        ("ck_racy", "tile", (0, 1), "write after read")
    assert (err.thread, err.where) == ((1, 0, 0), line_of("racy write"))
    assert (err.other_thread, err.other_where) == ((0, 0, 0), line_of("racy read"))
    assert err.block == (0, 0, 0)


@g.raw_kernel(block=8)
def ck_loop_race(out: g.GlobalPtr[g.f32], rounds: g.i64):
    s = B.shared_array(g.f32, 8)
    tx = B.local_id(0)
    r = 0
    acc = g.f32(0)
    while r < rounds:
        s[tx] = g.f32(r)  # loop write
        B.barrier()
        acc += s[(tx + 1) % 8]  # loop read
        r += 1
    out[tx] = acc


def test_race_between_a_read_and_the_next_iterations_write() -> None:
    """``s[tx]`` is the thread's own element, but the read after the barrier shares its
    interval with the next iteration's write (no barrier between them): both tracked.
    The CPU runs every thread's read, then every thread's next write."""
    k = g.RawKernel(ck_loop_race, "cpu", checked=True)
    k.launch(1, 8, [np.zeros(8, np.float32), 1])
    k.synchronize()  # one round: the read's interval ends with the kernel
    k.launch(1, 8, [np.zeros(8, np.float32), 2])
    err = _raise(k)
    assert isinstance(err, DataRace)
    assert (err.element, err.kind, err.thread, err.other_thread) == \
        (0, "write after read", (0, 0, 0), (7, 0, 0))
    assert (err.where, err.other_where) == (line_of("loop write"), line_of("loop read"))


@g.raw_kernel(block=(8, 2))
def ck_rows_collide(out: g.GlobalPtr[g.f32]):
    s = B.shared_array(g.f32, 8)
    tx = B.local_id(0)
    s[tx] = g.f32(B.local_id(1))  # colliding write
    B.barrier()
    out[tx] = s[tx]


def test_an_index_missing_a_block_dimension_is_tracked() -> None:
    """``s[local_id(0)]`` in a block of two rows: two threads write each element."""
    k = g.RawKernel(ck_rows_collide, "cpu", checked=True)
    k.launch(1, (8, 2), [np.zeros(8, np.float32)])
    err = _raise(k)
    assert isinstance(err, DataRace)
    assert (err.element, err.kind, err.thread, err.other_thread, err.where) == \
        (0, "write after write", (0, 1, 0), (0, 0, 0), line_of("colliding write"))


def test_thread_private_accesses_have_no_shadows() -> None:
    """The transpose's ``tile[ty, tx]`` and ``tile[tx, ty]`` are in different barrier
    intervals, each its own thread's element: no stamps; ``ck_racy``'s tile keeps them."""
    def shadows(kernel: g.RawKernelDef) -> list[str]:
        entry = instrument(kernel.lower(), serial=True).kernel.functions[-1]
        return [n for n, t in entry.locals if isinstance(t, ShadowType)]

    assert shadows(raw_transpose) == ["ck_arrive"]
    assert shadows(ck_racy) == ["ck_w_tile", "ck_r1_tile", "ck_r2_tile", "ck_arrive"]


def test_barrier_reached_by_some_threads_only() -> None:
    k = g.RawKernel(ck_diverge, "cpu", checked=True)
    flags = np.zeros(4, np.int32)
    out = np.zeros(8, np.int32)
    k.launch(1, 8, [flags, out])
    err = _raise(k)
    assert isinstance(err, BarrierDivergence)
    assert (err.kernel, err.where, err.block, err.arrived, err.threads) == \
        ("ck_diverge", line_of("the barrier"), (0, 0, 0), 1, 8)
    assert (err.returned_thread, err.returned_where) == ((7, 0, 0), line_of("early return"))


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_raw_example_runs_checked_like_numpy(name: str) -> None:
    """No false report (bounds, races, barriers) on correct kernels, and the same results."""
    example = EXAMPLES[name]
    if any(np.float16 in (t, getattr(t, "elem", None)) for _, t in example.kernel.signature):
        pytest.skip("the CPU backend has no f16 arithmetic (checked or not)")
    grid, block, shared, args = example.setup(np.random.default_rng(7))
    before = copy.deepcopy(args)
    k = g.RawKernel(example.kernel, "cpu", checked=True)
    assert k.checked
    k.launch(grid, block, args, shared_bytes=shared)
    k.synchronize()
    example.check(before, args)


# ---- switching it on, the cache, unchecked code ----------------------------------------
def test_environment_turns_it_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOMPUTE_CHECKED", "1")
    k = g.RawKernel(ck_shift_read, "cpu")
    assert k.checked and not g.RawKernel(ck_shift_read, "cpu", checked=False).checked
    k.launch(1, 16, [np.zeros(4, np.float32), np.zeros(4, np.float32), np.uint64(4), 1])
    assert isinstance(_raise(k), OutOfBounds)
    monkeypatch.setenv("GOMPUTE_CHECKED", "0")
    assert not g.RawKernel(ck_shift_read, "cpu").checked
    monkeypatch.setenv("GOMPUTE_CHECKED", "yes")
    with pytest.raises(InvalidArgument, match="GOMPUTE_CHECKED"):
        g.RawKernel(ck_shift_read, "cpu")


def test_c_source_kernels_cannot_be_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    definition = g.RawKernel.from_source(
        "ck_from_c", "void ck_from_c(float* x) { x[0] = 1; }", "cpu", [g.GlobalPtr[g.f32]],
        load=False)
    with pytest.raises(Unsupported, match="checked mode instruments kernels written in Python"):
        g.RawKernel(definition, "cpu", checked=True)
    monkeypatch.setenv("GOMPUTE_CHECKED", "1")
    # the whole process asked for it: warned, then loaded unchecked (the CPU backend takes
    # no C text, so loading fails the way it always did)
    with pytest.warns(GomputeWarning, match="runs unchecked"), pytest.raises(GomputeError):
        g.RawKernel(definition, "cpu")


def test_checked_is_part_of_the_cache_key() -> None:
    from gompute_cpu.plugin import CpuCompiler

    plain = g.RawKernel(ck_shift_read, "cpu", checked=False)
    checked = g.RawKernel(ck_shift_read, "cpu", checked=True)
    assert plain.artifact.digest != checked.artifact.digest
    kir = ck_shift_read.lower()
    ins = instrument(kir, serial=True).kernel
    compiler = CpuCompiler()
    assert cache_key(compiler, kir, "host", (), plain.source) != \
        cache_key(compiler, ins, "host", (), checked.source)
    assert checked.artifact.digest == ins.digest()


@pytest.mark.parametrize("name", ["shift_read", "racy", "diverge", "taps"])
def test_unchecked_source_is_the_plain_rendering(name: str) -> None:
    """Off, the kernel compiles exactly what it always did: the renderer's output for the
    lowered IR, with nothing of checked mode in it."""
    from gompute_cpu.plugin import CpuCompiler

    kernel = {"shift_read": ck_shift_read, "racy": ck_racy, "diverge": ck_diverge,
              "taps": ck_taps}[name]
    plain = g.RawKernel(kernel, "cpu", checked=False)
    assert plain.source == CpuCompiler().render(kernel.lower(), plain.artifact.target)
    assert plain.kernel_ir is kernel.lower()
    assert "ck_" not in plain.source.replace(f"ck_{name}", "")
    assert "v_ck_fault" in g.RawKernel(kernel, "cpu", checked=True).source


@g.raw_kernel
def ck_local(out: g.GlobalPtr[g.f32], k: g.i64):
    acc = g.local_array(g.f32, 4)
    i = B.global_id(0)
    acc[i % 4] = g.f32(i)  # local write
    out[i] = acc[k]  # local read


def test_local_arrays_are_checked_against_their_shape() -> None:
    """A raw kernel's local array is one more checked array, on the CPU too."""
    ins = instrument(ck_local.lower())
    assert [(s.access, s.array, s.shape) for s in ins.sites] == \
        [("write", "acc", (4,)), ("read", "acc", (4,)), ("write", "out", None)]
    k = g.RawKernel(ck_local, "cpu", checked=True)
    out = np.zeros(8, np.float32)
    k.launch(1, 8, [out, 4])
    with pytest.raises(g.OutOfBounds, match="read of 'acc' at index 4") as info:
        k.synchronize()
    assert info.value.where == line_of("local read")
    assert [s.where for s in ins.sites[:2]] == [line_of("local write"), line_of("local read")]


# ---- the C family ----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["transpose", "histogram", "atomics", "stencil", "saxpy",
                                  "helpers"])
def test_checked_c_family_source_compiles(name: str) -> None:
    """NVRTC (CUDA) and hiprtc (HIP) compile the checked kernels, where they load."""
    pytest.importorskip("gompute_cuda")
    pytest.importorskip("gompute_hip")
    from gompute_core.compilation import compile_kernel

    kernel = ck_helpers if name == "helpers" else EXAMPLES[name].kernel
    kir = instrument(kernel.lower()).kernel
    compiled = 0
    for module, cls, arch in (("gompute_cuda.compiler", "CudaCompiler", "sm_90"),
                              ("gompute_hip.compiler", "HipCompiler", "gfx90a")):
        compiler = getattr(__import__(module, fromlist=[cls]), cls)()
        try:
            art = compile_kernel(compiler, kir, arch)
        except g.BackendUnavailable:
            continue
        assert "ck_fault" in art.source and art.image
        compiled += 1
    if not compiled:
        pytest.skip("neither NVRTC nor hiprtc loads here")


OPENCL_CHILD = """
import json, sys
import numpy as np
import gompute_core as g
from gompute_core.plugins import manager
sys.path.insert(0, sys.argv[1])
from gompute_opencl import plugin
B = g.builtins

@g.raw_kernel
def ck_ocl_write(src: g.GlobalPtr[g.f32], dst: g.GlobalPtr[g.f32], n: g.u64, shift: g.i64):
    i = B.global_id(0)
    if i < n:
        dst[i + shift] = src[i]

with manager.isolated():
    manager.register(plugin, "opencl")
    avail = manager.probe("opencl")
    if not avail.available:
        print(json.dumps({"skip": avail.reason}))
        sys.exit(0)
    k = g.RawKernel(ck_ocl_write, "opencl", checked=True)
    src, dst, after = k.alloc(10, g.f32), k.alloc(16, g.f32), k.alloc(4, g.f32)
    src.upload(np.arange(1, 11, dtype=np.float32))
    dst.upload(np.full(16, -1, np.float32))
    after.upload(np.full(4, 7, np.float32))
    k.launch(1, 16, [src, dst, np.uint64(10), 8])
    try:
        k.synchronize()
        fields = None
    except g.OutOfBounds as e:
        fields = {f: getattr(e, f) for f in ("kernel", "array", "access", "index", "extent",
                                            "where", "block", "thread")}
    host, rest = np.empty(16, np.float32), np.empty(4, np.float32)
    dst.download(host)
    after.download(rest)
    print(json.dumps({"fault": fields, "dst": host.tolist(), "after": rest.tolist()}))
"""


def test_opencl_device_side_record(tmp_path: Path) -> None:
    """The C-family path end to end on PoCL: the fault record read back at synchronize, the
    faulting stores not performed. In a fresh interpreter: PoCL's LLVM and numba's do not
    share a process."""
    pytest.importorskip("pyopencl")
    import json
    import subprocess

    script = tmp_path / "ocl_child.py"
    script.write_text(OPENCL_CHILD)
    root = HERE.parent.parent / "examples" / "gompute-opencl"
    done = subprocess.run([sys.executable, str(script), str(root)], capture_output=True,
                          text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.splitlines()[-1])
    if "skip" in result:
        pytest.skip(result["skip"])
    fault = result["fault"]
    assert fault is not None, "no OutOfBounds"
    assert (fault["kernel"], fault["array"], fault["access"], fault["extent"]) == \
        ("ck_ocl_write", "dst", "write", 16)
    assert fault["where"] == f"{script}:14"
    assert fault["index"] in (16, 17)  # threads 8 and 9 race for the record: first wins
    assert tuple(fault["thread"]) in ((8, 0, 0), (9, 0, 0))
    assert result["dst"] == [-1] * 8 + list(range(1, 9))
    assert result["after"] == [7] * 4

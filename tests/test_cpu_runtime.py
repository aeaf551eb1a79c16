"""CPU runtime: the Buffer protocol, the launch path, serial == threaded, gather/scatter
bounds, and the on-disk cache seen from a second process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from gompute_cpu import plugin
from gompute_cpu.device import CpuBuffer, CpuDevice

import gompute_core as g
from gompute_core.errors import InvalidArgument, NoDevice


@g.params
class Affine:
    a: g.i32
    b: g.i32


def affine(x, p: Affine):
    return x * p.a + p.b


def first_nonzero(a, b):
    """Associative, not commutative: order of the fold matters."""
    return a if a != 0 else b


def index_mix(x, i, p: Affine):
    return x + g.i32(i % 7) * p.a


@g.params
class Pt:
    x: g.f32
    y: g.f32


@g.params
class Row:
    v: g.Array[g.i32, 3]


@g.params
class Cloud:
    n: g.u8
    pts: g.Array[Pt, 3]
    rows: g.Array[Row, 2]
    origin: Pt


def dot(a, q):
    return a * q.x + q.y


def cloud(x, i, p: Cloud):
    k = g.i64(i % 3)
    r = dot(x, p.pts[k]) + dot(x, p.origin)
    return r + g.f32(p.rows[k % 2].v[k])


AFFINE_MAP = g.map("cpu_rt_affine", g.i32, Affine, affine)
FIRST_NZ = g.reduce("cpu_rt_first_nonzero", g.i64, None, first_nonzero, 0)
SUM_F64 = g.sum("cpu_rt_sum_f64", g.f64)
INDEXED = g.map_indexed("cpu_rt_indexed", g.i32, Affine, index_mix)
GATHER = g.gather("cpu_rt_gather", g.f32, g.i32)
SCATTER = g.scatter("cpu_rt_scatter", g.f32, g.i64)
GATHER_U = g.gather("cpu_rt_gather_u", g.f32, g.u16)


def device() -> object:
    return plugin.gompute_device(0)


# ---------------------------------------------------------------------------- buffers

def test_buffer_transfers_round_trip() -> None:
    buf = device().alloc(64)
    src = np.arange(16, dtype=np.float32)
    buf.upload(src)
    back = np.zeros(16, np.float32)
    buf.download(back)
    np.testing.assert_array_equal(back, src)
    buf.upload_at(8, np.array([100, 101], np.float32))
    part = np.zeros(4, np.float32)
    buf.download_at(4, part)
    np.testing.assert_array_equal(part, [1, 100, 101, 4])
    other = device().alloc(64)
    other.copy_from_async(buf)
    other.download(back)
    np.testing.assert_array_equal(back[:5], [0, 1, 100, 101, 4])
    other.fill_async(0, nbytes=8, offset=4)
    other.download(back)
    np.testing.assert_array_equal(back[:4], [0, 0, 0, 101])
    assert other.device_addr() != buf.device_addr() and buf.device_addr() > 0


def test_out_of_range_transfers_copy_nothing() -> None:
    buf = device().alloc(16)
    buf.upload(np.full(4, 7, np.int32))
    with pytest.raises(InvalidArgument, match="past the end"):
        buf.upload_at(8, np.full(3, 9, np.int32))
    with pytest.raises(InvalidArgument):
        buf.upload(np.zeros(2, np.int32), nbytes=12)  # more than the host array holds
    host = np.full(8, -1, np.int32)
    with pytest.raises(InvalidArgument, match="past the end"):
        buf.download(host)
    np.testing.assert_array_equal(host, -1)
    with pytest.raises(InvalidArgument):
        buf.download_at(-4, host, 4)
    with pytest.raises(InvalidArgument):
        buf.fill_async(256)
    check = np.zeros(4, np.int32)
    buf.download(check)
    np.testing.assert_array_equal(check, 7)


def test_free_is_idempotent_and_use_after_free_is_an_error() -> None:
    buf = device().alloc(8)
    buf.free()
    buf.free()
    with pytest.raises(InvalidArgument, match="after free"):
        buf.upload(np.zeros(2, np.int32))


def test_immediate_events_time_by_the_host_clock() -> None:
    """CPU events: ``elapsed_us`` is the host time between the two records; an unrecorded
    or untimed event, or another device's stream, is refused by name."""
    from gompute_core.backend import ImmediateEvent, ImmediateStream
    from gompute_core.errors import EventFailed

    dev = device()
    start, end = dev.create_event(), dev.create_event()
    assert isinstance(start, ImmediateEvent) and start.query()
    start.record()
    with pytest.raises(EventFailed, match="this event was never recorded"):
        end.elapsed_us(start)
    with pytest.raises(EventFailed, match="start was never recorded"):
        start.elapsed_us(end)
    before = time.perf_counter()
    time.sleep(0.02)
    end.record(dev.create_stream())
    wall_us = (time.perf_counter() - before) * 1e6
    assert 20_000 <= end.elapsed_us(start) <= wall_us + 1e6
    untimed = dev.create_event(timing=False)
    untimed.record()
    with pytest.raises(EventFailed, match="timing=False"):
        untimed.elapsed_us(start)
    with pytest.raises(InvalidArgument, match="does not belong"):
        end.record(ImmediateStream(CpuDevice("other", "other")))
    with pytest.raises(InvalidArgument, match="start"):
        end.elapsed_us(object())  # type: ignore[arg-type]


def test_device_is_ordinal_zero_only() -> None:
    assert device() is plugin.gompute_device(0)
    with pytest.raises(NoDevice):
        plugin.gompute_device(1)


# ---------------------------------------------------------------------------- launch path

def test_launch_on_buffers_matches_run() -> None:
    p = Affine(a=3, b=-5)
    data = np.arange(-500, 500, dtype=np.int32)
    want = data.copy()
    with g.Kernel(AFFINE_MAP, "cpu") as k:
        k.run(want, p)
        buf = k.alloc(data.size)
        assert isinstance(buf, CpuBuffer)
        buf.upload(data)
        k.launch(buf, data.size, p)
        k.context.synchronize()
        buf.download(data)
        with pytest.raises(InvalidArgument, match="holds 1000 elements"):
            k.launch(buf, data.size + 1, p)
        buf.free()
    np.testing.assert_array_equal(data, want)


SHIFTED = g.map_to("cpu_rt_shifted", g.f32, g.f32, None, lambda v: v + 1)


def test_launch_refuses_partially_overlapping_views() -> None:
    """``launch(x[:-1], x[1:], n)``: NumPy views of one array as input and output, whose
    result would depend on the loop order, are refused as ``run`` refuses them; the same
    elements (``x, x``) still work in place."""
    x = np.arange(9, dtype=np.float32)
    before = x.copy()
    with g.Kernel(SHIFTED, "cpu") as k:
        with pytest.raises(InvalidArgument, match="^out: overlaps inp") as by_run:
            k.run(x[:-1], x[1:])
        with pytest.raises(InvalidArgument) as by_launch:
            k.launch(x[:-1], x[1:], 8)
        assert str(by_launch.value) == f"launch: {by_run.value}"
        np.testing.assert_array_equal(x, before)
        k.launch(x[1:], x[1:], 8)
    np.testing.assert_array_equal(x, [before[0], *(before[1:] + 1)])


def test_reduce_launch_writes_one_partial_per_block() -> None:
    data = np.arange(1, 1001, dtype=np.float64)
    with g.Kernel(SUM_F64, "cpu") as k:
        dbuf, pbuf = k.alloc(data.size), k.alloc(7)
        dbuf.upload(data)
        k.launch(dbuf, data.size, pbuf, 7, None)
        partials = np.zeros(7, np.float64)
        pbuf.download(partials)
    bounds = [b * 1000 // 7 for b in range(8)]
    np.testing.assert_array_equal(
        partials, [data[lo:hi].sum() for lo, hi in zip(bounds, bounds[1:], strict=False)])


def test_params_leaves_cover_arrays_of_records_and_record_arguments() -> None:
    """Arrays of records become strided leaves (2-d through Row.v), dynamically indexed;
    a record passed to a helper crosses as its leaves."""
    spec = g.map_indexed("cpu_rt_cloud", g.f32, Cloud, cloud)
    p = Cloud(n=3, pts=[Pt(x=1, y=2), Pt(x=3, y=4), Pt(x=5, y=6)],
              rows=[Row(v=[1, 2, 3]), Row(v=[4, 5, 6])], origin=Pt(x=0.5, y=-1))
    data = np.linspace(-2, 2, 101, dtype=np.float32)
    want = np.array([cloud(x, np.uint64(i), p) for i, x in enumerate(data)], np.float32)
    with g.Kernel(spec, "cpu") as k:
        k.run(data, p)
        shapes = [leaf.shape for leaf in k.program.entry.params.leaves]
        assert shapes == [(), (3,), (3,), (2, 3), (), ()]
    np.testing.assert_array_equal(data, want)


# ---------------------------------------------------------------------------- serial == threaded

def _run_all(monkeypatch: pytest.MonkeyPatch, threshold: int) -> list[np.ndarray]:
    monkeypatch.setenv("GOMPUTE_CPU_PARALLEL_THRESHOLD", str(threshold))
    rng = np.random.default_rng(11)
    n = 50_003
    p = Affine(a=-7, b=2**30)
    out: list[np.ndarray] = []
    with g.Kernel(AFFINE_MAP, "cpu") as k:
        assert k.program.entry.threshold == threshold
        d = rng.integers(-2**31, 2**31, n, dtype=np.int32)
        out.append(k.run(d, p))
    with g.Kernel(INDEXED, "cpu") as k:
        out.append(k.run(np.zeros(n, np.int32), p))
    with g.Kernel(FIRST_NZ, "cpu") as k:
        d = np.zeros(n, np.int64)
        d[[40_000, 12_345, 45_000]] = [5, 9, 3]
        out.append(np.array([k.run(d), k.run(np.zeros(n, np.int64))]))
    src = rng.random(1000, dtype=np.float32)
    idx = rng.integers(-50, 1050, n, dtype=np.int32)
    with g.Kernel(GATHER, "cpu") as k:
        out.append(k.run(src, idx, np.full(n, -1, np.float32)))
    return out


def test_threaded_and_serial_paths_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    serial = _run_all(monkeypatch, 1 << 40)
    threaded = _run_all(monkeypatch, 0)
    for s, t in zip(serial, threaded, strict=True):
        np.testing.assert_array_equal(s, t)
    # and both agree with the oracle for the order-sensitive reduce
    np.testing.assert_array_equal(serial[2], [9, 0])


# ---------------------------------------------------------------------------- gather / scatter

@pytest.mark.parametrize("threshold", [0, 1 << 40])
def test_out_of_range_indices_are_skipped(monkeypatch: pytest.MonkeyPatch, threshold: int) -> None:
    monkeypatch.setenv("GOMPUTE_CPU_PARALLEL_THRESHOLD", str(threshold))
    src = np.arange(10, dtype=np.float32)
    with g.Kernel(GATHER, "cpu") as k:
        out = k.run(src, np.array([0, -1, 9, 10, -2**31, 3], np.int32), np.full(6, -1, np.float32))
    np.testing.assert_array_equal(out, [0, -1, 9, -1, -1, 3])
    with g.Kernel(GATHER_U, "cpu") as k:
        out = k.run(src, np.array([65535, 2, 10], np.uint16), np.full(3, -1, np.float32))
    np.testing.assert_array_equal(out, [-1, 2, -1])
    with g.Kernel(SCATTER, "cpu") as k:
        idx = np.array([1, -1, 4, 5, 2**40, 1], np.int64)
        out = k.run(np.arange(6, dtype=np.float32), idx, np.zeros(5, np.float32))
    np.testing.assert_array_equal(out, [0, 5, 0, 0, 2])  # duplicate index: the last write wins


# ---------------------------------------------------------------------------- disk cache

_CHILD = textwrap.dedent("""
    import json, time
    t0 = time.perf_counter()
    import numpy as np, gompute_core as g

    def twice(x):
        return x * 2 + 1

    spec = g.map("cache_probe", g.i64, None, twice)
    with g.Kernel(spec, "cpu") as k:
        ready = time.perf_counter()
        data = np.arange(5, dtype=np.int64)
        k.run(data)
        stats = k.program.entry.module.k_serial.stats
        print(json.dumps({"hits": sum(stats.cache_hits.values()),
                          "misses": sum(stats.cache_misses.values()),
                          "data": data.tolist(), "open_s": ready - t0}))
""")


def test_second_process_loads_from_disk_without_compiling(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    env = dict(os.environ, GOMPUTE_CACHE_DIR=str(tmp_path / "cache"))
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                              text=True, timeout=300, check=True)
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert runs[0]["misses"] == 1 and runs[0]["hits"] == 0
    assert runs[1]["hits"] == 1 and runs[1]["misses"] == 0
    assert runs[1]["data"] == [1, 3, 5, 7, 9]
    index_files = list((tmp_path / "cache" / "cpu" / "__pycache__").glob("*.nbi"))
    assert any("k_serial" in f.name for f in index_files)


_INTERRUPTED = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import gompute_core as g

    B = g.builtins

    @g.raw_kernel(block=1)
    def spin_count(count: g.GlobalPtr[g.i64], work: g.i64, out: g.GlobalPtr[g.i64],
                   n: g.i64):
        # every block spins `work` steps, counts itself and writes its sum (the first n)
        acc = g.i64(0)
        for j in range(work):
            acc += j ^ B.block_id(0)
        B.atomic_add(count, 0, 1)
        if B.block_id(0) < n:
            out[B.block_id(0)] = acc

    raw = g.RawKernel(spin_count, "cpu")
    count, out = np.zeros(1, np.int64), np.zeros(3000, np.int64)
    raw.launch(4096, 1, [count, 8, out, 0])  # the threaded entry is compiled here
    print("ready", flush=True)
    count[:] = 0
    try:
        raw.launch(2**31 - 1, 1, [count, 100000, out, 0])
        print(json.dumps({"finished": True}), flush=True)
    except KeyboardInterrupt:
        print(json.dumps({"interrupted": True, "at": time.time(), "blocks": int(count[0])}),
              flush=True)
    count[:] = 0
    raw.launch(3000, 1, [count, 50, out, 3000])  # the handle still works
    print(json.dumps({"count": int(count[0]), "out": out.tolist()}), flush=True)
""")


def test_a_huge_raw_launch_is_interrupted_by_ctrl_c(tmp_path: Path) -> None:
    """SIGINT during a raw launch of 2**31-1 blocks (hours of work) raises
    ``KeyboardInterrupt`` in the launching process while the launch runs (some blocks ran,
    far from all); the handle then launches again and computes what the kernel run as
    Python does."""
    script = tmp_path / "interrupted.py"
    script.write_text(_INTERRUPTED)
    env = dict(os.environ, NUMBA_NUM_THREADS="2")
    proc = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()  # type: ignore[union-attr]
        time.sleep(0.5)
        sent = time.time()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)  # the whole launch would take hours
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    report, after = (json.loads(line) for line in out.strip().splitlines()[-2:])
    assert report.get("interrupted"), report
    latency = report["at"] - sent
    assert 0 < report["blocks"] < 2**31 - 1
    print(f"interrupted {latency:.3f} s after SIGINT, {report['blocks']} blocks done")
    want = [sum(j ^ b for j in range(50)) for b in range(3000)]  # each block's loop
    assert after == {"count": 3000, "out": want}


def test_a_raw_launch_in_slices_covers_every_block_once() -> None:
    """A 3-D launch of 336,000 threads (run in slices of blocks, each sized from the last
    one's time) writes every cell exactly as the oracle says: slice boundaries fall inside
    rows and planes of blocks."""
    from gompute_core.testing.kernels_raw import index3d_oracle, raw_index3d

    shape, block = (280, 60, 20), (4, 2, 1)
    out = np.full(shape[0] * shape[1] * shape[2], -1, np.int64)
    raw = g.RawKernel(raw_index3d, "cpu")
    grid = tuple(-(-s // b) for s, b in zip(shape, block, strict=True))
    raw.launch(grid, block, [out, *shape])
    np.testing.assert_array_equal(out, index3d_oracle(shape, block))


_REDUCE_THREADS = textwrap.dedent("""
    import json, sys
    import numpy as np
    import gompute_core as g

    def add(a, b):
        return a + b

    data = np.load(sys.argv[1])
    out = {}
    for name, spec in (("sum", g.sum("det_sum", g.f32)),
                       ("custom", g.reduce("det_add", g.f32, None, add, 0))):
        with g.Kernel(spec, "cpu") as k:
            out[name] = [int(k.run(data[:n]).view(np.uint32)) for n in (2**17, len(data))]
    print(json.dumps(out))
""")


def test_reduce_results_do_not_depend_on_the_thread_count(tmp_path: Path) -> None:
    """A float sum preset and a custom ``a + b`` over 2**17 and 2**18 + 12,345 f32 values
    (above the threading threshold, where the order of additions changes the sum) give
    the same bits with 1 and 2 numba threads; the custom combine's result is the
    documented fold, computed here in Python: ``n`` cut into
    ``min(ceil(n / REDUCE_CHUNK), REDUCE_PARTS)`` contiguous chunks, each folded left to
    right from the identity, the chunks' results folded left to right from it."""
    from gompute_cpu.kernels import REDUCE_CHUNK, REDUCE_PARTS

    rng = np.random.default_rng(5)
    data = (rng.standard_normal(2**18 + 12_345) * 10.0 ** rng.integers(-3, 4, 2**18 + 12_345)
            ).astype(np.float32)
    np.save(tmp_path / "data.npy", data)
    script = tmp_path / "reduce.py"
    script.write_text(_REDUCE_THREADS)
    results = []
    for threads in ("1", "2"):
        env = dict(os.environ, NUMBA_NUM_THREADS=threads, GOMPUTE_CACHE_DIR=str(tmp_path))
        done = subprocess.run([sys.executable, str(script), str(tmp_path / "data.npy")],
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert results[0] == results[1]
    for n, got in zip((2**17, len(data)), results[0]["custom"], strict=True):
        chunks = max(1, min(-(-n // REDUCE_CHUNK), REDUCE_PARTS))
        total = np.float32(0)
        for c in range(chunks):
            acc = np.float32(0)
            for x in data[c * n // chunks:(c + 1) * n // chunks]:
                acc = acc + x
            total = total + acc
        assert got == int(total.view(np.uint32)), n
    exact = [float(np.sum(data[:n], dtype=np.float64)) for n in (2**17, len(data))]
    for bits, want in zip(results[0]["sum"], exact, strict=True):
        assert abs(float(np.uint32(bits).view(np.float32)) - want) <= 1e-3 * abs(want) + 1


# ---------------------------------------------------------------------------- lazy compile

_UNTYPABLE = """

@njit(**_OPT)
def k_serial(data, n):
    data[0] = object()
"""
"""Appended to a rendered map module: Python that runs, a serial loop numba cannot type."""


def test_a_loop_numba_rejects_fails_at_its_first_launch_naming_the_source() -> None:
    """Opening compiles no loop (a process compiles only the loops it launches): the
    program loads, and the first launch that needs the serial loop raises
    ``CompileFailed`` naming the rendered file, as does the next one; the threaded loop,
    compiled by its own first launch, still runs."""
    from gompute_core.plugins import manager
    from gompute_core.plugins.records import Artifact
    from gompute_core.testing.kernels_tiers import TWICE

    compiler = manager.compiler("cpu")
    device = manager.open_device("cpu", 0)
    kir = TWICE.lower()
    source = compiler.render(kir, device.arch) + _UNTYPABLE
    built = compiler.build(source, kir, device.arch, ())
    program = device.program(Artifact(backend="cpu", image=built.image, format=built.format,
                                      entry=built.entry or kir.name, target=device.arch,
                                      source=source, digest=kir.digest(), kind=kir.kind), kir)
    data = np.ones(4, np.float32)
    for _ in range(2):
        with pytest.raises(g.CompileFailed, match=r"rendered source .*k[0-9a-f]+\.py"):
            program.launch(data, 4, None)
    program.entry.threshold = 0
    program.launch(data, 4, None)
    np.testing.assert_array_equal(data, [3, 3, 3, 3])

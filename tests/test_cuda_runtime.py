"""CUDA runtime on a real GPU: handles, streams, events, graphs, pinned async copies,
device faults, threads. Skipped (one line) where no NVIDIA driver/device is present."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import gompute_core as g
from gompute_core.plugins import manager

_avail = manager.probe("cuda") if any(r.name == "cuda" for r in manager.backends()) else None
pytestmark = pytest.mark.skipif(
    _avail is None or not _avail.available,
    reason=f"CUDA unavailable: {_avail.reason if _avail else 'gompute-cuda not installed'}")


@g.params
class Scale:
    scale: g.f32


def scale_relu(x, p: Scale):
    y = x * p.scale
    return y if y > 0 else 0


def add_one(x):
    return x + 1


SCALE = g.map("cuda_rt_scale_relu", g.f32, Scale, scale_relu)
ADD1 = g.map("cuda_rt_add_one", g.f32, None, add_one)
SUM = g.sum("cuda_rt_sum_f64", g.f64, None)


def oracle_scale(x: np.ndarray, s: float) -> np.ndarray:
    return np.array([scale_relu(v, Scale(scale=s)) for v in x], np.float32)


@pytest.mark.parametrize("n", [1, 3, 255, 257, 4096 + 5, 2**20 + 3])
def test_map_run_matches_oracle(n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    want = np.where(x * np.float32(2.5) > 0, x * np.float32(2.5), np.float32(0))
    with g.Kernel(SCALE, "cuda") as k:
        got = k.run(x.copy(), Scale(scale=2.5))
    np.testing.assert_array_equal(got, want)
    if n < 300:
        np.testing.assert_array_equal(got, oracle_scale(x, 2.5))


def test_map_unaligned_view_and_launch_path() -> None:
    x = np.arange(1001, dtype=np.float32)
    with g.Kernel(ADD1, "cuda") as k:
        buf = k.alloc(1001)
        buf.upload(x)
        sub = k.device.alloc(4 * 1000)
        sub.copy_from(buf, 4 * 1000)
        k.launch(buf, 1001, None)
        k.context.synchronize()
        out = np.empty_like(x)
        buf.download(out)
        np.testing.assert_array_equal(out, x + 1)
        buf.free()
        buf.free()
        sub.free()
        with pytest.raises(g.InvalidArgument, match="after free"):
            k.launch(buf, 1001, None)  # refused, never a launch on freed memory
        small = k.alloc(10)
        with pytest.raises(g.InvalidArgument, match="buf holds 10 elements, the launch needs 11"):
            k.launch(small, 11, None)  # O(1) bounds check: no write past the buffer
        small.free()


def test_reduce_sum_f64() -> None:
    x = np.random.default_rng(1).standard_normal(2**20 + 7)
    with g.Kernel(SUM, "cuda") as k:
        got = k.run(x)
    assert got == pytest.approx(float(np.sum(x)), rel=1e-12, abs=1e-9)


def test_transfer_bounds_are_checked_before_the_driver() -> None:
    dev = manager.open_device("cuda", 0)
    buf = dev.alloc(16)
    with pytest.raises(g.InvalidArgument):
        buf.upload(np.zeros(5, np.float32))
    with pytest.raises(g.InvalidArgument):
        buf.download_at(8, np.zeros(3, np.float32))
    buf.free()
    with pytest.raises(g.InvalidArgument):
        buf.upload(np.zeros(1, np.float32))


def test_streams_events_and_pinned_async_copies() -> None:
    dev = manager.open_device("cuda", 0)
    n = 1 << 20
    host = dev.pinned(n, np.float32)
    host[:] = np.arange(n, dtype=np.float32)
    back = dev.pinned(n, np.float32)
    stream = dev.create_stream()
    start, stop = dev.create_event(), dev.create_event()
    with g.Kernel(ADD1, "cuda") as k:
        k.stream = stream
        buf = k.alloc(n)
        start.record(stream)
        buf.upload_at_async(0, host, stream=stream)
        k.launch(buf, n, None)
        buf.download_at_async(0, back, stream=stream)
        stop.record(stream)
        stream.synchronize()
        assert stream.query() and stop.query()
        assert stop.elapsed_us(start) > 0
        np.testing.assert_array_equal(back, np.arange(n, dtype=np.float32) + 1)
        other = dev.create_stream()
        ev = dev.create_event(timing=False)
        ev.record(stream)
        other.wait_event(ev)
        buf.fill_async(0, stream=other)
        other.synchronize()
        buf.download(back)
        assert not back.any()
        buf.free()


def test_graph_capture_replay_and_update() -> None:
    dev = manager.open_device("cuda", 0)
    stream = dev.create_stream()
    with g.Kernel(ADD1, "cuda") as k:
        k.stream = stream
        a, b = k.alloc(1000), k.alloc(1000)
        a.upload(np.zeros(1000, np.float32))
        b.upload(np.full(1000, 100, np.float32))
        stream.begin_capture()
        for _ in range(10):
            k.launch(a, 1000, None)
        graph = stream.end_capture()
        exe = graph.instantiate()
        for _ in range(3):
            exe.launch(stream)
        stream.synchronize()
        out = np.empty(1000, np.float32)
        a.download(out)
        np.testing.assert_array_equal(out, np.full(1000, 30, np.float32))
        stream.begin_capture()
        for _ in range(10):
            k.launch(b, 1000, None)
        exe.update(stream.end_capture())
        exe.launch(stream)
        stream.synchronize()
        b.download(out)
        np.testing.assert_array_equal(out, np.full(1000, 110, np.float32))
        a.download(out)
        np.testing.assert_array_equal(out, np.full(1000, 30, np.float32))


def test_several_threads_at_once() -> None:
    errors: list[BaseException] = []
    results: dict[int, np.ndarray] = {}

    def work(i: int) -> None:
        try:
            with g.Kernel(SCALE, "cuda") as k:
                x = np.linspace(-1, 1, 10000 + i, dtype=np.float32)
                for _ in range(5):
                    y = k.run(x.copy(), Scale(scale=float(i)))
                results[i] = (x, y)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(1, 7)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i, (x, y) in results.items():
        s = np.float32(i)
        np.testing.assert_array_equal(y, np.where(x * s > 0, x * s, np.float32(0)))


def test_artifact_for_another_arch_is_module_load_failed() -> None:
    dev = manager.open_device("cuda", 0)
    other = "sm_80" if dev.arch != "sm_80" else "sm_90"
    art = g.compile(ADD1, "cuda", arch=other)
    with pytest.raises(g.ModuleLoadFailed) as info:
        dev.program(art, ADD1.lower())
    assert other in str(info.value) and dev.arch in str(info.value)


def test_fp64_ratio() -> None:
    assert 0 < manager.open_device("cuda", 0).fp64_ratio() <= 1


def test_device_fault_surfaces_at_synchronize(tmp_path) -> None:
    code = textwrap.dedent("""
        import numpy as np, gompute_core as g
        def add_one(x):
            return x + 1
        k = g.Kernel(g.map("fault_add_one", g.f32, None, add_one), "cuda")
        buf = k.alloc(16)
        buf.addr, buf.nbytes = 0x10, 1 << 30  # fault injection: an address nothing maps
        k.launch(buf, 1 << 20, None)
        try:
            k.context.synchronize()
        except g.SyncFailed as exc:
            print("SYNCFAILED", g.last_driver_error(), exc)
    """)
    script = tmp_path / "fault.py"
    script.write_text(code)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120)
    assert "SYNCFAILED ('cuda', 700)" in proc.stdout, proc.stdout + proc.stderr


def test_prebuilt_artifacts_load_without_compiling(tmp_path, monkeypatch) -> None:
    from gompute_core.backend import compiler
    from gompute_core.runtime.compile import write_artifact

    dev = manager.open_device("cuda", 0)
    spec = g.map("cuda_rt_prebuilt_add_one", g.f32, None, add_one)
    write_artifact(tmp_path, g.compile(spec, "cuda", arch=dev.arch), spec.lower())
    monkeypatch.setenv("GOMPUTE_ARTIFACT_DIR", str(tmp_path))

    def no_compiling(*args, **kwargs):
        raise AssertionError("compiled although a prebuilt artifact exists")

    monkeypatch.setattr(compiler, "compile_kernel", no_compiling)
    with g.Kernel(spec, "cuda") as k:
        out = k.run(np.arange(10, dtype=np.float32))
    np.testing.assert_array_equal(out, np.arange(1, 11, dtype=np.float32))

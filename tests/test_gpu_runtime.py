"""The CUDA and HIP runtimes on a real GPU, the same checks for both: map results,
transfer bounds, streams, events, graphs, pinned async copies, threads, wrong-arch
images, device faults. Each backend skips (one line, the probe's reason) where it has no
device; ``test_cuda_runtime.py`` and ``test_hip_runtime.py`` hold what only one of them
does.

No AMD GPU is available to this project: the HIP cases are written to run unchanged on
an AMD machine (ROCm >= 6 with the matching hip-python) or on the hip_on_cuda fixture
(``--hip-on-cuda``).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
from gpu_runtime_support import ADD1, SCALE, Scale, scale_relu, skip_unless_available

import gompute_core as g
from gompute_core.plugins import manager

BACKENDS = [pytest.param(b, marks=skip_unless_available(b)) for b in ("cuda", "hip")]

FAULT_REPORT = {"cuda": "SYNCFAILED ('cuda', 700)", "hip": "SYNCFAILED ('hip',"}
"""What a faulting kernel's ``SyncFailed`` prints: the backend and its driver's code."""


def another_arch(backend: str, arch: str) -> str:
    """An architecture of ``backend`` other than the device's ``arch``."""
    if backend == "cuda":
        return "sm_80" if arch != "sm_80" else "sm_90"
    return "gfx1030" if not arch.startswith("gfx1030") else "gfx90a"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [1, 3, 255, 257, 4096 + 5, 2**20 + 3])
def test_map_run_matches_oracle(backend: str, n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    want = np.array([scale_relu(v, Scale(scale=2.5)) for v in x[:300]], np.float32)
    with g.Kernel(SCALE, backend) as k:
        got = k.run(x.copy(), Scale(scale=2.5))
    np.testing.assert_array_equal(got[:300], want)
    np.testing.assert_array_equal(got, np.where(x * np.float32(2.5) > 0,
                                                x * np.float32(2.5), np.float32(0)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_transfer_bounds_are_checked_before_the_driver(backend: str) -> None:
    dev = manager.open_device(backend, 0)
    buf = dev.alloc(16)
    with pytest.raises(g.InvalidArgument):
        buf.upload(np.zeros(5, np.float32))
    with pytest.raises(g.InvalidArgument):
        buf.download_at(8, np.zeros(3, np.float32))
    with pytest.raises(g.InvalidArgument):
        buf.download_at(12, np.zeros(2, np.float32))
    buf.free()
    buf.free()
    with pytest.raises(g.InvalidArgument, match="after free"):
        buf.upload(np.zeros(1, np.float32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_streams_events_and_pinned_async_copies(backend: str) -> None:
    dev = manager.open_device(backend, 0)
    n = 1 << 20
    host = dev.pinned(n, np.float32)
    host[:] = np.arange(n, dtype=np.float32)
    back = dev.pinned(n, np.float32)
    stream = dev.create_stream()
    start, stop = dev.create_event(), dev.create_event()
    with g.Kernel(ADD1, backend) as k:
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
        copy = k.alloc(n)
        buf.upload(host)
        copy.copy_from(buf)
        copy.download(back)
        np.testing.assert_array_equal(back, host)
        buf.free()
        copy.free()


@pytest.mark.parametrize("backend", BACKENDS)
def test_graph_capture_replay_and_update(backend: str) -> None:
    dev = manager.open_device(backend, 0)
    stream = dev.create_stream()
    with g.Kernel(ADD1, backend) as k:
        k.stream = stream
        a, b = k.alloc(1000), k.alloc(1000)
        a.upload(np.zeros(1000, np.float32))
        b.upload(np.full(1000, 100, np.float32))
        try:
            stream.begin_capture()
        except g.Unsupported as exc:
            pytest.skip(f"graphs unsupported by this {backend} runtime: {exc}")
        for _ in range(10):
            k.launch(a, 1000, None)
        exe = stream.end_capture().instantiate()
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


@pytest.mark.parametrize("backend", BACKENDS)
def test_several_threads_at_once(backend: str) -> None:
    errors: list[BaseException] = []
    results: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def work(i: int) -> None:
        try:
            with g.Kernel(SCALE, backend) as k:
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


@pytest.mark.parametrize("backend", BACKENDS)
def test_artifact_for_another_arch_is_module_load_failed(backend: str) -> None:
    dev = manager.open_device(backend, 0)
    other = another_arch(backend, dev.arch)
    art = g.compile(ADD1, backend, arch=other)
    with pytest.raises(g.ModuleLoadFailed) as info:
        dev.program(art, ADD1.lower())
    assert other in str(info.value) and dev.arch in str(info.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_device_fault_surfaces_at_synchronize(backend: str, tmp_path) -> None:
    code = textwrap.dedent(f"""
        import numpy as np, gompute_core as g
        def add_one(x):
            return x + 1
        k = g.Kernel(g.map("fault_add_one", g.f32, None, add_one), {backend!r})
        buf = k.alloc(16)
        buf.addr, buf.nbytes = 0x10, 1 << 30  # fault injection: an address nothing maps
        k.launch(buf, 1 << 20, None)
        try:
            k.context.synchronize()
        except g.SyncFailed as exc:
            print("SYNCFAILED", g.last_driver_error(), exc)
    """)
    script = tmp_path / "fault.py"  # kernel functions need source: not ``python -c``
    script.write_text(code)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120)
    assert FAULT_REPORT[backend] in proc.stdout, proc.stdout + proc.stderr

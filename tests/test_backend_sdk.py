"""The backend SDK's contract, checked through the reference backend and the CPU backend.

Routing and isolation (a broken plugin beside working ones), the version refusal, the
core's buffer and launch checks, and ``Kernel.run``'s staged and pipelined paths
(device-style reference backend with small chunk sizes), from several threads at once.
Every result is compared with the kernel function run on NumPy scalars.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from pybackend import PyBackend

import gompute_core as g
from gompute_core.backend import PLUGIN_API_VERSION, BackendInfo, hookimpl
from gompute_core.errors import AllocFailed, BackendUnavailable, InvalidArgument
from gompute_core.kinds import run as run_module
from gompute_core.plugins import manager

_ids = itertools.count()


def uname(base: str = "sdk") -> str:
    return f"{base}_{next(_ids)}"


@g.params
class Affine:
    a: g.f32
    b: g.f32


def affine(x, p):
    return x * p.a + p.b


def mix(a, b, p):
    return a * p.a - b


def first_nonzero(a, b):
    """Associative, not commutative: the fold order matters."""
    return a if a != 0 else b


def index_mix(x, i, p):
    return x + g.f32(i % 5) * p.a


class BrokenEverywhere:
    """A plugin whose every hook but the description raises."""

    @hookimpl
    def gompute_backend_info(self) -> BackendInfo:
        return BackendInfo("broken", "0", 3, 999,
                           ("map", "map_to", "zip", "map_indexed", "reduce", "gather",
                            "scatter"))

    @hookimpl
    def gompute_probe(self) -> Any:
        raise RuntimeError("probe exploded")

    @hookimpl
    def gompute_compiler(self) -> Any:
        raise RuntimeError("compiler exploded")

    @hookimpl
    def gompute_device(self, ordinal: int) -> Any:
        raise RuntimeError("device exploded")


class OldStylePlugin:
    """A plugin written for API 1: broadcast hooks taking the backend name."""

    @hookimpl
    def gompute_backend_info(self) -> BackendInfo:
        return BackendInfo("oldie", "0", 1, 10, ("map",))

    @hookimpl
    def gompute_probe(self, backend: str) -> Any:
        raise AssertionError("an API 1 plugin must never be asked anything")


@pytest.fixture()
def registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(manager.ENV_BACKENDS, raising=False)
    monkeypatch.delenv("GOMPUTE_ARTIFACT_DIR", raising=False)
    with manager.isolated():
        yield


@pytest.fixture()
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pipeline from 4 KiB in chunks of at least 1 KiB, so small arrays take that path."""
    monkeypatch.setattr(run_module, "PIPELINE_MIN_BYTES", 4096)
    monkeypatch.setattr(run_module, "CHUNK_MIN_BYTES", 1024)
    monkeypatch.setattr(run_module, "CHUNK_ALIGN", 64)


# ---------------------------------------------------------------- routing and isolation
def test_a_broken_plugin_cannot_affect_the_others(registry: None) -> None:
    manager.register(BrokenEverywhere(), "broken")
    ref = PyBackend("pyref", priority=50)
    manager.register(ref)
    assert not manager.probe("broken").available
    assert "probe exploded" in manager.probe("broken").reason
    spec = g.map(uname(), g.f32, Affine, affine)
    data = np.linspace(-3, 3, 50, dtype=np.float32)
    p = Affine(a=2, b=-1)
    want = np.array([affine(x, p) for x in data], np.float32)
    with g.Kernel(spec, "pyref") as k:
        np.testing.assert_array_equal(k.run(data.copy(), p), want)
    assert ref.probes == 1 and ref.compiles == 1
    with pytest.raises(BackendUnavailable, match="probe exploded"):
        g.Kernel(spec, "broken")
    with pytest.raises(BackendUnavailable, match="gompute_compiler raised RuntimeError: "
                                                 "compiler exploded"):
        g.compile(spec, "broken", arch="any")
    auto = g.AutoKernel(spec)  # the broken one probes unavailable: skipped silently
    assert auto.selected() == "pyref"
    auto.close()


def test_a_plugin_of_another_api_version_is_refused_by_version(registry: None) -> None:
    rec = manager.register(OldStylePlugin(), "oldie")
    assert not rec.loaded
    assert ("written for plugin API 1 (its gompute_probe takes a 'backend' argument); this "
            f"gompute-core implements plugin API {PLUGIN_API_VERSION}: port it as plugins.md, "
            "section 11") in rec.error
    with pytest.raises(BackendUnavailable, match="written for plugin API 1"):
        g.Kernel(g.map(uname(), g.f32, None, lambda x: x), "oldie")
    manager.register(PyBackend("fine"))
    with g.Kernel(g.map(uname(), g.f32, None, lambda x: x + 1), "fine") as k:
        np.testing.assert_array_equal(k.run(np.zeros(3, np.float32)), [1, 1, 1])


def test_a_plugin_of_plugin_api_2_is_told_how_to_port(registry: None) -> None:
    """API 2's launchers took ``(grid, stream)`` and raw kernels had their own ``_load_raw``:
    a plugin still declaring 2 is refused naming both versions and the porting section, and
    a current plugin beside it keeps working."""
    rec = manager.register(PyBackend("two", api_version=2), "two")
    assert not rec.loaded
    assert rec.error == (f"the plugin implements plugin API version 2; this gompute-core "
                         f"expects API version {PLUGIN_API_VERSION} (port it as plugins.md, "
                         "section 11 'Porting a plugin from an earlier plugin API' describes)")
    assert PLUGIN_API_VERSION == 3
    manager.register(PyBackend("fine"))
    with g.Kernel(g.map(uname(), g.f32, None, lambda x: x + 1), "fine") as k:
        np.testing.assert_array_equal(k.run(np.zeros(3, np.float32)), [1, 1, 1])


def test_a_plugin_missing_a_hook_is_refused_naming_it(registry: None) -> None:
    class NoDevice(PyBackend):
        gompute_device = None  # type: ignore[assignment]

    rec = manager.register(NoDevice("nodev"))
    assert not rec.loaded and "does not implement gompute_device" in rec.error


# ---------------------------------------------------------------- buffers
@pytest.mark.parametrize("host_memory", [False, True])
def test_buffer_checks_are_the_cores(registry: None, host_memory: bool) -> None:
    manager.register(PyBackend("pyref", host_memory=host_memory, devices=2))
    dev = manager.open_device("pyref", 0)
    buf = dev.alloc(16)
    buf.upload(np.arange(4, dtype=np.int32))
    back = np.full(4, -1, np.int32)
    with pytest.raises(InvalidArgument, match="past the end"):
        buf.upload_at(12, np.arange(2, dtype=np.int32))
    with pytest.raises(InvalidArgument, match="read-only"):
        ro = np.zeros(4, np.int32)
        ro.flags.writeable = False
        buf.download(ro)
    with pytest.raises(InvalidArgument, match="does not belong"):
        other = manager.open_device("pyref", 1)
        buf.upload_at_async(0, back, stream=other.stream)
    with pytest.raises(InvalidArgument, match="value must be a byte"):
        buf.fill(256)
    buf.fill(0, nbytes=4, offset=4)
    buf.download(back)
    np.testing.assert_array_equal(back, [0, 0, 2, 3])
    copy = dev.alloc(16)
    copy.copy_from(buf, 8)
    copy.download_at(0, back[:2])
    np.testing.assert_array_equal(back[:2], [0, 0])
    buf.free()
    buf.free()
    with pytest.raises(InvalidArgument, match="after free"):
        buf.download(back)
    with pytest.raises(InvalidArgument, match="after free"):
        copy.copy_from(buf)
    with pytest.raises(InvalidArgument, match="nbytes must be a non-negative int"):
        dev.alloc(-1)


def test_an_impossible_allocation_is_alloc_failed() -> None:
    dev = manager.open_device("cpu", 0)
    with pytest.raises(AllocFailed):
        dev.alloc(2**62)
    with g.Kernel(g.map(uname(), g.f32, None, lambda x: x), "cpu") as k:
        with pytest.raises(AllocFailed):
            k.alloc(2**61)


# ---------------------------------------------------------------- launch checks
@pytest.mark.parametrize("host_memory", [False, True])
def test_launch_refuses_foreign_freed_and_short_buffers(registry: None,
                                                        host_memory: bool) -> None:
    manager.register(PyBackend("pyref", host_memory=host_memory, devices=2))
    spec = g.zip(uname(), g.f32, g.f32, g.f32, Affine, mix)
    p = Affine(a=1, b=0)
    with g.Kernel(spec, "pyref") as k:
        a, b, out = k.alloc(16, "A"), k.alloc(16, "B"), k.alloc(8)
        elsewhere = manager.open_device("pyref", 1).alloc(32)
        with pytest.raises(InvalidArgument, match="launch: b is a buffer of"):
            k.launch(a, elsewhere, out, 8, p)
        with pytest.raises(InvalidArgument, match="launch: out holds 8 elements"):
            k.launch(a, b, out, 9, p)
        with pytest.raises(InvalidArgument, match="launch: n: expected a non-negative int"):
            k.launch(a, b, out, 2.0, p)
        with pytest.raises(InvalidArgument, match="launch: a must be a pyref buffer"):
            k.launch(np.zeros(8, np.float32), b, out, 8, p)
        b.free()
        with pytest.raises(InvalidArgument, match="launch: b is a buffer used after free"):
            k.launch(a, b, out, 8, p)
    spec = g.sum(uname(), g.f32)
    with g.Kernel(spec, "pyref") as k:
        data, partials = k.alloc(100), k.alloc(4)
        for blocks in (0, 1025):
            with pytest.raises(InvalidArgument, match="blocks must be in 1..1024"):
                k.launch(data, 100, partials, blocks, None)


# ---------------------------------------------------------------- run: staged and pipelined
@pytest.mark.parametrize("pipelined", [False, True])
def test_run_paths_match_the_oracle(registry: None, request: pytest.FixtureRequest,
                                    pipelined: bool) -> None:
    if pipelined:
        request.getfixturevalue("small_chunks")
    manager.register(PyBackend("pyref", host_memory=False))
    rng = np.random.default_rng(7)
    n = 3001  # several chunks, the last one short
    p = Affine(a=1.5, b=-2)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    with np.errstate(all="ignore"):
        with g.Kernel(g.map(uname(), g.f32, Affine, affine), "pyref") as k:
            np.testing.assert_array_equal(k.run(x.copy(), p),
                                          np.array([affine(v, p) for v in x], np.float32))
            assert (k.program.entry.launches > 1) == pipelined
        with g.Kernel(g.zip(uname(), g.f32, g.f32, g.f32, Affine, mix), "pyref") as k:
            out = np.zeros(n, np.float32)
            np.testing.assert_array_equal(
                k.run(x, y, out, p), np.array([mix(a, b, p) for a, b in zip(x, y, strict=True)],
                                                    np.float32))
        with g.Kernel(g.map_indexed(uname(), g.f32, Affine, index_mix), "pyref") as k:
            np.testing.assert_array_equal(
                k.run(x.copy(), p),
                np.array([index_mix(v, np.uint64(i), p) for i, v in enumerate(x)], np.float32))
        ints = np.zeros(n, np.int64)
        ints[[2999, 1200, 2500]] = [4, 9, 3]
        with g.Kernel(g.reduce(uname(), g.i64, None, first_nonzero, 0), "pyref") as k:
            assert k.run(ints) == 9
        idx = rng.integers(-10, n + 10, n).astype(np.int32)
        with g.Kernel(g.gather(uname(), g.f32, g.i32), "pyref") as k:
            out = np.full(n, 7, np.float32)
            want = np.where((idx >= 0) & (idx < n), x[np.clip(idx, 0, n - 1)], 7)
            np.testing.assert_array_equal(k.run(x, idx, out), want)
        with g.Kernel(g.scatter(uname(), g.f32, g.i32), "pyref") as k:
            out = np.full(n, 7, np.float32)
            want = out.copy()
            for i, j in enumerate(idx):
                if 0 <= j < n:
                    want[j] = x[i]
            np.testing.assert_array_equal(k.run(x, idx, out), want)


@pytest.mark.parametrize("backend", ["device-style", "cpu"])
def test_run_on_one_handle_from_eight_threads(registry: None, small_chunks: None,
                                              backend: str) -> None:
    if backend == "cpu":
        with manager.isolated(discover=True):
            _eight_threads("cpu")
    else:
        manager.register(PyBackend("pyref", host_memory=False))
        _eight_threads("pyref")


def _eight_threads(backend: str) -> None:
    spec = g.map(uname(), g.f32, Affine, affine)
    errors: list[BaseException] = []
    results: dict[int, tuple[np.ndarray, np.ndarray, Affine]] = {}
    with g.Kernel(spec, backend) as k:
        def work(t: int) -> None:
            try:
                for r in range(5):
                    p = Affine(a=t + 1, b=r)
                    x = np.arange(2000 + 100 * t, dtype=np.float32) - t
                    results[t * 10 + r] = (x.copy(), k.run(x, p), p)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    assert not errors, errors
    assert len(results) == 40
    for x, y, p in results.values():
        np.testing.assert_array_equal(y, x * p.a + p.b)


# ---------------------------------------------------------------- inputs run refuses
def test_partial_overlap_is_refused_exact_aliasing_works() -> None:
    spec = g.map_to(uname(), g.f32, g.f32, None, lambda x: x * 2)
    x = np.arange(10, dtype=np.float32)
    with g.Kernel(spec, "cpu") as k:
        with pytest.raises(InvalidArgument, match="overlaps inp"):
            k.run(x[:-1], x[1:])
        np.testing.assert_array_equal(x, np.arange(10, dtype=np.float32))
        np.testing.assert_array_equal(k.run(x, x), np.arange(10, dtype=np.float32) * 2)
    zspec = g.zip(uname(), g.i32, g.i32, g.i32, None, lambda a, b: a + b)
    a = np.arange(10, dtype=np.int32)
    with g.Kernel(zspec, "cpu") as k:
        with pytest.raises(InvalidArgument, match="overlaps a"):
            k.run(a[:5], a[2:7], a[4:9])


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix itself
def test_masked_arrays_and_matrices_are_refused(tmp_path: Any) -> None:
    spec = g.map(uname(), g.f64, None, lambda x: x + 1)
    with g.Kernel(spec, "cpu") as k:
        masked = np.ma.masked_array(np.zeros(4), mask=[0, 1, 0, 0])
        with pytest.raises(InvalidArgument, match="masked arrays are not supported"):
            k.run(masked)
        with pytest.raises(InvalidArgument, match="np.matrix is not supported"):
            k.run(np.asmatrix(np.zeros((2, 2))))
        mm = np.memmap(tmp_path / "m.bin", dtype=np.float64, mode="w+", shape=(4,))
        np.testing.assert_array_equal(k.run(mm), np.ones(4))


@g.params
class Table:
    weights: g.Array[g.f32, 300]


def weigh(x, p):
    return x * p.weights[0]


def test_arguments_past_the_device_limit_are_refused_before_compiling(
        registry: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from pybackend import PackedPyDevice

    ref = PyBackend("pyref", host_memory=False)
    manager.register(ref)
    monkeypatch.setattr(PackedPyDevice, "max_argument_bytes", 1024)
    spec = g.map(uname(), g.f32, Table, weigh)
    with pytest.raises(InvalidArgument, match=r"take 1216 bytes .*at most 1024 bytes"):
        g.Kernel(spec, "pyref")
    assert ref.compiles == 0
    monkeypatch.setattr(PackedPyDevice, "max_argument_bytes", 4096)
    with g.Kernel(spec, "pyref") as k:
        p = Table(weights=[2.0] * 300)
        np.testing.assert_array_equal(k.run(np.ones(4, np.float32), p), [2, 2, 2, 2])


# ---------------------------------------------------------------- addresses
def test_address_map_gives_synthetic_addresses_and_finds_them_back(registry: None) -> None:
    """The SDK's ``AddressMap`` on the reference device's buffers: addresses never 0,
    aligned, with a gap after each buffer (one past the end is nobody's), an interior
    address found with its offset, a removed buffer (and a zero-byte one's single
    address) handled, an unknown address a typed ``LaunchFailed`` naming it."""
    from gompute_core.backend import AddressMap
    from gompute_core.errors import LaunchFailed

    manager.register(PyBackend("pyref"))
    dev = manager.open_device("pyref", 0)
    amap = AddressMap("pyref")
    sizes = [100, 0, 4096, 1]
    addrs = [amap.reserve(n) for n in sizes]
    assert addrs[0] == AddressMap.BASE and all(a % AddressMap.ALIGN == 0 for a in addrs)
    assert all(b >= a + max(n, 1) + AddressMap.ALIGN
               for a, b, n in zip(addrs, addrs[1:], sizes, strict=False))
    bufs = []
    for addr, n in zip(reversed(addrs), reversed(sizes), strict=True):  # any order
        buf = dev.alloc(n)
        buf.addr = addr  # the synthetic address a handle-based driver would give it
        amap.add(buf)
        bufs.insert(0, buf)
    assert amap.find(addrs[0] + 99) == (bufs[0], 99)
    assert amap.find(addrs[1]) == (bufs[1], 0)  # zero bytes: one address
    assert amap.find(addrs[2] + 4095) == (bufs[2], 4095)
    for bad in (0, addrs[0] - 1, addrs[0] + 100, addrs[1] + 1, addrs[3] + 1):
        with pytest.raises(LaunchFailed, match=f"pyref: no live buffer at address {bad:#x}"):
            amap.find(bad)
    amap.remove(bufs[2])
    amap.remove(bufs[2])  # twice: nothing
    with pytest.raises(LaunchFailed, match="no live buffer"):
        amap.find(addrs[2])
    assert amap.find(addrs[3]) == (bufs[3], 0)

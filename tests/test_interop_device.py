"""The core's device-memory interop path without a GPU: a reference device that declares
kDLCUDA (its "device memory" is host bytes) takes objects exposing the CUDA Array
Interface in ``launch`` and ``run`` in place; the checks, the per-object cache, the
device-ordinal check and the stream ordering calls are observed exactly."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from pybackend import PackedPyDevice, PyBackend, PyBuffer

import gompute_core as g
from gompute_core import dlpack
from gompute_core.errors import InvalidArgument
from gompute_core.kinds import foreign
from gompute_core.plugins import manager

_ids = itertools.count()
LEGACY = 1


def uname(base: str = "fakegpu") -> str:
    return f"{base}_{next(_ids)}"


def inc(x):
    return x + 1


def add(a, b):
    return a + b


_memory: dict[int, tuple[np.ndarray, int]] = {}
"""Foreign "device memory": address -> (host bytes, ordinal)."""


class FakeGpu(PackedPyDevice):
    """A device of DLPack type CUDA whose memory is host bytes; ordering calls recorded."""

    dlpack_device_type = dlpack.KDL_CUDA
    ordered_streams = frozenset({LEGACY})

    def __init__(self, backend: str, ordinal: int) -> None:
        super().__init__(backend, ordinal)
        self.orders: list[tuple[int, int]] = []
        self.pointer_queries = 0

    def _borrow(self, addr: int, nbytes: int) -> PyBuffer:
        buf = PyBuffer.__new__(PyBuffer)
        buf.mem = _memory[addr][0]
        PyBuffer.__mro__[1].__init__(buf, self, nbytes, addr, owned=False)
        return buf

    def resolve(self, addr: int, dtype: np.dtype) -> np.ndarray:
        for base, (mem, _) in _memory.items():
            if base <= addr < base + max(mem.nbytes, 1):
                rest = mem[addr - base:]
                return rest[:rest.size // dtype.itemsize * dtype.itemsize].view(dtype)
        return super().resolve(addr, dtype)

    def pointer_ordinal(self, addr: int) -> int | None:
        self.pointer_queries += 1
        for base, (mem, ordinal) in _memory.items():
            if base <= addr < base + max(mem.nbytes, 1):
                return ordinal
        return None

    def stream_handle(self, stream: Any) -> int:
        return 0x5000 + id(stream) % 0x1000 * 16

    def order_streams(self, waiter: int, signaller: int) -> None:
        self.orders.append((waiter, signaller))


class GpuArray:
    """A foreign device array: the CUDA Array Interface over registered "device memory"."""

    def __init__(self, values: Any, dtype: Any = np.float32, *, ordinal: int = 0,
                 stream: int | None = LEGACY, readonly: bool = False,
                 transposed: bool = False) -> None:
        self.host = np.ascontiguousarray(values, dtype=dtype)
        self.ordinal, self.stream, self.readonly = ordinal, stream, readonly
        self.strides = self.host.T.strides if transposed else None
        self.reads = 0
        _memory[self.host.ctypes.data] = (self.host.reshape(-1).view(np.uint8), ordinal)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        self.reads += 1
        return {"shape": self.host.shape, "typestr": self.host.dtype.str,
                "data": (self.host.ctypes.data, self.readonly), "version": 3,
                "strides": self.strides,
                "stream": self.stream}


@pytest.fixture
def fake() -> Any:
    with manager.isolated():
        plugin = PyBackend("fakegpu", host_memory=False, devices=2)
        plugin.device_class = FakeGpu
        manager.register(plugin)
        yield plugin
    _memory.clear()


def test_launch_works_in_place_and_caches_the_description(fake: Any) -> None:
    with g.Kernel(g.map(uname(), g.f32, None, inc), "fakegpu") as k:
        x = GpuArray(np.arange(8))
        for _ in range(3):
            k.launch(x, 8)
        np.testing.assert_array_equal(x.host, np.arange(8) + 3)
        assert k.context.orders == []  # legacy default stream: ordered for free
        assert x.reads == 3  # the protocol is read each launch (its stream is current)
        x.stream = 0x7000  # so a stream the producer switches to is honoured at once
        k.launch(x, 8)
        ours = k.context.stream_handle(k.stream)
        assert k.context.orders == [(ours, 0x7000), (0x7000, ours)]
        k.context.orders.clear()
        assert k.context.pointer_queries == 1  # the rest was checked once


def test_a_producer_stream_is_waited_for_and_then_waits_for_us(fake: Any) -> None:
    with g.Kernel(g.zip(uname(), g.f32, g.f32, g.f32, None, add), "fakegpu") as k:
        dev = k.context
        ours = dev.stream_handle(k.stream)
        a, b = GpuArray([1, 2], stream=0x7000), GpuArray([10, 20], stream=0x7100)
        out = GpuArray([0, 0], stream=0x7000)
        k.launch(a, b, out, 2)
        np.testing.assert_array_equal(out.host, [11, 22])
        before = [(ours, 0x7000), (ours, 0x7100), (ours, 0x7000)]
        after = [(0x7000, ours), (0x7100, ours)]  # once per foreign stream
        assert dev.orders == before + after
        dev.orders.clear()
        k.run(a, b, out)
        assert dev.orders == before + after
        dev.orders.clear()
        same = GpuArray([1, 1], stream=ours)  # our own stream: nothing to order
        k.launch(same, same, same, 2)
        assert dev.orders == [] and same.host.tolist() == [2, 2]


def test_a_changed_pointer_is_checked_again(fake: Any) -> None:
    with g.Kernel(g.map(uname(), g.f32, None, inc), "fakegpu") as k:
        x = GpuArray(np.zeros(4))
        k.launch(x, 4)
        x.host = np.zeros(2, np.float32)  # the object now describes other, smaller memory
        _memory[x.host.ctypes.data] = (x.host.view(np.uint8), 0)
        with pytest.raises(InvalidArgument, match="launch: buf holds 2 elements, the launch "
                                                  "needs 4"):
            k.launch(x, 4)
        x.host = np.zeros(4, np.float64)
        _memory[x.host.ctypes.data] = (x.host.view(np.uint8), 0)
        with pytest.raises(InvalidArgument, match="dtype float64 does not match"):
            k.launch(x, 4)


def test_checks_on_device_arrays(fake: Any) -> None:
    with g.Kernel(g.map(uname(), g.f32, None, inc), "fakegpu") as k:
        with pytest.raises(InvalidArgument, match="read-only but the kernel writes it"):
            k.launch(GpuArray(np.zeros(4), readonly=True), 4)
        with pytest.raises(InvalidArgument, match="read-only but the kernel writes it"):
            k.run(GpuArray(np.zeros(4), readonly=True))
        with pytest.raises(InvalidArgument, match="not C-contiguous"):
            k.launch(GpuArray(np.zeros((4, 4)), transposed=True), 4)
        with pytest.raises(InvalidArgument, match="the array is on cuda:1; this kernel runs on "
                                                  "cuda:0"):
            k.launch(GpuArray(np.zeros(4), ordinal=1), 4)
        with pytest.raises(InvalidArgument, match="data: the array is on cuda:1"):
            k.run(GpuArray(np.zeros(4), ordinal=1))
        with pytest.raises(InvalidArgument, match="stream 0 is disallowed"):
            k.launch(GpuArray(np.zeros(4), stream=0), 4)
        with pytest.raises(InvalidArgument, match="host memory; this kernel runs on"):
            k.launch(np.zeros(4, np.float32), 4)


def test_run_in_place_does_not_copy_and_reduce_reads_partials(fake: Any) -> None:
    with g.Kernel(g.map(uname(), g.f32, None, inc), "fakegpu") as k:
        x = GpuArray(np.arange(6).reshape(2, 3))
        allocs = k.context.allocs
        assert k.run(x) is x
        np.testing.assert_array_equal(x.host, np.arange(6).reshape(2, 3) + 1)
        assert k.context.allocs == allocs  # in place: no device buffer, no staging
    with g.Kernel(g.sum(uname(), g.i64), "fakegpu") as ks:
        assert ks.run(GpuArray(np.arange(1000), np.int64)) == 999 * 1000 // 2
    with g.Kernel(g.gather(uname(), g.f32, g.i32), "fakegpu") as kg:
        src, out = GpuArray(np.arange(5)), GpuArray(np.zeros(3))
        kg.run(src, GpuArray([4, 0, 9], np.int32), out)
        np.testing.assert_array_equal(out.host, [4, 0, 0])


def test_borrowed_device_buffer(fake: Any) -> None:
    x = GpuArray(np.arange(4))
    buf = g.as_buffer(x, "fakegpu")
    assert not buf.owned and buf.addr == x.host.ctypes.data and buf.dtype == np.float32
    out = np.empty(4, np.float32)
    buf.download(out)
    np.testing.assert_array_equal(out, np.arange(4))
    cai = buf.__cuda_array_interface__  # and out again, with our stream to order after
    assert cai["data"] == (buf.addr, False) and cai["typestr"] == "<f4"
    assert cai["stream"] == buf.device.stream_handle(buf.device.stream)
    buf.free()
    np.testing.assert_array_equal(x.host, np.arange(4))


def test_dlpack_export_orders_the_consumer_stream(fake: Any) -> None:
    dev = manager.open_device("fakegpu", 0)
    buf = dev.alloc(16)
    ours = dev.stream_handle(dev.stream)
    capsule = buf.__dlpack__(stream=0x9000)
    assert dev.orders == [(0x9000, ours)]
    t = dlpack.consume(capsule, "buf")
    assert t.device == (dlpack.KDL_CUDA, 0) and t.addr == buf.addr and t.shape == (16,)
    dev.orders.clear()
    buf.__dlpack__(stream=None)  # the legacy default stream: ordered already
    buf.__dlpack__(stream=-1)  # the consumer asks for no ordering
    assert dev.orders == []


class JaxLikeArray(GpuArray):
    """What JAX exposes: a CUDA Array Interface v2 (no stream: its data may still be
    pending) and DLPack, whose ``__dlpack__(stream=s)`` makes ``s`` wait for the data."""

    def __init__(self, values: Any, dtype: Any = np.float32, *, readonly: bool = False) -> None:
        super().__init__(values, dtype, readonly=readonly)
        self.dlpack_streams: list[Any] = []

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        cai = dict(super().__cuda_array_interface__, version=2)
        del cai["stream"]
        return cai

    def __dlpack_device__(self) -> tuple[int, int]:
        return dlpack.KDL_CUDA, self.ordinal

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None) -> Any:
        self.dlpack_streams.append(stream)
        return dlpack.export(self.host.ctypes.data, self.host.dtype, self.host.shape,
                             (dlpack.KDL_CUDA, self.ordinal), self,
                             versioned=max_version is not None)


def test_an_interface_before_v3_with_dlpack_is_taken_through_dlpack(fake: Any) -> None:
    with g.Kernel(g.map(uname(), g.f32, None, inc), "fakegpu") as k:
        ours = k.context.stream_handle(k.stream)
        foreign.PROBES.pop(JaxLikeArray, None)
        x = JaxLikeArray(np.arange(4))
        assert k.run(x) is x
        k.launch(x, 4)
        np.testing.assert_array_equal(x.host, np.arange(4) + 2)
        assert x.dlpack_streams == [ours, ours]  # the producer was told our stream each time
        assert x.reads == 3  # after the first call, its version only (the type is known)
        immutable = JaxLikeArray(np.zeros(2), readonly=True)  # read-only in the interface only
        with pytest.raises(InvalidArgument, match="data: the array is read-only"):
            k.run(immutable)
        with pytest.raises(InvalidArgument, match="launch: buf: the array is read-only"):
            k.launch(immutable, 2)
        v2 = GpuArray(np.zeros(3))  # v2 and no DLPack: the interface is all there is
        v2.stream = None
        k.run(v2)
        assert v2.host.tolist() == [1, 1, 1] and k.context.orders == []


def test_run_checks_a_device_array_once_and_again_when_it_changes(fake: Any) -> None:
    with g.Kernel(g.map(uname(), g.f32, None, inc), "fakegpu") as k:
        x = GpuArray(np.zeros(4))
        for _ in range(3):
            k.run(x)
        assert x.host.tolist() == [3, 3, 3, 3] and x.reads == 3
        assert k.context.pointer_queries == 1  # located once, for launch and run alike
        k.launch(x, 4)
        assert k.context.pointer_queries == 1
        x.host = np.zeros(4, np.float64)  # the object now describes other memory
        _memory[x.host.ctypes.data] = (x.host.view(np.uint8), 0)
        with pytest.raises(InvalidArgument, match="data: dtype float64 does not match"):
            k.run(x)


def test_a_cached_read_only_array_is_still_refused_where_written(fake: Any) -> None:
    with g.Kernel(g.zip(uname(), g.f32, g.f32, g.f32, None, add), "fakegpu") as k:
        a, out = GpuArray([1, 2], readonly=True), GpuArray([0, 0])
        k.launch(a, a, out, 2)  # read: fine, and cached
        with pytest.raises(InvalidArgument, match="launch: out: the array is read-only"):
            k.launch(a, a, a, 2)
        with pytest.raises(InvalidArgument, match="out: the array is read-only"):
            k.run(a, a, a)
        k.launch(a, a, out, 2)
        assert out.host.tolist() == [2, 4]


def test_the_description_goes_with_the_object(fake: Any) -> None:
    import gc

    with g.Kernel(g.map(uname(), g.f32, None, inc), "fakegpu") as k:
        x = GpuArray(np.zeros(4))
        k.launch(x, 4)
        ident = id(x)
        assert foreign._cache[ident].addr == x.host.ctypes.data
        del x
        gc.collect()
        assert ident not in foreign._cache



def sum_and_scaled_difference(a, b, s):
    return a + b, (a - b) * s


class FakeRawGpu(FakeGpu):
    """The fake GPU loading the elementwise kind's variants: each launch is recorded by
    entry name, and the contiguous one (``<name>_flat``: a, b, s, out0, out1, n) is done
    here from its packed arguments, as the kernel would, with the kernel function run on
    NumPy scalars."""

    launched: list[str] = []

    def _load(self, artifact: Any, kernel: Any, args: Any) -> Any:
        import struct

        def launcher(grid: Any, block: Any, shared_bytes: int, stream: Any) -> None:
            self.launched.append(kernel.name)
            if not kernel.name.endswith("_flat"):
                return
            raw, slots = bytes(args.data), args.layout.slots
            value = [struct.unpack_from("<" + sl.code, raw, sl.offset)[0] for sl in slots]
            f32 = np.dtype(np.float32)
            n = value[5]
            a, b, o1, o2 = (self.resolve(value[j], f32)[:n] for j in (0, 1, 3, 4))
            for i in range(n):
                o1[i], o2[i] = sum_and_scaled_difference(a[i], b[i], np.float32(value[2]))

        return launcher


@pytest.fixture
def fake_raw() -> Any:
    """A fake GPU declaring raw kernels, so that it takes elementwise kernels
    (:class:`FakeRawGpu`)."""
    from pybackend import FEATURES

    with manager.isolated():
        plugin = PyBackend("fakegpu", host_memory=False)
        plugin.device_class = FakeRawGpu
        plugin.features = FEATURES
        manager.register(plugin)
        yield plugin
    _memory.clear()
    FakeRawGpu.launched.clear()


def test_elementwise_launch_takes_contiguous_device_arrays_from_the_cache(
        fake_raw: Any) -> None:
    """CuPy-style arrays in an elementwise ``launch``: C-contiguous ones of one shape go the
    buffers' one-pass path through each object's cached description (located once, one
    borrowed buffer each for the handle's life), their producers' streams ordered around
    the launch as on the described path; a strided view or a broadcast is described and
    launched the general way (a strided variant), and shapes that do not broadcast are
    refused, never computed in memory order."""
    spec = g.elementwise(uname("ew"), sum_and_scaled_difference,
                         ins=(g.f32, g.f32, g.Scalar[g.f32]), outs=(g.f32, g.f32))
    with g.Kernel(spec, "fakegpu") as k:
        dev = k.context
        ours = dev.stream_handle(k.stream)
        borrowed: list[int] = []
        real_borrow = dev._borrow
        dev._borrow = lambda addr, nbytes: borrowed.append(addr) or real_borrow(addr, nbytes)
        x, y = np.arange(6, dtype=np.float32), np.arange(6, dtype=np.float32)[::-1] * 3
        a, b = GpuArray(x, stream=0x7000), GpuArray(y, stream=0x7100)
        o1, o2 = GpuArray(np.zeros(6), stream=0x7000), GpuArray(np.zeros(6), stream=LEGACY)
        for _ in range(3):
            k.launch(a, b, 0.5, out=(o1, o2))
        pairs = [sum_and_scaled_difference(p, q, np.float32(0.5))
                 for p, q in zip(x, y, strict=True)]
        np.testing.assert_array_equal(o1.host, np.array([p[0] for p in pairs], np.float32))
        np.testing.assert_array_equal(o2.host, np.array([p[1] for p in pairs], np.float32))
        assert FakeRawGpu.launched == [f"{spec.name}_flat"] * 3
        assert sorted(borrowed) == sorted(o.host.ctypes.data for o in (a, b, o1, o2))
        assert dev.pointer_queries == 4  # each array located once
        once = [(ours, 0x7000), (ours, 0x7100), (0x7000, ours), (0x7100, ours)]
        assert dev.orders == once * 3
        FakeRawGpu.launched.clear()
        m = np.arange(6, dtype=np.float32).reshape(2, 3)
        t = GpuArray(m.T, transposed=True)  # strides of a transposed view
        r1, r2 = GpuArray(np.zeros((3, 2))), GpuArray(np.zeros((3, 2)))
        k.launch(t, GpuArray(np.ones((3, 2))), 2.0, out=(r1, r2))
        row = GpuArray(np.array([1, 2, 3], np.float32))
        q1, q2 = GpuArray(np.zeros((2, 3))), GpuArray(np.zeros((2, 3)))
        k.launch(GpuArray(m), row, 1.0, out=(q1, q2))
        assert len(FakeRawGpu.launched) == 2
        assert not any(name.endswith("_flat") for name in FakeRawGpu.launched)
        with pytest.raises(InvalidArgument, match="could not be broadcast"):
            k.launch(GpuArray(m), GpuArray(m.T), 1.0, out=(q1, q2))
        with pytest.raises(InvalidArgument, match="read-only"):
            k.launch(a, b, 0.5, out=(GpuArray(np.zeros(6), readonly=True), o2))
        with pytest.raises(InvalidArgument, match="overlaps"):
            k.launch(a, b, 0.5, out=(o1, o1))

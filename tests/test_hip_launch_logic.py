"""The host side of the HIP backend, checked without an AMD GPU.

The real ``HipDevice`` (the core's generic GPU layer over the real ``HipDriver`` table)
runs on a recording stand-in for hip-python's module: the tests read the kernarg bytes
HIP would copy and compare them with the ELF-checked layout (tests/test_hip_compile.py)
and the params' packed bytes, and check what the device releases, and when.
"""

from __future__ import annotations

import ctypes
import gc
import itertools
import struct
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

pytest.importorskip("gompute_hip")

from gompute_hip.device import HipDevice  # noqa: E402
from gompute_hip.driver import HipDriver  # noqa: E402

import gompute_core as g  # noqa: E402
from gompute_core.abi import pack  # noqa: E402
from gompute_core.backend import Artifact, Buffer  # noqa: E402
from gompute_core.backend.gpu import GpuDevice  # noqa: E402
from gompute_core.kinds.program import KernelProgram  # noqa: E402
from gompute_core.testing.catalogue import entry  # noqa: E402

ATTRIBUTES = {"MultiprocessorCount": 4, "MaxThreadsPerMultiProcessor": 2048,
              "MaxBlockDimX": 1024, "MaxBlockDimY": 1024, "MaxBlockDimZ": 1024,
              "MaxThreadsPerBlock": 1024, "MaxSharedMemoryPerBlock": 65536,
              "SingleToDoublePrecisionPerfRatio": 2}


class Handle:
    """What hip-python answers for a pointer or handle: an object, its address by int()."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __int__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"<Handle {self.value:#x}>"


class RecordingHip:
    """hip-python's ``hip.hip`` as the backend calls it: every call succeeds and is
    recorded; handles are distinct ints; launches keep what HIP would have read."""

    HIP_LAUNCH_PARAM_BUFFER_POINTER = 1
    HIP_LAUNCH_PARAM_BUFFER_SIZE = 2
    HIP_LAUNCH_PARAM_END = 3
    hipEventDisableTiming = 2
    hipDeviceAttribute_t = SimpleNamespace(**{f"hipDeviceAttribute{k}": k for k in ATTRIBUTES})

    def __init__(self) -> None:
        self.launches: list[dict[str, Any]] = []
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self._handles = itertools.count(0x7000_0000_1000, 0x100)

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("hip"):
            raise AttributeError(name)
        makes = ("Malloc", "Create", "LoadData", "GetFunction", "EndCapture", "Instantiate")

        def call(*args: Any) -> tuple[Any, ...]:
            self.calls.append((name, args))
            if any(name.endswith(m) or name.startswith(f"hip{m}") for m in makes) or \
                    name.startswith("hipEventCreate") or name.startswith("hipHostMalloc"):
                return (0, Handle(next(self._handles)))
            return (0,)

        return call

    def named(self, name: str) -> list[tuple[Any, ...]]:
        """The arguments of every recorded call of ``name``."""
        return [args for n, args in self.calls if n == name]

    def hipGetDeviceCount(self) -> tuple[int, int]:
        return (0, 2)

    def hipDeviceProp_t(self) -> SimpleNamespace:
        return SimpleNamespace()

    def hipGetDeviceProperties(self, props: Any, ordinal: int) -> tuple[int]:
        props.name, props.gcnArchName = b"recording", b"gfx90a:sramecc+:xnack-"
        props.totalGlobalMem = 1 << 30
        return (0,)

    def hipDeviceGetAttribute(self, attribute: str, ordinal: int) -> tuple[int, int]:
        return (0, ATTRIBUTES[attribute])

    def hipModuleLaunchKernel(self, f: Any, gx: int, gy: int, gz: int, bx: int, by: int,
                              bz: int, shared: int, stream: Any, params: Any,
                              extra: int) -> tuple[int]:
        config = (ctypes.c_void_p * 5).from_address(extra)
        assert (config[0], config[2], config[4]) == (1, 2, 3)
        size = ctypes.c_size_t.from_address(config[3]).value
        blob = ctypes.string_at(config[1], size)
        self.launches.append(dict(f=f, grid=(gx, gy, gz), block=(bx, by, bz), shared=shared,
                                  stream=stream, params=params, kernargs=blob))
        return (0,)


def RecordingDevice(hip: RecordingHip, ordinal: int = 0) -> HipDevice:  # noqa: N802
    """The real HipDevice over the recording stand-in (no HIP library)."""
    device = HipDevice.__new__(HipDevice)
    GpuDevice.__init__(device, HipDriver(hip), ordinal)
    return device


class Buf(Buffer):
    """A buffer of the recording device at a given address (never copied to or from)."""

    def _copyin(self, offset: int, host: Any, stream: Any) -> None:
        """Never called."""

    _copyout = _copyin

    def _copy_device(self, offset: int, src: Any, src_offset: int, nbytes: int,
                     stream: Any) -> None:
        """Never called."""

    def _fill(self, offset: int, nbytes: int, value: int, stream: Any) -> None:
        """Never called."""


def _program(key: str) -> tuple[KernelProgram, RecordingHip, Any, RecordingDevice]:
    hip = RecordingHip()
    device = RecordingDevice(hip)
    spec = entry(key).spec()
    kir = spec.lower()
    artifact = Artifact("hip", b"image", "hsaco", spec.name, "gfx90a", "", digest=kir.digest())
    return device.program(artifact, kir), hip, spec, device


def test_map_launch_packs_pointer_count_and_params() -> None:
    prog, hip, spec, dev = _program("map_f32")
    p = entry("map_f32").params(a=np.float32(2), b=np.float32(-1))
    prog.launch(Buf(dev, 4000, 0x7000_0000_1000), 1000, p)
    (launch,) = hip.launches
    (function,) = [args for args in hip.named("hipModuleGetFunction")]
    assert function[1] == spec.name.encode()
    assert launch["stream"] is dev.stream.handle and int(launch["stream"]) == dev.stream.address
    assert launch["block"] == (spec.block_size, 1, 1)
    # 16-byte vectors of 4 f32, 4 deep per thread: one block covers block_size * 16
    assert launch["grid"] == (-(-1000 // (spec.block_size * 16)), 1, 1)
    blob = launch["kernargs"]
    assert blob[:16] == struct.pack("<QQ", 0x7000_0000_1000, 1000)
    assert blob[16:16 + 8] == pack(p)


def test_grid_is_capped_for_grid_stride_and_zero_skips() -> None:
    prog, hip, spec, dev = _program("map_f32")
    p = entry("map_f32").params(a=np.float32(1), b=np.float32(0))
    prog.launch(Buf(dev, 4 << 24, 0x1000), 1 << 24, p)
    # 4 full-occupancy waves: 4 CUs x 2048 threads / 256-thread blocks x 4 = 32 blocks per CU
    assert spec.block_size == 256 and hip.launches[-1]["grid"] == (4 * 32, 1, 1)
    prog.launch(Buf(dev, 4, 0x1000), 0, p)
    assert len(hip.launches) == 1


def test_reduce_takes_the_callers_block_count_and_checks_partials() -> None:
    prog, hip, spec, dev = _program("sum_f64")
    data, partials = Buf(dev, 8 * 5000, 0x2000), Buf(dev, 8 * 7, 0x3000)
    p = entry("sum_f64").params(a=1.0, b=2.0) if entry("sum_f64").params else None
    prog.launch(data, 5000, partials, 7, p)
    assert hip.launches[-1]["grid"] == (7, 1, 1)
    assert hip.launches[-1]["kernargs"][:24] == struct.pack("<QQQ", 0x2000, 5000, 0x3000)
    with pytest.raises(g.InvalidArgument, match="partials holds 7 elements, the launch needs 8"):
        prog.launch(data, 5000, partials, 8, p)
    with pytest.raises(g.InvalidArgument, match="data holds 5000 elements, the launch needs 5001"):
        prog.launch(data, 5001, partials, 7, p)
    with pytest.raises(g.InvalidArgument, match="1..1024"):
        prog.launch(data, 5000, partials, 0, p)
    launched = len(hip.launches)
    prog.launch(data, 0, partials, 0, p)  # reduce_blocks(0) == 0: a no-op, as on every backend
    assert len(hip.launches) == launched


def test_gather_packs_bound_and_rejects_foreign_buffers() -> None:
    prog, hip, _, dev = _program("gather_i32_u64")
    # disjoint spans (40, 80, 40 bytes): overlapping ones are refused as run refuses them
    prog.launch(Buf(dev, 40, 0x1000), Buf(dev, 80, 0x2000), Buf(dev, 40, 0x3000), 10, 10)
    assert hip.launches[-1]["kernargs"][:40] == struct.pack("<5Q", 0x1000, 0x2000, 0x3000, 10, 10)
    with pytest.raises(g.InvalidArgument, match="out: overlaps src"):
        prog.launch(Buf(dev, 40, 0x1000), Buf(dev, 80, 0x2000), Buf(dev, 40, 0x1020), 10, 10)
    with pytest.raises(TypeError):
        prog.launch(Buf(dev, 40, 0x1000), Buf(dev, 80, 0x2000), 10, 10)
    # HIP takes foreign arrays (DLPack): anything else is named with what it could be
    with pytest.raises(g.InvalidArgument, match="src: expected a NumPy array, a Gompute buffer"):
        prog.launch(object(), Buf(dev, 80, 0x2000), Buf(dev, 40, 0x3000), 10, 10)
    other = RecordingDevice(RecordingHip())
    with pytest.raises(g.InvalidArgument, match="src is a buffer of"):
        prog.launch(Buf(other, 40, 0x1000), Buf(dev, 80, 0x2000), Buf(dev, 40, 0x3000), 10, 10)
    freed = Buf(dev, 40, 0x3000)
    freed.free()
    with pytest.raises(g.InvalidArgument, match="out is a buffer used after free"):
        prog.launch(Buf(dev, 40, 0x1000), Buf(dev, 80, 0x2000), freed, 10, 10)


def test_params_of_another_layout_are_refused() -> None:
    prog, _, _, dev = _program("map_f32")
    with pytest.raises(g.InvalidArgument, match="expects params of layout"):
        prog.launch(Buf(dev, 40, 0x10), 10, entry("map_f64").params(a=1.0, b=2.0))


def test_the_buffer_size_is_the_arguments_exact_extent() -> None:
    """Not the metadata's segment size rounded to 4 bytes: on the HIP-on-CUDA fixture the
    rounded size made every kernel whose params end in a 1- or 2-byte field fail to launch
    (hipErrorLaunchOutOfResources); the buffer holds exactly this many meaningful bytes."""
    prog, hip, spec, dev = _program("map_i8")
    layout = prog.args.layout
    assert layout.size % 4, "the case needs params whose struct ends off a 4-byte boundary"
    prog.launch(Buf(dev, 64, 0x4000), 64, entry("map_i8").params(a=np.int8(3), b=np.int8(-2)))
    assert len(hip.launches[-1]["kernargs"]) == layout.size


def test_raw_launcher_passes_the_geometry_shared_bytes_and_packed_arguments() -> None:
    """A raw kernel's launcher hands HIP the grid, the block and the dynamic shared bytes
    as given, and the C-ABI bytes of its arguments (scalars at their own size and
    alignment, the params record by value)."""
    from gompute_core.abi import struct_type_of
    from gompute_core.backend import ArgBuffer, signature_layout
    from gompute_core.ir.nodes import PointerType, StructType

    @g.params
    class RawLaunchParams:
        a: g.f32
        flag: bool

    sig = (("x", PointerType(g.f32)), ("n", g.i32), ("h", g.f16),
           ("p", struct_type_of(RawLaunchParams)))
    assert isinstance(sig[3][1], StructType)
    hip = RecordingHip()
    device = RecordingDevice(hip)
    args = ArgBuffer(signature_layout(sig))
    artifact = Artifact("hip", b"raw image", "hsaco", "raw_rec", "gfx90a", "")
    launcher = device._load(artifact, None, args)  # type: ignore[arg-type]
    args.pack(0x7000_0000_0100, -5, 1.5)
    args.set_params(pack(RawLaunchParams(a=np.float32(2), flag=True)))
    launcher((3, 2, 1), (16, 8, 2), 512, device.stream)
    (launch,) = hip.launches
    assert hip.named("hipModuleGetFunction")[-1][1] == b"raw_rec"
    assert (launch["grid"], launch["block"], launch["shared"]) == ((3, 2, 1), (16, 8, 2), 512)
    want = struct.pack("<QiexxfB", 0x7000_0000_0100, -5, 1.5, 2.0, 1)
    assert launch["kernargs"] == want + b"\0" * (args.size - len(want))


def test_zero_bytes_get_a_real_allocation_and_free_is_once() -> None:
    hip = RecordingHip()
    dev = RecordingDevice(hip)
    buf = dev.alloc(0)
    assert hip.named("hipMalloc") == [(1,)] and buf.addr != 0
    buf.free()
    buf.free()
    assert hip.named("hipFree") == [(buf.addr,)]


def test_collected_objects_are_released_and_close_releases_the_rest() -> None:
    """Every native object goes once: when collected, or at the device's close (streams
    and events were released by nothing before; buffers leaked at close)."""
    hip = RecordingHip()
    dev = RecordingDevice(hip)
    default_stream = dev.stream.handle
    stream, event = dev.create_stream(), dev.create_event(timing=False)
    stream_handle, event_handle = stream.handle, event.handle
    assert hip.named("hipEventCreateWithFlags") == [(2,)]
    del stream, event
    gc.collect()
    assert hip.named("hipStreamDestroy") == [(stream_handle,)]
    assert hip.named("hipEventDestroy") == [(event_handle,)]
    kept, module = dev.alloc(64), dev.load_module(b"image")
    other = dev.create_stream()
    dev.close()
    assert hip.named("hipFree") == [(kept.addr,)]
    assert hip.named("hipStreamDestroy")[1:] == [(other.handle,), (default_stream,)]
    assert hip.named("hipModuleUnload") == [(module,)]
    assert dev.live_objects == 0
    kept.free()  # after close: nothing left to give back, nothing raised
    other.close()
    assert len(hip.named("hipFree")) == 1 and len(hip.named("hipStreamDestroy")) == 3


def test_a_copy_from_another_gpu_is_a_peer_copy() -> None:
    hip = RecordingHip()
    dev0, dev1 = RecordingDevice(hip, 0), RecordingDevice(hip, 1)
    src, dst = dev1.alloc(256), dev0.alloc(256)
    hip.calls.clear()
    dst.copy_from(src, 128)
    names = [name for name, _ in hip.calls]
    # the source's stream drains, dev0 may read dev1's memory, the copy runs on dev0's
    # stream, which is then waited for
    assert names == ["hipSetDevice", "hipStreamSynchronize", "hipSetDevice",
                     "hipDeviceEnablePeerAccess", "hipMemcpyPeerAsync", "hipStreamSynchronize"]
    assert hip.named("hipStreamSynchronize")[0] == (dev1.stream.handle,)
    assert hip.named("hipDeviceEnablePeerAccess") == [(1, 0)]
    assert hip.named("hipMemcpyPeerAsync") == [(dst.addr, 0, src.addr, 1, 128,
                                                dev0.stream.handle)]
    dst.copy_from(src, 128)
    assert len(hip.named("hipDeviceEnablePeerAccess")) == 1  # once per pair


def test_buffers_are_rocm_dlpack_memory_ordered_with_the_consumers_stream() -> None:
    hip = RecordingHip()
    dev = RecordingDevice(hip)
    buf = dev.alloc(16)
    buf.dtype = np.dtype(np.float32)
    assert buf.__dlpack_device__() == (10, 0)  # kDLROCM
    hip.calls.clear()
    buf.__dlpack__(stream=0x5000)  # the consumer's stream waits for ours
    assert hip.named("hipEventCreateWithFlags") == [(2,)]  # the ordering event, no timing
    assert [name for name, _ in hip.calls][-2:] == ["hipEventRecord", "hipStreamWaitEvent"]
    assert hip.named("hipEventRecord")[0][1] == dev.stream.address
    assert hip.named("hipStreamWaitEvent")[0][0] == 0x5000
    hip.calls.clear()
    buf.__dlpack__(stream=0)  # the null stream: already ordered with our blocking streams
    assert hip.named("hipStreamWaitEvent") == []


def test_buffers_export_the_cuda_array_interface_with_our_hip_stream() -> None:
    """CuPy on ROCm reads ``__cuda_array_interface__``: ours names the device's
    ``hipStream_t`` as the stream to wait on."""
    dev = RecordingDevice(RecordingHip())
    buf = dev.alloc(64)
    view = buf.typed(np.float32, (4, 4))
    cai = view.__cuda_array_interface__
    assert cai["data"] == (buf.addr, False) and cai["shape"] == (4, 4)
    assert cai["typestr"] == "<f4" and cai["stream"] == dev.stream.address

"""The host side of a HIP launch, checked without an AMD GPU.

The core's ``KernelProgram`` launches through the real ``HipDevice``/``HipLauncher``
onto a recording stand-in for hip-python's module; the test reads the kernarg bytes HIP
would copy and compares them with the ELF-checked layout (tests/test_hip_compile.py) and
the params' packed bytes.
"""

from __future__ import annotations

import ctypes
import struct
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

pytest.importorskip("gompute_hip")

from gompute_hip.runtime.device import HipDevice  # noqa: E402

import gompute_core as g  # noqa: E402
from gompute_core.abi import pack  # noqa: E402
from gompute_core.backend import Artifact, Buffer  # noqa: E402
from gompute_core.kinds.program import KernelProgram  # noqa: E402
from gompute_core.testing.catalogue import entry  # noqa: E402


class RecordingHip:
    """Answers hipModuleLaunchKernel with success and keeps what HIP would have read."""

    HIP_LAUNCH_PARAM_BUFFER_POINTER = 1
    HIP_LAUNCH_PARAM_BUFFER_SIZE = 2
    HIP_LAUNCH_PARAM_END = 3

    def __init__(self) -> None:
        self.launches: list[dict[str, Any]] = []

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


class RecordingDevice(HipDevice):
    """The real HipDevice launch path over the recording stand-in (no HIP library)."""

    def __init__(self, hip: RecordingHip) -> None:
        self.hip, self.ordinal, self.name, self.arch = hip, 0, "recording", "gfx90a"
        self.multiprocessors = 4
        self._stream = SimpleNamespace(handle="stream0", device=self)

    def make_current(self) -> None:
        """Nothing to select."""

    def load_module(self, image: bytes) -> Any:
        return SimpleNamespace(function=lambda name: f"fn:{name}")


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
    artifact = Artifact("hip", b"", "hsaco", spec.name, "gfx90a", "", digest=kir.digest())
    return device.program(artifact, kir), hip, spec, device


def test_map_launch_packs_pointer_count_and_params() -> None:
    prog, hip, spec, dev = _program("map_f32")
    p = entry("map_f32").params(a=np.float32(2), b=np.float32(-1))
    prog.launch(Buf(dev, 4000, 0x7000_0000_1000), 1000, p)
    (launch,) = hip.launches
    assert launch["f"] == f"fn:{spec.name}" and launch["stream"] == "stream0"
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
    assert hip.launches[-1]["grid"] == (4 * 32, 1, 1)
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
    prog.launch(Buf(dev, 40, 0x100), Buf(dev, 80, 0x200), Buf(dev, 40, 0x300), 10, 10)
    assert hip.launches[-1]["kernargs"][:40] == struct.pack("<5Q", 0x100, 0x200, 0x300, 10, 10)
    with pytest.raises(g.InvalidArgument, match="out: overlaps src"):
        prog.launch(Buf(dev, 40, 0x100), Buf(dev, 80, 0x200), Buf(dev, 40, 0x120), 10, 10)
    with pytest.raises(TypeError):
        prog.launch(Buf(dev, 40, 0x10), Buf(dev, 80, 0x20), 10, 10)
    with pytest.raises(g.InvalidArgument, match="must be a hip buffer"):
        prog.launch(object(), Buf(dev, 80, 0x20), Buf(dev, 40, 0x30), 10, 10)
    other = RecordingDevice(RecordingHip())
    with pytest.raises(g.InvalidArgument, match="src is a buffer of"):
        prog.launch(Buf(other, 40, 0x10), Buf(dev, 80, 0x20), Buf(dev, 40, 0x30), 10, 10)
    freed = Buf(dev, 40, 0x30)
    freed.free()
    with pytest.raises(g.InvalidArgument, match="out is a buffer used after free"):
        prog.launch(Buf(dev, 40, 0x10), Buf(dev, 80, 0x20), freed, 10, 10)


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
    from gompute_core.backend import RawArgBuffer, raw_arg_layout
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
    args = RawArgBuffer(raw_arg_layout(sig))
    artifact = Artifact("hip", b"", "hsaco", "raw_rec", "gfx90a", "")
    launcher = device._load_raw(artifact, None, args)  # type: ignore[arg-type]
    args.pack(0x7000_0000_0100, -5, 1.5)
    args.set_params(pack(RawLaunchParams(a=np.float32(2), flag=True)))
    launcher((3, 2, 1), (16, 8, 2), 512, device.stream)
    (launch,) = hip.launches
    assert launch["f"] == "fn:raw_rec"
    assert (launch["grid"], launch["block"], launch["shared"]) == ((3, 2, 1), (16, 8, 2), 512)
    want = struct.pack("<QiexxfB", 0x7000_0000_0100, -5, 1.5, 2.0, 1)
    assert launch["kernargs"] == want + b"\0" * (args.size - len(want))

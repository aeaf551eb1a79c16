"""The host side of a HIP launch, checked without an AMD GPU.

No AMD GPU is available to this project, so the only HIP-specific code that never
executes here is what sits between ``Program.launch`` and ``hipModuleLaunchKernel``. A
recording stand-in for hip-python's module receives the launch; the test reads the
kernarg bytes HIP would copy and compares them with the ELF-checked layout
(tests/test_hip_compile.py) and the params' packed bytes.
"""

from __future__ import annotations

import ctypes
import struct
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

pytest.importorskip("gompute_hip")

from gompute_hip.runtime.program import HipProgram  # noqa: E402

import gompute_core as g  # noqa: E402
from gompute_core.abi import pack  # noqa: E402
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


class Buf:
    def __init__(self, addr: int, nbytes: int) -> None:
        self.addr, self.nbytes = addr, nbytes

    def device_addr(self) -> int:
        return self.addr


def _program(key: str) -> tuple[HipProgram, RecordingHip, Any]:
    hip = RecordingHip()
    device = SimpleNamespace(hip=hip, stream=SimpleNamespace(handle="stream0"),
                             multiprocessors=4)
    module = SimpleNamespace(function=lambda name: f"fn:{name}")
    spec = entry(key).spec()
    return HipProgram(device, module, spec.lower(), spec.name), hip, spec  # type: ignore[arg-type]


def test_map_launch_packs_pointer_count_and_params() -> None:
    prog, hip, spec = _program("map_f32")
    p = entry("map_f32").params(a=np.float32(2), b=np.float32(-1))
    prog.launch(Buf(0x7000_0000_1000, 4000), 1000, p)
    (launch,) = hip.launches
    assert launch["f"] == f"fn:{spec.name}" and launch["stream"] == "stream0"
    assert launch["block"] == (spec.block_size, 1, 1)
    assert launch["grid"] == (-(-1000 // spec.block_size), 1, 1)
    blob = launch["kernargs"]
    assert blob[:16] == struct.pack("<QQ", 0x7000_0000_1000, 1000)
    assert blob[16:16 + 8] == pack(p)


def test_grid_is_capped_for_grid_stride_and_zero_skips() -> None:
    prog, hip, spec = _program("map_f32")
    p = entry("map_f32").params(a=np.float32(1), b=np.float32(0))
    prog.launch(Buf(0x1000, 4 << 24), 1 << 24, p)
    assert hip.launches[-1]["grid"] == (4 * 32, 1, 1)
    prog.launch(Buf(0x1000, 4), 0, p)
    assert len(hip.launches) == 1


def test_reduce_takes_the_callers_block_count_and_checks_partials() -> None:
    prog, hip, spec = _program("sum_f64")
    data, partials = Buf(0x2000, 8 * 5000), Buf(0x3000, 8 * 7)
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


def test_gather_packs_bound_and_rejects_wrong_arity() -> None:
    prog, hip, _ = _program("gather_i32_u64")
    prog.launch(Buf(0x10, 40), Buf(0x20, 80), Buf(0x30, 40), 10, 10)
    assert hip.launches[-1]["kernargs"][:40] == struct.pack("<5Q", 0x10, 0x20, 0x30, 10, 10)
    with pytest.raises(g.InvalidArgument, match="takes 5 arguments"):
        prog.launch(Buf(0x10, 40), Buf(0x20, 80), 10, 10)
    with pytest.raises(g.InvalidArgument, match="must be a HIP buffer"):
        prog.launch(object(), Buf(0x20, 80), Buf(0x30, 40), 10, 10)


def test_params_of_another_layout_are_refused() -> None:
    prog, _, _ = _program("map_f32")
    with pytest.raises(g.InvalidArgument, match="expects params of layout"):
        prog.launch(Buf(0x10, 40), 10, entry("map_f64").params(a=1.0, b=2.0))

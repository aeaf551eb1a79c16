"""The CPU device: host memory as device memory, immediate streams and events, loading.

Buffers are NumPy ``uint8`` arrays; every operation is done when its call
returns, so a stream never has pending work and ``synchronize`` waits for
nothing; events time by the host clock at ``record`` (the core's
:class:`~gompute_core.backend.ImmediateEvent`); graph capture is
``Unsupported`` (capability ``"graphs"``). The checks (bounds, freed buffers,
host arrays) are the core's (:class:`gompute_core.backend.Buffer`); this
module only moves bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gompute_core.backend import (
    ArgBuffer,
    Artifact,
    Buffer,
    Device,
    ImmediateEvent,
    ImmediateStream,
    Stream,
)
from gompute_core.errors import ModuleLoadFailed
from gompute_core.ir.kernel import RAW, KernelIR

from .params import HostParams
from .program import CpuEntry, RawEntry


class CpuBuffer(Buffer):
    """``nbytes`` bytes of host memory standing in for device memory."""

    __slots__ = ("_mem", "_views")

    def __init__(self, device: CpuDevice, mem: np.ndarray, *, owned: bool = True) -> None:
        super().__init__(device, mem.nbytes, int(mem.ctypes.data), owned=owned)
        self._mem: np.ndarray | None = mem
        self._views: dict[np.dtype, np.ndarray] = {}

    def view(self, dtype: np.dtype) -> np.ndarray:
        """The whole buffer as an array of ``dtype`` (cached; trailing bytes dropped)."""
        v = self._views.get(dtype)
        if v is None:
            self._live("view")
            count = self.nbytes // dtype.itemsize
            v = self._views[dtype] = self._mem[:count * dtype.itemsize].view(dtype)  # type: ignore[index]
        return v

    def _copyin(self, offset: int, host: np.ndarray, stream: Stream | None) -> None:
        self._mem[offset:offset + host.size] = host  # type: ignore[index]

    def _copyout(self, offset: int, host: np.ndarray, stream: Stream | None) -> None:
        host[:] = self._mem[offset:offset + host.size]  # type: ignore[index]

    def _copy_device(self, offset: int, src: Buffer, src_offset: int, nbytes: int,
                     stream: Stream | None) -> None:
        data = src._mem[src_offset:src_offset + nbytes]  # type: ignore[attr-defined]
        self._mem[offset:offset + nbytes] = data  # type: ignore[index]

    def _fill(self, offset: int, nbytes: int, value: int, stream: Stream | None) -> None:
        self._mem[offset:offset + nbytes] = value  # type: ignore[index]

    def _release(self) -> None:
        self._mem = None
        self._views.clear()


class CpuDevice(Device):
    """The host CPU as a Gompute device (ordinal 0)."""

    backend = "cpu"
    capabilities = frozenset({"host_memory", "streams", "events", "f64_atomics", "serial_threads"})
    packs_arguments = False
    ordinal = 0
    dlpack_device_type = 1  # kDLCPU: buffers export DLPack and the array interface

    def __init__(self, arch: str, name: str) -> None:
        self.arch, self.name = arch, name
        self._stream = ImmediateStream(self)

    def _alloc(self, nbytes: int) -> CpuBuffer:
        return CpuBuffer(self, np.zeros(nbytes, np.uint8))

    def _load(self, artifact: Artifact, kernel: KernelIR,
              args: ArgBuffer) -> Callable[[tuple[int, int, int], tuple[int, int, int], int,
                                            Stream], None]:
        if artifact.format != "python":
            raise ModuleLoadFailed(f"the CPU backend loads 'python' artifacts, not "
                                   f"{artifact.format!r}")
        entry = RawEntry if kernel.kind == RAW else CpuEntry
        return entry(kernel, artifact.image.decode(), args)

    def host_array(self, buf: CpuBuffer, dtype: np.dtype) -> np.ndarray:
        """``buf``'s memory as an array of ``dtype`` (what the compiled loops take)."""
        return buf.view(dtype)

    def borrow(self, host: np.ndarray) -> CpuBuffer:
        """A buffer viewing ``host``'s memory (C-contiguous), freed only by its owner."""
        return CpuBuffer(self, host.reshape(-1).view(np.uint8), owned=False)

    def params_converter(self, kernel: KernelIR) -> Callable[[bytes], Any]:
        """Params bytes to the leaf arguments the numba loops take."""
        return HostParams(kernel).from_bytes

    def run_reduce_blocks(self, entry: CpuEntry, count: int, block_size: int) -> int:
        """One partial: the compiled fold cuts its input into chunks fixed by the count
        alone and folds them (in parallel above the threading threshold) itself
        (:mod:`.kernels`), so the result never depends on the number of threads."""
        return 1

    def synchronize(self) -> None:
        """Nothing is ever pending on the CPU."""

    @property
    def stream(self) -> ImmediateStream:
        """The (immediate) default stream."""
        return self._stream

    def create_stream(self) -> ImmediateStream:
        """A stream whose work is done when each call returns."""
        return ImmediateStream(self)

    def create_event(self, timing: bool = True) -> ImmediateEvent:
        """An event that times by the host clock at ``record`` (work before it is done)."""
        return ImmediateEvent(self, timing)

"""GPU buffers: the SDK's five buffer primitives over the driver table, written once.

Every check (bounds, freed buffers, host arrays, streams) is the core's
(:class:`gompute_core.backend.Buffer`). A buffer is freed once: by ``free()``, by
the garbage collection of the object, or by the device's ``close()``. Zero bytes
still get a real allocation (one byte), so every owned buffer has a distinct, non-null
address. A device copy from another GPU's buffer is a peer copy, after the source
device's stream is drained, with peer access enabled once per pair where the GPUs
allow it. A borrowed buffer views another library's memory and never frees it.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import numpy as np

from ..buffer import Buffer

if TYPE_CHECKING:
    from .device import GpuDevice
    from .objects import GpuStream


def _native(stream: GpuStream | None) -> object:
    return None if stream is None else stream.handle


class GpuBuffer(Buffer):
    """``nbytes`` bytes of device memory on one GPU; ``addr`` is the device address."""

    __slots__ = ("_fin",)
    device: GpuDevice

    def __init__(self, device: GpuDevice, nbytes: int, addr: int, *, owned: bool) -> None:
        super().__init__(device, nbytes, addr, owned=owned)
        self._fin: weakref.finalize | None = None

    @classmethod
    def allocate(cls, device: GpuDevice, nbytes: int) -> GpuBuffer:
        """A new owned buffer (``AllocFailed`` when the driver refuses)."""
        device.enter()
        addr = int(device.driver.mem_alloc(max(nbytes, 1)))  # a binding may answer a pointer object
        buf = cls(device, nbytes, addr, owned=True)
        buf._fin = device.track(buf, device.driver.mem_free, addr)
        return buf

    def _copyin(self, offset: int, host: np.ndarray, stream: GpuStream | None) -> None:
        self.device.enter()
        self.device.driver.copy_htod(self.addr + offset, host.ctypes.data, host.size,
                                     _native(stream))

    def _copyout(self, offset: int, host: np.ndarray, stream: GpuStream | None) -> None:
        self.device.enter()
        self.device.driver.copy_dtoh(host.ctypes.data, self.addr + offset, host.size,
                                     _native(stream))

    def _copy_device(self, offset: int, src: Buffer, src_offset: int, nbytes: int,
                     stream: GpuStream | None) -> None:
        device = self.device
        if src.device is device:
            device.enter()
            device.driver.copy_dtod(self.addr + offset, src.addr + src_offset, nbytes,
                                    _native(stream))
            return
        source: GpuDevice = src.device  # type: ignore[assignment]
        source.stream.synchronize()  # the source's pending writes land first
        device.enable_peer(source)
        s = device.stream if stream is None else stream
        device.enter()
        device.driver.copy_peer(self.addr + offset, device.native_context, src.addr + src_offset,
                                source.native_context, nbytes, s.handle)
        if stream is None:
            s.synchronize()

    def _fill(self, offset: int, nbytes: int, value: int, stream: GpuStream | None) -> None:
        self.device.enter()
        self.device.driver.memset_d8(self.addr + offset, value, nbytes, _native(stream))

    def _release(self) -> None:
        if self._fin is not None:
            self._fin()

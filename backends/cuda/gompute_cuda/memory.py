"""Device buffers (the SDK's five primitives over pycuda) and pinned host memory.

Every check (bounds, freed buffers, host arrays, streams) is the core's
(:class:`gompute_core.backend.Buffer`); driver failures here are
``CopyFailed``/``AllocFailed`` with the ``CUresult`` recorded. A device copy
from another GPU's buffer is a peer copy (``cuMemcpyPeerAsync``, with peer
access enabled once per pair where the GPUs allow it), after the source
device's stream is drained. A borrowed buffer (:meth:`CudaBuffer.borrowed`)
views another library's memory and never frees it.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any

import numpy as np

from gompute_core.backend import Buffer, pinned_array
from gompute_core.errors import AllocFailed, CopyFailed

from .driver import check, cuda, guarded, libcuda

if TYPE_CHECKING:
    from .device import CudaDevice
    from .stream import CudaStream


class CudaBuffer(Buffer):
    """``nbytes`` bytes of device memory (``cuMemAlloc``); ``addr`` is the device address."""

    __slots__ = ("_alloc",)

    def __init__(self, device: CudaDevice, nbytes: int) -> None:
        with guarded(AllocFailed, f"cuda: allocating {nbytes} bytes on device {device.ordinal}",
                     device):
            self._alloc = cuda().mem_alloc(max(nbytes, 1))
        super().__init__(device, nbytes, int(self._alloc))
        device.track(self)

    @classmethod
    def borrowed(cls, device: CudaDevice, addr: int, nbytes: int) -> CudaBuffer:
        """A buffer over ``nbytes`` of device memory at ``addr`` that someone else owns."""
        buf = cls.__new__(cls)
        buf._alloc = None
        Buffer.__init__(buf, device, nbytes, addr, owned=False)
        return buf

    def _copyin(self, offset: int, host: np.ndarray, stream: CudaStream | None) -> None:
        with guarded(CopyFailed, f"cuda: upload of {host.size} bytes", self.device):
            if stream is None:
                cuda().memcpy_htod(self.addr + offset, host)
            else:
                cuda().memcpy_htod_async(self.addr + offset, host, stream.handle_obj)

    def _copyout(self, offset: int, host: np.ndarray, stream: CudaStream | None) -> None:
        with guarded(CopyFailed, f"cuda: download of {host.size} bytes", self.device):
            if stream is None:
                cuda().memcpy_dtoh(host, self.addr + offset)
            else:
                cuda().memcpy_dtoh_async(host, self.addr + offset, stream.handle_obj)

    def _copy_device(self, offset: int, src: Buffer, src_offset: int, nbytes: int,
                     stream: CudaStream | None) -> None:
        s = stream if stream is not None else self.device.stream
        if src.device is not self.device:
            self._copy_peer(offset, src, src_offset, nbytes, s)
        else:
            with guarded(CopyFailed, f"cuda: device copy of {nbytes} bytes", self.device):
                cuda().memcpy_dtod_async(self.addr + offset, src.addr + src_offset, nbytes,
                                         s.handle_obj)
        if stream is None:
            s.synchronize()

    def _copy_peer(self, offset: int, src: Buffer, src_offset: int, nbytes: int,
                   s: CudaStream) -> None:
        source: CudaDevice = src.device  # type: ignore[assignment]
        source.stream.synchronize()  # the source's pending writes land first
        dst_ctx, src_ctx = self.device.context_handle(), source.context_handle()
        self.device.enable_peer(source)
        with guarded(CopyFailed, f"cuda: peer copy of {nbytes} bytes from device "
                                 f"{source.ordinal} to {self.device.ordinal}", self.device):
            dst, at = ctypes.c_uint64(self.addr + offset), ctypes.c_uint64(src.addr + src_offset)
            check(libcuda().cuMemcpyPeerAsync(dst, dst_ctx, at, src_ctx, ctypes.c_size_t(nbytes),
                                              s.cptr),
                CopyFailed, f"cuda: cuMemcpyPeerAsync from device {source.ordinal} to "
                            f"{self.device.ordinal}")

    def _fill(self, offset: int, nbytes: int, value: int, stream: CudaStream | None) -> None:
        s = stream if stream is not None else self.device.stream
        with guarded(CopyFailed, f"cuda: fill of {nbytes} bytes", self.device):
            cuda().memset_d8_async(self.addr + offset, value, nbytes, s.handle_obj)
            if stream is None:
                s.handle_obj.synchronize()

    def _release(self) -> None:
        alloc, self._alloc = self._alloc, None
        with guarded(CopyFailed, "cuda: free", self.device):
            alloc.free()


CU_MEMHOSTALLOC_PORTABLE = 1


def pinned_empty(device: CudaDevice, shape: Any, dtype: Any) -> np.ndarray:
    """A page-locked host array (fast, truly asynchronous transfers), allocated with
    ``cuMemHostAlloc`` and freed with the device's context pushed, from whatever thread
    drops the last reference (pycuda's own page-locked arrays cannot be freed from a
    thread other than the one that allocated them)."""

    def alloc(nbytes: int) -> int:
        ptr = ctypes.c_void_p()
        with guarded(AllocFailed, "cuda: allocating pinned host memory", device):
            check(libcuda().cuMemHostAlloc(ctypes.byref(ptr), ctypes.c_size_t(nbytes),
                                           CU_MEMHOSTALLOC_PORTABLE),
                  AllocFailed, f"cuda: cuMemHostAlloc({nbytes})")
        return int(ptr.value or 0)

    def free(addr: int) -> None:
        if device.closed:
            return  # the context and everything allocated in it are gone
        pop = device.enter()
        try:
            libcuda().cuMemFreeHost(ctypes.c_void_p(addr))
        finally:
            if pop:
                cuda().Context.pop()

    return pinned_array(alloc, free, shape, dtype)

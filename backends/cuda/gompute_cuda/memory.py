"""Device buffers and pinned host memory.

Transfers are in BYTES and bounds-checked before any driver call
(``InvalidArgument``); driver failures are ``CopyFailed``/``AllocFailed``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gompute_core.errors import AllocFailed, CopyFailed, InvalidArgument
from gompute_core.runtime.transfer import device_span, host_span

from .driver import cuda, guarded

if TYPE_CHECKING:
    from .device import CudaDevice
    from .stream import CudaStream


class CudaBuffer:
    """``nbytes`` bytes of device memory (``cuMemAlloc``); ``ptr`` is the device address."""

    __slots__ = ("nbytes", "ptr", "_alloc", "_device", "__weakref__")

    def __init__(self, device: CudaDevice, nbytes: int) -> None:
        with guarded(AllocFailed, f"cuda: allocating {nbytes} bytes on device {device.ordinal}",
                     device):
            self._alloc = cuda().mem_alloc(max(int(nbytes), 1))
        self.nbytes = int(nbytes)
        self.ptr = int(self._alloc)
        self._device = device
        device.track(self)

    def _span(self, offset: int, n: int, what: str) -> int:
        if self._alloc is None:
            raise InvalidArgument(f"{what}: buffer used after free()")
        return self.ptr + device_span(offset, n, self.nbytes, what)

    @property
    def freed(self) -> bool:
        """True after :meth:`free`."""
        return self._alloc is None

    def device_addr(self) -> int:
        """The device address."""
        if self._alloc is None:
            raise InvalidArgument("device_addr: buffer used after free()")
        return self.ptr

    def upload(self, host: np.ndarray, nbytes: int | None = None) -> None:
        """Copy ``nbytes`` (default all) from ``host`` to offset 0, synchronously."""
        self.upload_at(0, host, nbytes)

    def download(self, host: np.ndarray, nbytes: int | None = None) -> None:
        """Copy ``nbytes`` (default ``host.nbytes``) from offset 0 into ``host``."""
        self.download_at(0, host, nbytes)

    def upload_at(self, offset: int, host: np.ndarray, nbytes: int | None = None) -> None:
        """Copy from ``host`` to byte ``offset``, synchronously."""
        view, n = host_span(host, nbytes, "upload")
        dst = self._span(offset, n, "upload")
        if n:
            with guarded(CopyFailed, f"cuda: upload of {n} bytes", self._device):
                cuda().memcpy_htod(dst, view[:n])

    def download_at(self, offset: int, host: np.ndarray, nbytes: int | None = None) -> None:
        """Copy from byte ``offset`` into ``host``, synchronously."""
        view, n = host_span(host, nbytes, "download", writable=True)
        if not host.flags.writeable:
            raise InvalidArgument("download: the host array is read-only")
        src = self._span(offset, n, "download")
        if n:
            with guarded(CopyFailed, f"cuda: download of {n} bytes", self._device):
                cuda().memcpy_dtoh(view[:n], src)

    def upload_at_async(self, offset: int, host: np.ndarray, stream: CudaStream,
                        nbytes: int | None = None) -> None:
        """Enqueue a copy from ``host`` (pinned for real asynchrony) on ``stream``."""
        view, n = host_span(host, nbytes, "upload_at_async")
        dst = self._span(offset, n, "upload_at_async")
        if n:
            with guarded(CopyFailed, f"cuda: async upload of {n} bytes", self._device):
                cuda().memcpy_htod_async(dst, view[:n], stream.handle_obj)

    def download_at_async(self, offset: int, host: np.ndarray, stream: CudaStream,
                          nbytes: int | None = None) -> None:
        """Enqueue a copy into ``host`` (pinned for real asynchrony) on ``stream``."""
        view, n = host_span(host, nbytes, "download_at_async", writable=True)
        src = self._span(offset, n, "download_at_async")
        if n:
            with guarded(CopyFailed, f"cuda: async download of {n} bytes", self._device):
                cuda().memcpy_dtoh_async(view[:n], src, stream.handle_obj)

    def copy_from(self, other: CudaBuffer, nbytes: int | None = None) -> None:
        """Device-to-device copy of ``nbytes`` (default ``other.nbytes``), synchronously."""
        self.copy_from_async(other, None, nbytes)
        with guarded(CopyFailed, "cuda: copy_from", self._device):
            cuda().Context.synchronize()

    def copy_from_async(self, other: CudaBuffer, stream: CudaStream | None,
                        nbytes: int | None = None) -> None:
        """Enqueue a device-to-device copy on ``stream``."""
        if not isinstance(other, CudaBuffer):
            raise InvalidArgument(f"copy_from: expected a CUDA buffer, got {other!r}")
        n = other.nbytes if nbytes is None else nbytes
        src = other._span(0, n, "copy_from (source)")
        dst = self._span(0, n, "copy_from (destination)")
        if n:
            s = stream if stream is not None else self._device.stream
            with guarded(CopyFailed, f"cuda: device copy of {n} bytes", self._device):
                cuda().memcpy_dtod_async(dst, src, n, s.handle_obj)

    def fill_async(self, byte: int, stream: CudaStream | None = None,
                   nbytes: int | None = None) -> None:
        """Enqueue setting ``nbytes`` (default all) bytes to ``byte``."""
        n = self.nbytes if nbytes is None else nbytes
        dst = self._span(0, n, "fill_async")
        if not 0 <= int(byte) <= 255:
            raise InvalidArgument(f"fill_async: byte must be 0..255, got {byte!r}")
        if n:
            s = stream if stream is not None else self._device.stream
            with guarded(CopyFailed, f"cuda: fill of {n} bytes", self._device):
                cuda().memset_d8_async(dst, int(byte), n, s.handle_obj)

    def free(self) -> None:
        """Release the memory (idempotent). ``ptr`` goes with it, so a launch on a freed
        buffer is refused (``InvalidArgument``) instead of touching freed memory."""
        alloc, self._alloc = self._alloc, None
        if alloc is not None:
            del self.ptr
            with guarded(CopyFailed, "cuda: free", self._device):
                alloc.free()

    def __repr__(self) -> str:
        state = "freed" if self._alloc is None else hex(self.ptr)
        return f"<CudaBuffer {self.nbytes} bytes at {state}>"


def pinned_empty(device: CudaDevice, shape: Any, dtype: Any) -> np.ndarray:
    """A page-locked host array (fast, truly asynchronous transfers)."""
    with guarded(AllocFailed, "cuda: allocating pinned host memory", device):
        return cuda().pagelocked_empty(shape, dtype)

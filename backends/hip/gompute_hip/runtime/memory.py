"""Device buffers and pinned host memory on hip-python.

Transfers are in BYTES. Bounds and host-array checks raise ``InvalidArgument``
before any HIP call; HIP failures raise ``CopyFailed`` (``AllocFailed`` for
allocation) with ``last_driver_error()`` set.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any

import numpy as np

from gompute_core.errors import AllocFailed, CopyFailed, InvalidArgument
from gompute_core.runtime.transfer import device_span, host_span

from .errors import check

if TYPE_CHECKING:
    from .device import HipDevice
    from .streams import HipStream


class HipBuffer:
    """``nbytes`` bytes of device memory on one device (``free`` is idempotent)."""

    def __init__(self, device: HipDevice, nbytes: int) -> None:
        if not isinstance(nbytes, (int, np.integer)) or nbytes < 0:
            raise InvalidArgument(f"alloc: nbytes must be a non-negative integer, got {nbytes!r}")
        self.device = device
        self.nbytes = int(nbytes)
        self._addr = 0
        if self.nbytes:
            device.make_current()
            ptr = check(device.hip.hipMalloc(self.nbytes), f"hipMalloc({self.nbytes})",
                        AllocFailed)
            self._addr = int(ptr)
        self._freed = False

    # ---- checks -------------------------------------------------------------------
    def _range(self, offset: int, n: int, what: str) -> int:
        if self._freed:
            raise InvalidArgument(f"{what}: buffer used after free")
        return self._addr + device_span(offset, n, self.nbytes, what)

    def _stream(self, stream: HipStream | None) -> Any:
        return (stream or self.device.stream).handle

    # ---- synchronous transfers ---------------------------------------------------------
    def upload(self, host: np.ndarray, nbytes: int | None = None) -> None:
        """Copy ``nbytes`` (default ``host.nbytes``) from ``host`` to offset 0."""
        self.upload_at(0, host, nbytes)

    def download(self, host: np.ndarray, nbytes: int | None = None) -> None:
        """Copy ``nbytes`` (default ``host.nbytes``) from offset 0 into ``host``."""
        self.download_at(0, host, nbytes)

    def upload_at(self, offset: int, host: np.ndarray, nbytes: int | None = None) -> None:
        """Copy ``nbytes`` from ``host`` to byte ``offset``."""
        _, n = host_span(host, nbytes, "upload")
        dst = self._range(offset, n, "upload")
        if n:
            self.device.make_current()
            check(self.device.hip.hipMemcpyHtoD(dst, host, n), f"hipMemcpyHtoD({n})", CopyFailed)

    def download_at(self, offset: int, host: np.ndarray, nbytes: int | None = None) -> None:
        """Copy ``nbytes`` from byte ``offset`` into ``host``."""
        _, n = host_span(host, nbytes, "download", writable=True)
        src = self._range(offset, n, "download")
        if n:
            self.device.make_current()
            check(self.device.hip.hipMemcpyDtoH(host, src, n), f"hipMemcpyDtoH({n})", CopyFailed)

    def copy_from(self, other: HipBuffer, nbytes: int | None = None) -> None:
        """Device-to-device copy of ``nbytes`` (default: all of ``other``) to offset 0."""
        n, src = self._peer(other, nbytes)
        if n:
            self.device.make_current()
            check(self.device.hip.hipMemcpyDtoD(self._addr, src, n), f"hipMemcpyDtoD({n})",
                  CopyFailed)

    # ---- asynchronous transfers ---------------------------------------------------------
    def copy_from_async(self, other: HipBuffer, stream: HipStream | None = None,
                        nbytes: int | None = None) -> None:
        """Enqueue a device-to-device copy on ``stream`` (default: the device's stream)."""
        n, src = self._peer(other, nbytes)
        if n:
            check(self.device.hip.hipMemcpyDtoDAsync(self._addr, src, n, self._stream(stream)),
                  f"hipMemcpyDtoDAsync({n})", CopyFailed)

    def upload_at_async(self, offset: int, host: np.ndarray, stream: HipStream | None = None,
                        nbytes: int | None = None) -> None:
        """Enqueue a host-to-device copy (asynchronous only from pinned host memory)."""
        _, n = host_span(host, nbytes, "upload_at_async")
        dst = self._range(offset, n, "upload_at_async")
        if n:
            check(self.device.hip.hipMemcpyHtoDAsync(dst, host, n, self._stream(stream)),
                  f"hipMemcpyHtoDAsync({n})", CopyFailed)

    def download_at_async(self, offset: int, host: np.ndarray,
                          stream: HipStream | None = None, nbytes: int | None = None) -> None:
        """Enqueue a device-to-host copy (asynchronous only into pinned host memory)."""
        _, n = host_span(host, nbytes, "download_at_async", writable=True)
        src = self._range(offset, n, "download_at_async")
        if n:
            check(self.device.hip.hipMemcpyDtoHAsync(host, src, n, self._stream(stream)),
                  f"hipMemcpyDtoHAsync({n})", CopyFailed)

    def fill_async(self, value: int, stream: HipStream | None = None,
                   nbytes: int | None = None) -> None:
        """Enqueue setting ``nbytes`` (default all) bytes from offset 0 to ``value`` (0..255)."""
        if not 0 <= int(value) <= 255:
            raise InvalidArgument(f"fill_async: value {value} is not a byte (0..255)")
        n = self.nbytes if nbytes is None else int(nbytes)
        dst = self._range(0, n, "fill_async")
        if n:
            check(self.device.hip.hipMemsetD8Async(dst, int(value), n, self._stream(stream)),
                  f"hipMemsetD8Async({n})", CopyFailed)

    def _peer(self, other: HipBuffer, nbytes: int | None) -> tuple[int, int]:
        if not isinstance(other, HipBuffer):
            raise InvalidArgument(f"copy_from: expected a HIP buffer, got {type(other).__name__}")
        n = other.nbytes if nbytes is None else int(nbytes)
        src = other._range(0, n, "copy_from (source)")
        self._range(0, n, "copy_from")
        return n, src

    # ---- lifetime -----------------------------------------------------------------
    def device_addr(self) -> int:
        """The device address as an integer."""
        return self._range(0, 0, "device_addr")

    def free(self) -> None:
        """Release the memory (idempotent)."""
        if self._freed:
            return
        self._freed = True
        if self._addr:
            self.device.make_current()
            check(self.device.hip.hipFree(self._addr), "hipFree", AllocFailed)
            self._addr = 0


class _PinnedAllocation:
    """Owns one ``hipHostMalloc`` block; freed when the last array viewing it goes away."""

    def __init__(self, device: HipDevice, nbytes: int) -> None:
        self.hip = device.hip
        device.make_current()
        self.addr = int(check(device.hip.hipHostMalloc(nbytes, 0), f"hipHostMalloc({nbytes})",
                              AllocFailed))

    def __del__(self) -> None:
        self.hip.hipHostFree(self.addr)


def pinned_empty(device: HipDevice, shape: Any, dtype: Any = np.uint8) -> np.ndarray:
    """A page-locked host array (``hipHostMalloc``), so async copies really overlap."""
    dt = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    if count < 0:
        raise InvalidArgument(f"pinned: negative shape {shape!r}")
    nbytes = max(count * dt.itemsize, 1)
    owner = _PinnedAllocation(device, nbytes)
    raw = (ctypes.c_ubyte * nbytes).from_address(owner.addr)
    raw._owner = owner  # type: ignore[attr-defined]  # the array's base keeps it alive
    return np.frombuffer(raw, dtype=np.uint8)[: count * dt.itemsize].view(dt).reshape(shape)

"""``Buffer``: device memory whose public methods the core checks once for every backend.

A backend subclasses :class:`Buffer` and implements five primitives on
already-validated arguments (byte offsets inside the buffer, a flat
``uint8`` host view of the right length, a live buffer, a stream of this
device or ``None``):

* ``_copyin(offset, host, stream)`` — host to device;
* ``_copyout(offset, host, stream)`` — device to host;
* ``_copy_device(offset, src, src_offset, nbytes, stream)`` — device to device;
* ``_fill(offset, nbytes, value, stream)`` — set bytes to ``value``;
* ``_release()`` — give the memory back (called once).

``stream is None`` asks for a synchronous operation (done when the call
returns); a stream asks for the operation to be enqueued there. Everything
else — bounds, host-array checks, freed buffers, stream ownership,
idempotent ``free`` — lives here, so no backend re-implements it.

Where the device declares a DLPack device type, a buffer is also an array
other libraries can view without a copy (``__dlpack__``,
``__cuda_array_interface__`` on CUDA, ``__array_interface__`` on host
memory; see :mod:`gompute_core.interop`), typed and shaped as its element
type and count (``Kernel.alloc`` sets ``dtype``) or as ``typed(dtype,
shape)`` says.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidArgument
from .exports import Exports, TypedView, buffer_shape
from .transfer import byte_count, device_span, host_span

if TYPE_CHECKING:
    from .device import Device, Stream


_BYTES = np.dtype(np.uint8)


class Buffer(Exports, ABC):
    """``nbytes`` bytes of memory on ``device``; ``addr`` is its device address.

    Transfers are in BYTES. Every public method checks its arguments before
    the backend sees them: a transfer past either end, a read-only
    destination, a freed buffer or another device's stream is an
    ``InvalidArgument`` naming the operation, and nothing is copied.
    ``free()`` is idempotent; any later use raises ``InvalidArgument``. A
    *borrowed* buffer (``owned=False``) views memory someone else owns:
    ``free()`` only forgets it; ``keep`` holds what keeps its memory alive (the
    producer's array); ``readonly`` says its producer declared the memory read-only (a
    raw kernel refuses it where it writes). ``dtype`` (default ``uint8``) and ``shape``
    (default: the element count) are how other libraries see it.
    """

    __slots__ = ("device", "nbytes", "addr", "owned", "_freed", "dtype", "shape", "keep",
                 "readonly", "__weakref__")

    def __init__(self, device: Device, nbytes: int, addr: int, *, owned: bool = True) -> None:
        self.device = device
        self.nbytes = nbytes
        self.addr = addr
        self.owned = owned
        self._freed = False
        self.dtype: np.dtype = _BYTES
        self.shape: tuple[int, ...] | None = None
        self.keep: Any = None
        self.readonly = False

    # ---- primitives a backend implements -------------------------------------------
    @abstractmethod
    def _copyin(self, offset: int, host: np.ndarray, stream: Stream | None) -> None:
        """See the module docstring."""

    @abstractmethod
    def _copyout(self, offset: int, host: np.ndarray, stream: Stream | None) -> None:
        """See the module docstring."""

    @abstractmethod
    def _copy_device(self, offset: int, src: Buffer, src_offset: int, nbytes: int,
                     stream: Stream | None) -> None:
        """See the module docstring."""

    @abstractmethod
    def _fill(self, offset: int, nbytes: int, value: int, stream: Stream | None) -> None:
        """See the module docstring."""

    def _release(self) -> None:  # noqa: B027 - optional: host-memory buffers let GC do it
        """Give the memory back (owned buffers only; called at most once)."""

    # ---- checks ----------------------------------------------------------------------
    @property
    def freed(self) -> bool:
        """True after :meth:`free`."""
        return self._freed

    def _live(self, what: str) -> None:
        if self._freed:
            raise InvalidArgument(f"{what}: buffer used after free()")

    def _stream(self, stream: Any, what: str) -> Stream:
        if stream is None:
            return self.device.stream
        if getattr(stream, "device", None) is not self.device:
            raise InvalidArgument(f"{what}: stream {stream!r} does not belong to this buffer's "
                                  f"device ({self.device!r})")
        return stream

    # ---- host transfers ----------------------------------------------------------------
    def upload(self, host: np.ndarray, nbytes: int | None = None) -> None:
        """Copy ``nbytes`` (default ``host.nbytes``) from ``host`` to offset 0; returns when
        done."""
        self.upload_at(0, host, nbytes)

    def download(self, host: np.ndarray, nbytes: int | None = None) -> None:
        """Copy ``nbytes`` (default ``host.nbytes``) from offset 0 into ``host``."""
        self.download_at(0, host, nbytes)

    def upload_at(self, offset: int, host: np.ndarray, nbytes: int | None = None) -> None:
        """Copy ``nbytes`` (default all of ``host``) from ``host`` to byte ``offset``."""
        view, n = host_span(host, nbytes, "upload")
        at = device_span(offset, n, self.nbytes, "upload")
        self._live("upload")
        if n:
            self._copyin(at, view[:n], None)

    def download_at(self, offset: int, host: np.ndarray, nbytes: int | None = None) -> None:
        """Copy ``nbytes`` (default all of ``host``) from byte ``offset`` into ``host``."""
        view, n = host_span(host, nbytes, "download", writable=True)
        at = device_span(offset, n, self.nbytes, "download")
        self._live("download")
        if n:
            self._copyout(at, view[:n], None)

    def upload_at_async(self, offset: int, host: np.ndarray, nbytes: int | None = None,
                        stream: Stream | None = None) -> None:
        """Enqueue a copy from ``host`` to byte ``offset`` on ``stream`` (default: the
        device's). Truly asynchronous only from pinned host memory; ``host`` must stay
        alive and unchanged until the stream reaches the copy."""
        view, n = host_span(host, nbytes, "upload_at_async")
        at = device_span(offset, n, self.nbytes, "upload_at_async")
        self._live("upload_at_async")
        s = self._stream(stream, "upload_at_async")
        if n:
            self._copyin(at, view[:n], s)

    def download_at_async(self, offset: int, host: np.ndarray, nbytes: int | None = None,
                          stream: Stream | None = None) -> None:
        """Enqueue a copy from byte ``offset`` into ``host`` on ``stream`` (default: the
        device's); ``host`` holds the data once the stream is synchronized."""
        view, n = host_span(host, nbytes, "download_at_async", writable=True)
        at = device_span(offset, n, self.nbytes, "download_at_async")
        self._live("download_at_async")
        s = self._stream(stream, "download_at_async")
        if n:
            self._copyout(at, view[:n], s)

    # ---- device-side operations -----------------------------------------------------------
    def _source(self, other: Any, nbytes: int | None, what: str) -> int:
        if not isinstance(other, Buffer) or other.device.backend != self.device.backend:
            raise InvalidArgument(f"{what}: expected a {self.device.backend} buffer, got "
                                  f"{type(other).__name__}")
        other._live(f"{what} (source)")
        self._live(f"{what} (destination)")
        n = other.nbytes if nbytes is None else byte_count(nbytes, what, "nbytes")
        device_span(0, n, other.nbytes, f"{what} (source)")
        device_span(0, n, self.nbytes, f"{what} (destination)")
        return n

    def copy_from(self, other: Buffer, nbytes: int | None = None) -> None:
        """Copy ``nbytes`` (default all of ``other``) from buffer ``other`` to offset 0;
        returns when done."""
        n = self._source(other, nbytes, "copy_from")
        if n:
            self._copy_device(0, other, 0, n, None)

    def copy_from_async(self, other: Buffer, nbytes: int | None = None,
                        stream: Stream | None = None) -> None:
        """Enqueue a device-to-device copy from ``other`` on ``stream``."""
        n = self._source(other, nbytes, "copy_from_async")
        s = self._stream(stream, "copy_from_async")
        if n:
            self._copy_device(0, other, 0, n, s)

    def _fill_span(self, value: Any, nbytes: int | None, offset: int,
                   what: str) -> tuple[int, int, int]:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                or not 0 <= value <= 255:
            raise InvalidArgument(f"{what}: value must be a byte (0..255), got {value!r}")
        start = device_span(offset, 0, self.nbytes, what)
        n = self.nbytes - start if nbytes is None else byte_count(nbytes, what, "nbytes")
        device_span(start, n, self.nbytes, what)
        self._live(what)
        return start, n, int(value)

    def fill(self, value: int, nbytes: int | None = None, offset: int = 0) -> None:
        """Set ``nbytes`` bytes (default: to the end) from byte ``offset`` to ``value``."""
        start, n, v = self._fill_span(value, nbytes, offset, "fill")
        if n:
            self._fill(start, n, v, None)

    def fill_async(self, value: int, nbytes: int | None = None, stream: Stream | None = None,
                   offset: int = 0) -> None:
        """Enqueue setting ``nbytes`` bytes (default: to the end) from ``offset`` to ``value``."""
        start, n, v = self._fill_span(value, nbytes, offset, "fill_async")
        s = self._stream(stream, "fill_async")
        if n:
            self._fill(start, n, v, s)

    # ---- interop -------------------------------------------------------------------------
    def typed(self, dtype: Any = None, shape: Any = None) -> TypedView:
        """This buffer seen by other libraries as ``shape`` (default: as many as fit)
        elements of ``dtype`` (default: the buffer's): ``cupy.asarray(buf.typed(np.float32,
        (4, 256)))`` views the memory, no copy."""
        return TypedView(self, self.dtype if dtype is None else dtype, shape)

    def _export_view(self) -> tuple[Buffer, np.dtype, tuple[int, ...]]:
        return buffer_shape(self)

    # ---- lifetime ------------------------------------------------------------------------
    def device_addr(self) -> int:
        """The device address of the first byte (for a host-memory backend, the host
        address)."""
        self._live("device_addr")
        return self.addr

    def free(self) -> None:
        """Release the memory (idempotent; a borrowed buffer only forgets it)."""
        if self._freed:
            return
        self._freed = True
        if self.owned:
            self._release()
        self.keep = None

    def close(self) -> None:
        """The SDK's common name for :meth:`free` (every device object has ``close``)."""
        self.free()

    def __repr__(self) -> str:
        state = "freed" if self._freed else f"at {self.addr:#x}"
        kind = "" if self.owned else " borrowed"
        return (f"<{type(self).__name__}{kind} {self.nbytes} bytes {state} on "
                f"{self.device.backend}:{self.device.ordinal}>")

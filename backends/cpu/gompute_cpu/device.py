"""The CPU device: host buffers, a trivial stream, and program loading.

Buffers are NumPy ``uint8`` arrays; every transfer is a ``memcpy`` done at
once, so the ``*_async`` variants are synchronous and ``synchronize`` has
nothing to wait for. Bounds are checked before anything is copied.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from gompute_core.errors import AllocFailed, InvalidArgument, ModuleLoadFailed
from gompute_core.ir.kernel import KernelIR
from gompute_core.plugins.records import Artifact
from gompute_core.runtime.transfer import device_span


def _bytes_of(host: np.ndarray, what: str) -> np.ndarray:
    """``host`` as a flat ``uint8`` view (it must be a contiguous NumPy array)."""
    if not isinstance(host, np.ndarray):
        raise InvalidArgument(f"{what}: expected a NumPy array, got {type(host).__name__}")
    if not host.flags.c_contiguous:
        raise InvalidArgument(f"{what}: the host array must be C-contiguous")
    return host.reshape(-1).view(np.uint8)


class CpuStream:
    """The CPU's only stream: work is done when the call returns."""

    def synchronize(self) -> None:
        """Nothing is ever pending."""

    def query(self) -> bool:
        """Always True: every operation completed synchronously."""
        return True


STREAM = CpuStream()


class CpuBuffer:
    """``nbytes`` bytes of host memory standing in for device memory."""

    def __init__(self, nbytes: int) -> None:
        try:
            self._mem: np.ndarray | None = np.zeros(nbytes, np.uint8)
        except MemoryError as exc:
            raise AllocFailed(f"cannot allocate {nbytes} bytes of host memory") from exc
        self.nbytes = nbytes
        self._views: dict[np.dtype, np.ndarray] = {}

    def _live(self) -> np.ndarray:
        if self._mem is None:
            raise InvalidArgument("buffer used after free()")
        return self._mem

    def _span(self, what: str, offset: int, nbytes: int | None, limit: int) -> tuple[int, int]:
        """Validated ``(offset, nbytes)``: both within this buffer and within ``limit``."""
        offset = operator.index(offset)
        n = limit if nbytes is None else operator.index(nbytes)
        if offset < 0 or n < 0:
            raise InvalidArgument(f"{what}: negative offset or size ({offset}, {n})")
        if n > limit:
            raise InvalidArgument(f"{what}: {n} bytes requested, the host side has {limit}")
        return device_span(offset, n, self.nbytes, what), n

    def view(self, dtype: np.dtype) -> np.ndarray:
        """The whole buffer as an array of ``dtype`` (cached; trailing bytes dropped)."""
        v = self._views.get(dtype)
        if v is None:
            mem = self._live()
            count = self.nbytes // dtype.itemsize
            v = mem[:count * dtype.itemsize].view(dtype)
            self._views[dtype] = v
        return v

    def upload(self, host: np.ndarray, nbytes: int | None = None) -> None:
        """Copy ``nbytes`` (default ``host.nbytes``) from ``host`` to offset 0."""
        self.upload_at(0, host, nbytes)

    def download(self, host: np.ndarray, nbytes: int | None = None) -> None:
        """Copy ``nbytes`` (default ``host.nbytes``) from offset 0 into ``host``."""
        self.download_at(0, host, nbytes)

    def upload_at(self, offset: int, host: np.ndarray, nbytes: int | None = None) -> None:
        """Copy ``nbytes`` from ``host`` to byte ``offset``."""
        mem = self._live()
        src = _bytes_of(host, "upload")
        offset, n = self._span("upload", offset, nbytes, src.size)
        mem[offset:offset + n] = src[:n]

    def download_at(self, offset: int, host: np.ndarray, nbytes: int | None = None) -> None:
        """Copy ``nbytes`` from byte ``offset`` into ``host``."""
        mem = self._live()
        if isinstance(host, np.ndarray) and not host.flags.writeable:
            raise InvalidArgument("download: the host array is read-only")
        dst = _bytes_of(host, "download")
        offset, n = self._span("download", offset, nbytes, dst.size)
        dst[:n] = mem[offset:offset + n]

    def copy_from(self, other: CpuBuffer, nbytes: int | None = None) -> None:
        """Copy ``nbytes`` (default: all of ``other``) from buffer ``other`` to offset 0."""
        if not isinstance(other, CpuBuffer):
            raise InvalidArgument(f"copy_from: expected a CPU buffer, got {type(other).__name__}")
        src = other._live()
        mem = self._live()
        _, n = self._span("copy_from", 0, nbytes, other.nbytes)
        mem[:n] = src[:n]

    def copy_from_async(self, other: CpuBuffer, nbytes: int | None = None,
                        stream: Any = None) -> None:
        """Same as :meth:`copy_from` (the CPU is synchronous)."""
        self.copy_from(other, nbytes)

    def upload_at_async(self, offset: int, host: np.ndarray, nbytes: int | None = None,
                        stream: Any = None) -> None:
        """Same as :meth:`upload_at`."""
        self.upload_at(offset, host, nbytes)

    def download_at_async(self, offset: int, host: np.ndarray, nbytes: int | None = None,
                          stream: Any = None) -> None:
        """Same as :meth:`download_at`."""
        self.download_at(offset, host, nbytes)

    def fill_async(self, value: int, nbytes: int | None = None, stream: Any = None,
                   offset: int = 0) -> None:
        """Set ``nbytes`` bytes (default: the rest of the buffer) from ``offset`` to ``value``."""
        mem = self._live()
        value = operator.index(value)
        if not 0 <= value <= 255:
            raise InvalidArgument(f"fill_async: value {value} is not a byte (0..255)")
        offset = operator.index(offset)
        n = self.nbytes - offset if nbytes is None else operator.index(nbytes)
        offset, n = self._span("fill_async", offset, n, max(n, 0))
        mem[offset:offset + n] = value

    def device_addr(self) -> int:
        """The host address of the first byte."""
        return int(self._live().ctypes.data)

    def free(self) -> None:
        """Release the memory (idempotent)."""
        self._mem = None
        self._views.clear()


class CpuDevice:
    """The host CPU as a Gompute device (ordinal 0)."""

    backend = "cpu"
    ordinal = 0

    def __init__(self, arch: str) -> None:
        self.arch = arch

    def alloc(self, nbytes: int) -> CpuBuffer:
        """``nbytes`` bytes of zeroed host memory."""
        nbytes = operator.index(nbytes)
        if nbytes < 0:
            raise InvalidArgument(f"alloc: negative size {nbytes}")
        return CpuBuffer(nbytes)

    def program(self, artifact: Artifact, kernel: KernelIR) -> Any:
        """Import the artifact's module (cached per source) and wrap it for ``kernel``."""
        from .compiler import load_module
        from .program import CpuProgram

        if artifact.backend != "cpu" or artifact.format != "python":
            raise ModuleLoadFailed(f"the CPU backend loads 'python' artifacts of backend 'cpu', "
                                   f"not {artifact.format!r} of {artifact.backend!r}")
        return CpuProgram(kernel, load_module(artifact.image.decode()))

    def synchronize(self) -> None:
        """Nothing is ever pending on the CPU."""

    @property
    def stream(self) -> CpuStream:
        """The (synchronous) default stream."""
        return STREAM

    @property
    def context(self) -> CpuDevice:
        """The device is its own context (``k.context.synchronize()``)."""
        return self

    def create_stream(self) -> CpuStream:
        """Streams are all the same on the CPU: work is done when a call returns."""
        return STREAM

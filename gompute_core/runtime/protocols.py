"""What a backend's runtime objects provide: Device, Program, Buffer, Stream.

The core's handles (``Kernel``, ``AutoKernel``, ``Compute``) talk to backends
only through these; the hot path (``Kernel.launch``) is a direct call of
``Program.launch`` with no hook dispatch in between.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..ir.kernel import KernelIR
from ..plugins.records import Artifact


@runtime_checkable
class Buffer(Protocol):
    """Device memory of ``nbytes`` bytes. Transfers are in BYTES.

    Transfers past the end raise ``InvalidArgument`` before any driver call.
    ``free`` is idempotent; use after free raises ``InvalidArgument``.
    """

    nbytes: int

    def upload(self, host: np.ndarray, nbytes: int | None = None) -> None:
        """Copy ``nbytes`` (default ``host.nbytes``) from ``host`` to offset 0 (synchronous)."""

    def download(self, host: np.ndarray, nbytes: int | None = None) -> None:
        """Copy ``nbytes`` (default ``host.nbytes``) from offset 0 into ``host`` (synchronous)."""

    def upload_at(self, offset: int, host: np.ndarray, nbytes: int | None = None) -> None:
        """Like upload, at byte ``offset``."""

    def download_at(self, offset: int, host: np.ndarray, nbytes: int | None = None) -> None:
        """Like download, from byte ``offset``."""

    def copy_from(self, other: Buffer, nbytes: int | None = None) -> None:
        """Device-to-device copy from ``other`` (synchronous)."""

    def free(self) -> None:
        """Release the memory (idempotent)."""

    def device_addr(self) -> int:
        """The device address (an integer; for the CPU, the host address)."""


@runtime_checkable
class Stream(Protocol):
    """An ordered queue of device work."""

    def synchronize(self) -> None:
        """Wait for all work on this stream; device faults raise ``SyncFailed``."""

    def query(self) -> bool:
        """True when all work on this stream has finished."""


@runtime_checkable
class Program(Protocol):
    """A loaded kernel for one spec on one device.

    ``launch`` takes exactly the per-kind arguments of DESIGN.md (buffers,
    counts, params object) and enqueues on ``stream``; it does O(1) checks
    only. ``run`` is optional: when present, ``Kernel.run`` calls it with the
    user's host arrays (the CPU backend runs on them in place). ``free`` is
    optional too: when present, ``Kernel.close`` calls it to release what the
    program holds for ``run`` (staging and device buffers).
    """

    stream: Any

    def launch(self, *args: Any) -> None:
        """Enqueue one launch; no allocation, no copy, no synchronization."""


@runtime_checkable
class Device(Protocol):
    """A backend's device: context, module cache, allocation, streams, launch."""

    backend: str
    ordinal: int
    arch: str

    def alloc(self, nbytes: int) -> Buffer:
        """Allocate ``nbytes`` bytes of device memory (``AllocFailed`` on failure)."""

    def program(self, artifact: Artifact, kernel: KernelIR) -> Program:
        """Load ``artifact`` (module cache per device and image) and return its Program.

        ``kernel`` says the kind, value types and params layout, so the
        Program can pack params (``gompute_core.abi.pack``) and check counts.
        """

    def synchronize(self) -> None:
        """Wait for all work on the device; device faults raise ``SyncFailed``."""

    @property
    def stream(self) -> Stream:
        """The device's default stream for this handle."""

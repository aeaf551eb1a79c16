"""The error hierarchy: everything Gompute raises derives from GomputeError.

``InvalidArgument`` is also a ``ValueError``; ``KernelSyntaxError`` and
``AbiError`` are also ``TypeError``s, so callers that catch the builtin
categories keep working.
"""

from __future__ import annotations

import threading


class GomputeError(Exception):
    """Base of every error raised by Gompute and its backends."""


class GomputeWarning(UserWarning):
    """Something was skipped but work went on: a backend AutoKernel could not use, a compile
    cache entry dropped as corrupt, a cache location that could not be written."""


class InitFailed(GomputeError):
    """A backend's driver or runtime failed to initialize."""


class NoDevice(GomputeError):
    """The backend works but the requested device does not exist."""


class ContextFailed(GomputeError):
    """A device context could not be created or made current."""


class SyncFailed(GomputeError):
    """Synchronization reported an error (a device-side fault surfaces here)."""


class AllocFailed(GomputeError):
    """Device or pinned-host allocation failed."""


class ModuleLoadFailed(GomputeError):
    """A compiled image could not be loaded (wrong arch, corrupt, ...)."""


class KernelNotFound(GomputeError, LookupError):
    """The entry point or named kernel does not exist (also a ``LookupError``)."""


class LaunchFailed(GomputeError):
    """The driver refused a launch."""


class CopyFailed(GomputeError):
    """A host/device transfer failed or was out of bounds."""


class InvalidArgument(GomputeError, ValueError):
    """An argument has the wrong type, dtype, length or value."""


class BackendUnavailable(GomputeError):
    """The backend is installed but cannot run here; the message says why."""


class UnsupportedBackend(GomputeError):
    """No installed plugin answers to the requested backend name."""


class CaptureFailed(GomputeError):
    """Stream capture could not begin or end."""


class GraphFailed(GomputeError):
    """Graph instantiation, launch or update failed."""


class EventFailed(GomputeError):
    """An event operation failed."""


class Unsupported(GomputeError):
    """The backend does not support this operation or type."""


class CompileFailed(GomputeError):
    """The backend compiler rejected generated code (the log is attached)."""


class CacheUnsafe(GomputeError):
    """A compile cache directory is not private to this user (owned by someone else, or
    writable by group or others): nothing is loaded from it; the message says how to fix it."""


class KernelSyntaxError(GomputeError, TypeError):
    """Kernel code outside the kernel language; the message has file:line."""

    def __init__(self, message: str, filename: str | None = None, lineno: int | None = None,
                 construct: str | None = None) -> None:
        self.filename = filename
        self.lineno = lineno
        self.construct = construct
        where = f"{filename}:{lineno}: " if filename is not None else ""
        super().__init__(f"{where}{message}")


class OutOfBounds(GomputeError):
    """A checked raw kernel (``checked=True``, ``GOMPUTE_CHECKED=1``) indexed an array
    outside its extent; raised at the next synchronization. The faulting access was not
    performed (a load read 0). Attributes: ``kernel``, ``array``, ``access`` (``"read"``,
    ``"write"`` or ``"atomic"``), ``index``, ``extent``, ``dim`` (the dimension of a 2-D
    shared array), ``where`` (``file:line``), ``block`` and ``thread`` (ids as 3-tuples)."""

    def __init__(self, message: str, **fields: object) -> None:
        super().__init__(message)
        self.__dict__.update(fields)


class DataRace(GomputeError):
    """A checked raw kernel on a backend that tracks races (the CPU) had two threads of a
    block write, or one write and another read, one element of a shared array between two
    barriers; raised at the next synchronization. Attributes: ``kernel``, ``array``,
    ``element`` (its flat index), ``kind`` (``"write after write"``, ``"write after read"``
    or ``"read after write"``), ``block``, ``thread`` and ``where`` (this access),
    ``other_thread`` and ``other_where`` (the earlier access)."""

    def __init__(self, message: str, **fields: object) -> None:
        super().__init__(message)
        self.__dict__.update(fields)


class BarrierDivergence(GomputeError):
    """A checked raw kernel on a backend that tracks it (the CPU) reached a ``barrier()``
    with fewer than all the threads of a block (the others had returned); raised at the
    next synchronization. Attributes: ``kernel``, ``where`` (the barrier's ``file:line``),
    ``block``, ``arrived``, ``threads`` (the block's), ``returned_thread`` and
    ``returned_where`` (the last thread that returned, and its ``return``)."""

    def __init__(self, message: str, **fields: object) -> None:
        super().__init__(message)
        self.__dict__.update(fields)


class AbiError(GomputeError, TypeError):
    """A params field that cannot cross to the device; the message names its path."""


_last_error = threading.local()


def set_last_driver_error(backend: str, code: int) -> None:
    """Record the last failed driver call on this thread (backends call this)."""
    _last_error.value = (backend, int(code))


def clear_last_driver_error() -> None:
    """Forget the last driver error on this thread (called on success)."""
    _last_error.value = None


def last_driver_error() -> tuple[str, int] | None:
    """``(backend, code)`` of the last failed driver call on this thread, or None."""
    return getattr(_last_error, "value", None)

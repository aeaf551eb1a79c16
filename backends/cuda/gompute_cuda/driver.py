"""The CUDA driver through pycuda (and ctypes for what pycuda lacks: graphs, error codes).

``pycuda.driver`` is imported lazily: without a driver the import fails and
:func:`availability_reason` says why, while rendering and compiling still work.
pycuda raises exceptions whose message is ``"<routine> failed: <cuGetErrorString
text>"``; :func:`translate` maps them to the core's error types with the
``CUresult`` recovered from that text and records it with
``set_last_driver_error("cuda", code)``.
"""

from __future__ import annotations

import ctypes
import threading
import warnings
from typing import Any, NoReturn

from gompute_core.errors import (
    BackendUnavailable,
    GomputeError,
    clear_last_driver_error,
    set_last_driver_error,
)

_lock = threading.Lock()
_cuda: Any = None


class MainThreadContext:
    """Which device's primary context the main thread has pushed: one at a time, kept
    pushed (pycuda aborts a thread that ends with a context pushed, so only the main
    thread keeps one); a device used there after another pops that one first."""

    def __init__(self) -> None:
        self.device: Any = None
        self.lock = threading.Lock()


MAIN = MainThreadContext()
_libcuda: ctypes.CDLL | None = None
_error_codes: dict[str, int] = {}
_failure: str | None = None


def cuda() -> Any:
    """The initialised ``pycuda.driver`` module; BackendUnavailable with the reason."""
    global _cuda, _failure
    if _cuda is not None:
        return _cuda
    with _lock:
        if _cuda is None:
            if _failure is not None:
                raise BackendUnavailable(_failure)
            try:  # load the driver first: its absence is the common, precise reason
                ctypes.CDLL("libcuda.so.1", mode=ctypes.RTLD_GLOBAL)
            except OSError as exc:
                _failure = f"libcuda.so.1 not found (no NVIDIA driver): {exc}"
                raise BackendUnavailable(_failure) from None
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    import pycuda.driver as drv
            except ImportError as exc:
                _failure = f"pycuda.driver cannot be imported: {exc}"
                raise BackendUnavailable(_failure) from None
            try:
                drv.init()
            except drv.Error as exc:
                _failure = f"cuInit failed: {exc}"
                raise BackendUnavailable(_failure) from None
            _cuda = drv
    return _cuda


def availability_reason() -> str | None:
    """None when the driver initialises, else why not (never raises)."""
    try:
        cuda()
    except BackendUnavailable as exc:
        return str(exc)
    return None


def libcuda() -> ctypes.CDLL:
    """The driver library itself (already loaded by pycuda), for graph and error calls."""
    global _libcuda
    if _libcuda is None:
        cuda()
        _libcuda = ctypes.CDLL("libcuda.so.1")
    return _libcuda


def error_code(message: str) -> int:
    """The ``CUresult`` whose ``cuGetErrorString`` text appears in ``message`` (999 if none)."""
    if not _error_codes:
        lib = libcuda()
        text = ctypes.c_char_p()
        for code in range(0, 1000):
            if lib.cuGetErrorString(code, ctypes.byref(text)) == 0 and text.value:
                _error_codes.setdefault(text.value.decode(), code)
    detail = message.split(" failed: ", 1)[-1]
    matches = [(len(t), c) for t, c in _error_codes.items() if detail.startswith(t)]
    return max(matches)[1] if matches else 999


def translate(exc: BaseException, cls: type[GomputeError], what: str) -> NoReturn:
    """Re-raise a pycuda exception as ``cls`` with the CUresult recorded."""
    code = error_code(str(exc))
    set_last_driver_error("cuda", code)
    raise cls(f"{what}: {exc} (CUresult {code})") from None


class guarded:  # noqa: N801 - used as a context manager, like contextlib's
    """``with guarded(cls, what, device):`` runs driver calls with ``device``'s context
    current (when given); pycuda errors become ``cls``; success clears the last driver
    error. A class, not a generator: it is on every transfer's path."""

    __slots__ = ("cls", "what", "device", "pop")

    def __init__(self, cls: type[GomputeError], what: str, device: Any = None) -> None:
        self.cls, self.what, self.device = cls, what, device

    def __enter__(self) -> None:
        self.pop = self.device.enter() if self.device is not None else False

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        if self.pop:
            cuda().Context.pop()
        if exc is None:
            _clear_last_error()
            return False
        if isinstance(exc, cuda().Error):
            translate(exc, self.cls, self.what)
        return False


_clear_last_error = clear_last_driver_error


def check(code: int, cls: type[GomputeError], what: str) -> None:
    """Raise ``cls`` for a non-zero CUresult from a ctypes driver call."""
    if code != 0:
        set_last_driver_error("cuda", code)
        raise cls(f"{what}: {_describe(code)} (CUresult {code})")
    clear_last_driver_error()


def _describe(code: int) -> str:
    text = ctypes.c_char_p()
    if libcuda().cuGetErrorString(code, ctypes.byref(text)) == 0 and text.value:
        return text.value.decode()
    return "unknown error"

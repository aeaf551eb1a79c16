"""``hipError_t`` results to the core's error types, with ``last_driver_error`` kept current.

Every hip-python call returns a tuple whose first item is the ``hipError_t``;
:func:`check` raises the core error for a failure (``set_last_driver_error("hip",
code)`` first) and clears the thread's last error on success, returning the
remaining items.
"""

from __future__ import annotations

from typing import Any

from gompute_core.errors import (
    AllocFailed,
    GomputeError,
    KernelNotFound,
    ModuleLoadFailed,
    NoDevice,
    SyncFailed,
    Unsupported,
    clear_last_driver_error,
    set_last_driver_error,
)

SUCCESS = 0
NOT_READY = 600
"""``hipErrorNotReady``: a query's "still running", not a failure."""

# codes whose meaning overrides the call site's default error type
_BY_CODE: dict[int, type[GomputeError]] = {
    2: AllocFailed,            # hipErrorOutOfMemory
    100: NoDevice,             # hipErrorNoDevice
    101: NoDevice,             # hipErrorInvalidDevice
    200: ModuleLoadFailed,     # hipErrorInvalidImage
    209: ModuleLoadFailed,     # hipErrorNoBinaryForGpu
    218: ModuleLoadFailed,     # hipErrorInvalidKernelFile
    500: KernelNotFound,       # hipErrorNotFound
    302: KernelNotFound,       # hipErrorSharedObjectSymbolNotFound
    700: SyncFailed,           # hipErrorIllegalAddress: a device fault
    719: SyncFailed,           # hipErrorLaunchFailure
    801: Unsupported,          # hipErrorNotSupported
}


def error_name(code: int) -> str:
    """``"hipErrorInvalidDevice"`` for 101; the number when the enum does not know it."""
    from hip import hip

    try:
        return hip.hipError_t(code).name
    except ValueError:
        return f"hipError {code}"


def code_of(result: Any) -> int:
    """The integer value of a ``hipError_t`` (or ``hiprtcResult``) item."""
    return int(getattr(result, "value", result))


def raise_for(code: int, what: str, default: type[GomputeError]) -> None:
    """Record ``code`` as the thread's last driver error and raise the matching core error."""
    set_last_driver_error("hip", code)
    raise _BY_CODE.get(code, default)(f"{what} failed: {error_name(code)} ({code})")


def check(result: tuple[Any, ...], what: str, default: type[GomputeError]) -> Any:
    """Raise for a failed hip-python ``result``; return its payload (None, one item or a tuple).

    ``what`` names the call for the message (``"hipMalloc(4096)"``); ``default``
    is the error type when the code has no more specific mapping.
    """
    code = code_of(result[0])
    if code != SUCCESS:
        raise_for(code, what, default)
    clear_last_driver_error()
    rest = result[1:]
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else rest

"""Streams, events and graphs (stream capture) on hip-python.

Graph support depends on the HIP runtime: where stream capture is missing or
refused (``hipErrorNotSupported``, or a runtime whose library lacks the
entry point) the call raises ``Unsupported`` naming the runtime's version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gompute_core.backend import Event, Graph, GraphExec, Stream
from gompute_core.errors import (
    CaptureFailed,
    EventFailed,
    GraphFailed,
    InvalidArgument,
    SyncFailed,
    Unsupported,
    clear_last_driver_error,
)

from .errors import NOT_READY, SUCCESS, check, code_of, raise_for

if TYPE_CHECKING:
    from .device import HipDevice


def _graph_call(device: HipDevice, fn: str, *args: Any) -> tuple[Any, ...]:
    """Call graph API ``fn``; a runtime without it is ``Unsupported`` with its version."""
    try:
        return getattr(device.hip, fn)(*args)
    except RuntimeError as exc:  # hip-python's loader: the symbol is absent from libamdhip64
        raise Unsupported(f"{fn} is not available in HIP runtime {device.runtime_version}: "
                          f"{exc}") from exc


def _unsupported_to(device: HipDevice, fn: str, result: tuple[Any, ...],
                    default: type) -> Any:
    if code_of(result[0]) == 801:  # hipErrorNotSupported
        raise_for(801, f"{fn} (HIP runtime {device.runtime_version})", Unsupported)
    return check(result, fn, default)


class HipStream(Stream):
    """An ordered queue of device work (``hipStream_t``); ``handle`` is passed to HIP."""

    def __init__(self, device: HipDevice) -> None:
        self.device = device
        device.make_current()
        self.handle = check(device.hip.hipStreamCreate(), "hipStreamCreate", SyncFailed)

    def synchronize(self) -> None:
        """Wait for all work on this stream; a device fault raises ``SyncFailed``."""
        check(self.device.hip.hipStreamSynchronize(self.handle), "hipStreamSynchronize",
              SyncFailed)

    def query(self) -> bool:
        """True when all work on this stream has finished."""
        result = self.device.hip.hipStreamQuery(self.handle)
        if code_of(result[0]) == NOT_READY:
            return False
        check(result, "hipStreamQuery", SyncFailed)
        return True

    def wait_event(self, event: HipEvent) -> None:
        """Make later work on this stream wait until ``event`` completes."""
        if not isinstance(event, HipEvent):
            raise InvalidArgument(f"wait_event: expected a HIP event, got {type(event).__name__}")
        check(self.device.hip.hipStreamWaitEvent(self.handle, event.handle, 0),
              "hipStreamWaitEvent", EventFailed)

    def begin_capture(self, mode: str = "thread_local") -> None:
        """Start recording this stream's work into a graph instead of running it.

        ``mode``: ``"global"``, ``"thread_local"`` or ``"relaxed"`` (HIP's capture modes).
        """
        modes = self.device.hip.hipStreamCaptureMode
        names = {"global": modes.hipStreamCaptureModeGlobal,
                 "thread_local": modes.hipStreamCaptureModeThreadLocal,
                 "relaxed": modes.hipStreamCaptureModeRelaxed}
        if mode not in names:
            raise InvalidArgument(f"mode: one of {sorted(names)}, got {mode!r}")
        mode = names[mode]
        result = _graph_call(self.device, "hipStreamBeginCapture", self.handle, mode)
        _unsupported_to(self.device, "hipStreamBeginCapture", result, CaptureFailed)

    def end_capture(self) -> HipGraph:
        """Stop recording; return the captured graph."""
        result = _graph_call(self.device, "hipStreamEndCapture", self.handle)
        graph = _unsupported_to(self.device, "hipStreamEndCapture", result, CaptureFailed)
        return HipGraph(self.device, graph)

    def close(self) -> None:
        """Release the stream (idempotent)."""
        if self.handle is not None:
            handle, self.handle = self.handle, None
            check(self.device.hip.hipStreamDestroy(handle), "hipStreamDestroy", SyncFailed)


class HipEvent(Event):
    """A marker in a stream, with timing."""

    def __init__(self, device: HipDevice, timing: bool = True) -> None:
        self.device = device
        device.make_current()
        flags = 0 if timing else int(device.hip.hipEventDisableTiming)
        self.handle = check(device.hip.hipEventCreateWithFlags(flags), "hipEventCreateWithFlags",
                            EventFailed)

    def record(self, stream: HipStream | None = None) -> None:
        """Record the event on ``stream`` (default: the device's stream)."""
        s = stream or self.device.stream
        check(self.device.hip.hipEventRecord(self.handle, s.handle), "hipEventRecord",
              EventFailed)

    def synchronize(self) -> None:
        """Wait until the event has completed."""
        check(self.device.hip.hipEventSynchronize(self.handle), "hipEventSynchronize",
              EventFailed)

    def query(self) -> bool:
        """True when the event has completed."""
        result = self.device.hip.hipEventQuery(self.handle)
        if code_of(result[0]) == NOT_READY:
            return False
        check(result, "hipEventQuery", EventFailed)
        return True

    def elapsed_us(self, start: HipEvent) -> float:
        """Microseconds from ``start`` to this event (both recorded and completed)."""
        ms = check(self.device.hip.hipEventElapsedTime(start.handle, self.handle),
                   "hipEventElapsedTime", EventFailed)
        return float(ms) * 1000.0

    def close(self) -> None:
        """Release the event (idempotent)."""
        if self.handle is not None:
            handle, self.handle = self.handle, None
            check(self.device.hip.hipEventDestroy(handle), "hipEventDestroy", EventFailed)


class HipGraph(Graph):
    """A captured graph; :meth:`instantiate` makes it launchable."""

    def __init__(self, device: HipDevice, handle: Any) -> None:
        self.device = device
        self.handle = handle

    def instantiate(self) -> HipGraphExec:
        """An executable graph."""
        result = _graph_call(self.device, "hipGraphInstantiate", self.handle, None, 0)
        code = code_of(result[0])
        if code != SUCCESS:
            raise_for(code, "hipGraphInstantiate", GraphFailed)
        clear_last_driver_error()
        return HipGraphExec(self.device, result[1])

    def close(self) -> None:
        """Release the graph (idempotent)."""
        if self.handle is not None:
            handle, self.handle = self.handle, None
            check(self.device.hip.hipGraphDestroy(handle), "hipGraphDestroy", GraphFailed)


class HipGraphExec(GraphExec):
    """An instantiated graph: launch it on a stream, or update it from a new capture."""

    def __init__(self, device: HipDevice, handle: Any) -> None:
        self.device = device
        self.handle = handle

    def launch(self, stream: HipStream | None = None) -> None:
        """Enqueue the whole graph on ``stream`` (default: the device's stream)."""
        s = stream or self.device.stream
        check(self.device.hip.hipGraphLaunch(self.handle, s.handle), "hipGraphLaunch",
              GraphFailed)

    def update(self, graph: HipGraph) -> None:
        """Take the parameters of ``graph`` (same topology) without re-instantiating."""
        result = _graph_call(self.device, "hipGraphExecUpdate", self.handle, graph.handle)
        code = code_of(result[0])
        if code != SUCCESS:
            raise_for(code, f"hipGraphExecUpdate ({result[2]!r})", GraphFailed)
        clear_last_driver_error()

    def close(self) -> None:
        """Release the executable graph (idempotent)."""
        if self.handle is not None:
            handle, self.handle = self.handle, None
            check(self.device.hip.hipGraphExecDestroy(handle), "hipGraphExecDestroy",
                  GraphFailed)

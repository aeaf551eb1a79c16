"""Streams, events and CUDA graphs (stream capture; pycuda has no graph API, so the
graph calls go to libcuda through ctypes)."""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any

from gompute_core.backend import Event, Graph, GraphExec, Stream
from gompute_core.errors import (
    CaptureFailed,
    EventFailed,
    GraphFailed,
    InvalidArgument,
    SyncFailed,
)

from .driver import check, cuda, guarded, libcuda

if TYPE_CHECKING:
    from .device import CudaDevice

_CAPTURE_MODES = {"global": 0, "thread_local": 1, "relaxed": 2}


class CudaStream(Stream):
    """An ordered queue of work on one device (a pycuda ``Stream``); ``cptr`` is its
    ``CUstream`` as the ``c_void_p`` the launcher passes."""

    def __init__(self, device: CudaDevice) -> None:
        self.device = device
        with guarded(InvalidArgument, "cuda: creating a stream", device):
            self.handle_obj = cuda().Stream()
        self.handle = int(self.handle_obj.handle)
        self.cptr = ctypes.c_void_p(self.handle)

    def synchronize(self) -> None:
        """Wait for this stream's work; device faults raise ``SyncFailed``."""
        with guarded(SyncFailed, f"cuda: stream synchronize on device {self.device.ordinal}",
                     self.device):
            self.handle_obj.synchronize()

    def query(self) -> bool:
        """True when all work on this stream has finished."""
        with guarded(SyncFailed, "cuda: stream query", self.device):
            return bool(self.handle_obj.is_done())

    def wait_event(self, event: CudaEvent) -> None:
        """Make later work on this stream wait for ``event``."""
        with guarded(EventFailed, "cuda: stream wait_event", self.device):
            self.handle_obj.wait_for_event(event.handle_obj)

    def begin_capture(self, mode: str = "thread_local") -> None:
        """Start recording this stream's work into a graph (nothing runs until launched)."""
        if mode not in _CAPTURE_MODES:
            raise InvalidArgument(f"mode: one of {sorted(_CAPTURE_MODES)}, got {mode!r}")
        with guarded(CaptureFailed, "cuda: begin_capture", self.device):
            check(libcuda().cuStreamBeginCapture_v2(ctypes.c_void_p(self.handle),
                                                    _CAPTURE_MODES[mode]),
                  CaptureFailed, "cuda: cuStreamBeginCapture")

    def end_capture(self) -> CudaGraph:
        """Stop recording; returns the captured :class:`CudaGraph`."""
        graph = ctypes.c_void_p()
        with guarded(CaptureFailed, "cuda: end_capture", self.device):
            check(libcuda().cuStreamEndCapture(ctypes.c_void_p(self.handle),
                                               ctypes.byref(graph)),
                  CaptureFailed, "cuda: cuStreamEndCapture")
        return CudaGraph(self.device, graph)

    def __repr__(self) -> str:
        return f"<CudaStream {self.handle:#x} on device {self.device.ordinal}>"


class CudaEvent(Event):
    """A marker in a stream, with timing."""

    def __init__(self, device: CudaDevice, timing: bool = True) -> None:
        self.device = device
        flags = 0 if timing else cuda().event_flags.DISABLE_TIMING
        with guarded(EventFailed, "cuda: creating an event", device):
            self.handle_obj = cuda().Event(flags)

    def record(self, stream: CudaStream | None = None) -> None:
        """Record the event at the current end of ``stream`` (default: the device's)."""
        s = stream if stream is not None else self.device.stream
        with guarded(EventFailed, "cuda: event record", self.device):
            self.handle_obj.record(s.handle_obj)

    def synchronize(self) -> None:
        """Wait until the event has happened; device faults raise ``SyncFailed``."""
        with guarded(SyncFailed, "cuda: event synchronize", self.device):
            self.handle_obj.synchronize()

    def query(self) -> bool:
        """True when the event has happened."""
        with guarded(EventFailed, "cuda: event query", self.device):
            return bool(self.handle_obj.query())

    def elapsed_us(self, start: CudaEvent) -> float:
        """Microseconds from ``start`` to this event (both recorded and complete)."""
        with guarded(EventFailed, "cuda: event elapsed time", self.device):
            return float(self.handle_obj.time_since(start.handle_obj)) * 1000.0


class CudaGraph(Graph):
    """A captured graph; :meth:`instantiate` makes it launchable."""

    def __init__(self, device: CudaDevice, handle: ctypes.c_void_p) -> None:
        self.device, self.handle = device, handle

    def instantiate(self) -> CudaGraphExec:
        """An executable graph."""
        exe = ctypes.c_void_p()
        with guarded(GraphFailed, "cuda: instantiate", self.device):
            check(libcuda().cuGraphInstantiateWithFlags(ctypes.byref(exe), self.handle,
                                                        ctypes.c_ulonglong(0)),
                  GraphFailed, "cuda: cuGraphInstantiate")
        return CudaGraphExec(self.device, exe)

    def close(self) -> None:
        """Release the driver's object (idempotent; also when garbage collected)."""
        handle, self.handle = getattr(self, "handle", None), None
        if handle and _alive():
            libcuda().cuGraphDestroy(handle)

    __del__ = close


class _UpdateResultInfo(ctypes.Structure):
    _fields_ = [("result", ctypes.c_int), ("errorNode", ctypes.c_void_p),
                ("errorFromNode", ctypes.c_void_p)]


class CudaGraphExec(GraphExec):
    """An instantiated graph: :meth:`launch` replays it, :meth:`update` swaps in a new
    capture of the same topology (new arguments) without re-instantiating."""

    def __init__(self, device: CudaDevice, handle: ctypes.c_void_p) -> None:
        self.device, self.handle = device, handle

    def launch(self, stream: CudaStream | None = None) -> None:
        """Enqueue one replay on ``stream`` (default: the device's)."""
        s = stream if stream is not None else self.device.stream
        with guarded(GraphFailed, "cuda: graph launch", self.device):
            check(libcuda().cuGraphLaunch(self.handle, ctypes.c_void_p(s.handle)),
                  GraphFailed, "cuda: cuGraphLaunch")

    def update(self, graph: CudaGraph) -> None:
        """Take ``graph``'s node parameters (same topology); GraphFailed otherwise."""
        info = _UpdateResultInfo()
        with guarded(GraphFailed, "cuda: graph update", self.device):
            code = libcuda().cuGraphExecUpdate_v2(self.handle, graph.handle, ctypes.byref(info))
            check(code, GraphFailed, f"cuda: cuGraphExecUpdate (update result {info.result})")

    def close(self) -> None:
        """Release the driver's object (idempotent; also when garbage collected)."""
        handle, self.handle = getattr(self, "handle", None), None
        if handle and _alive():
            libcuda().cuGraphExecDestroy(handle)

    __del__ = close


def _alive() -> bool:
    """False once the interpreter is shutting down (the driver may be gone)."""
    import sys

    return not sys.is_finalizing()


def stream_arg(stream: Any) -> Any:
    """The pycuda stream object behind ``stream`` (a CudaStream or None)."""
    return None if stream is None else stream.handle_obj

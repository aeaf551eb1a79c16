"""Streams, events and graphs of a GPU device, and the one lifetime policy of every native
object the device makes.

Lifetime: each native object (buffer, stream, event, graph, executable graph) is
released exactly once, by whichever comes first: its ``close()`` (``free()`` for a
buffer), the garbage collection of its Python object (a ``weakref.finalize``), or the
device's ``close()``, which releases everything still alive before the context goes.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...errors import GomputeError, InvalidArgument
from ..streams import Event, Graph, GraphExec, Stream

if TYPE_CHECKING:
    from .device import GpuDevice

CAPTURE_MODES = ("global", "thread_local", "relaxed")
"""Stream capture modes (the driver's three, by name)."""


class Lifetimes:
    """The live native objects of one device, each with its release (a finalizer)."""

    def __init__(self) -> None:
        self._live: dict[int, weakref.finalize] = {}
        self._keys = itertools.count()
        self._lock = threading.Lock()

    def track(self, owner: object, release: Callable[[Any], None],
              handle: Any) -> weakref.finalize:
        """Release ``handle`` with ``release`` once: when the returned finalizer is called,
        when ``owner`` is collected, or at :meth:`close`."""
        key = next(self._keys)
        fin = weakref.finalize(owner, self._release, key, release, handle)
        fin.atexit = False  # the device's close runs at exit, while the driver is there
        with self._lock:
            self._live[key] = fin
        return fin

    def _release(self, key: int, release: Callable[[Any], None], handle: Any) -> None:
        with self._lock:
            self._live.pop(key, None)
        release(handle)

    def __len__(self) -> int:
        return len(self._live)

    def close(self) -> None:
        """Release every live object, newest first (a failure does not stop the rest)."""
        with self._lock:
            finalizers = list(self._live.values())[::-1]
        for fin in finalizers:
            with contextlib.suppress(GomputeError):
                fin()


class GpuStream(Stream):
    """An ordered queue of work on one device; ``handle`` is the native stream the driver
    takes, ``address`` the int other libraries know it by."""

    def __init__(self, device: GpuDevice) -> None:
        self.device = device
        driver = device.driver
        device.enter()
        self.handle = driver.stream_create()
        self.address = driver.stream_address(self.handle)
        self._fin = device.track(self, driver.stream_destroy, self.handle)

    def synchronize(self) -> None:
        """Wait for this stream's work; a device fault raises ``SyncFailed``."""
        self.device.enter()
        self.device.driver.stream_synchronize(self.handle)

    def query(self) -> bool:
        """True when all work on this stream has finished."""
        self.device.enter()
        return self.device.driver.stream_query(self.handle)

    def wait_event(self, event: GpuEvent) -> None:
        """Make later work on this stream wait for ``event``."""
        if not isinstance(event, GpuEvent) or event.device is not self.device:
            raise InvalidArgument(f"wait_event: expected an event of {self.device!r}, got "
                                  f"{event!r}")
        self.device.enter()
        self.device.driver.stream_wait_event(self.handle, event.handle)

    def begin_capture(self, mode: str = "thread_local") -> None:
        """Start recording this stream's work into a graph (nothing runs until launched);
        ``mode``: ``"global"``, ``"thread_local"`` or ``"relaxed"``."""
        if mode not in CAPTURE_MODES:
            raise InvalidArgument(f"mode: one of {sorted(CAPTURE_MODES)}, got {mode!r}")
        self.device.enter()
        self.device.driver.begin_capture(self.handle, mode)

    def end_capture(self) -> GpuGraph:
        """Stop recording; the captured :class:`GpuGraph`."""
        self.device.enter()
        return GpuGraph(self.device, self.device.driver.end_capture(self.handle))

    def close(self) -> None:
        """Release the stream (idempotent; also when collected or the device closes)."""
        self._fin()

    def __repr__(self) -> str:
        return f"<GpuStream {self.address:#x} of {self.device.backend}:{self.device.ordinal}>"


class GpuEvent(Event):
    """A marker in a stream, with timing unless made with ``timing=False``."""

    def __init__(self, device: GpuDevice, timing: bool = True) -> None:
        self.device = device
        device.enter()
        self.handle = device.driver.event_create(timing)
        self._fin = device.track(self, device.driver.event_destroy, self.handle)

    def record(self, stream: GpuStream | None = None) -> None:
        """Record the event at the current end of ``stream`` (default: the device's)."""
        s = self.device.stream if stream is None else stream
        if getattr(s, "device", None) is not self.device:
            raise InvalidArgument(f"record: stream {s!r} does not belong to this event's "
                                  f"device ({self.device!r})")
        self.device.enter()
        self.device.driver.event_record(self.handle, s.handle)

    def synchronize(self) -> None:
        """Wait until the event has happened; device faults raise ``SyncFailed``."""
        self.device.enter()
        self.device.driver.event_synchronize(self.handle)

    def query(self) -> bool:
        """True when the event has happened."""
        self.device.enter()
        return self.device.driver.event_query(self.handle)

    def elapsed_us(self, start: GpuEvent) -> float:
        """Microseconds from ``start`` to this event (both recorded and complete)."""
        if not isinstance(start, GpuEvent) or start.device is not self.device:
            raise InvalidArgument(f"elapsed_us: start must be an event of {self.device!r}, "
                                  f"got {start!r}")
        self.device.enter()
        return self.device.driver.event_elapsed_ms(start.handle, self.handle) * 1000.0

    def close(self) -> None:
        """Release the event (idempotent; also when collected or the device closes)."""
        self._fin()


class GpuGraph(Graph):
    """A captured graph; :meth:`instantiate` makes it launchable."""

    def __init__(self, device: GpuDevice, handle: Any) -> None:
        self.device, self.handle = device, handle
        self._fin = device.track(self, device.driver.graph_destroy, handle)

    def instantiate(self) -> GpuGraphExec:
        """An executable graph."""
        self.device.enter()
        return GpuGraphExec(self.device, self.device.driver.graph_instantiate(self.handle))

    def close(self) -> None:
        """Release the graph (idempotent)."""
        self._fin()


class GpuGraphExec(GraphExec):
    """An instantiated graph: :meth:`launch` replays it, :meth:`update` swaps in a new
    capture of the same topology (new arguments) without re-instantiating."""

    def __init__(self, device: GpuDevice, handle: Any) -> None:
        self.device, self.handle = device, handle
        self._fin = device.track(self, device.driver.graph_exec_destroy, handle)

    def launch(self, stream: GpuStream | None = None) -> None:
        """Enqueue one replay on ``stream`` (default: the device's)."""
        s = self.device.stream if stream is None else stream
        self.device.enter()
        self.device.driver.graph_launch(self.handle, s.handle)

    def update(self, graph: GpuGraph) -> None:
        """Take ``graph``'s node parameters (same topology); ``GraphFailed`` otherwise."""
        self.device.enter()
        self.device.driver.graph_update(self.handle, graph.handle)

    def close(self) -> None:
        """Release the executable graph (idempotent)."""
        self._fin()

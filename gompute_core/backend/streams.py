"""Streams, events and graphs: the base classes a backend's queues subclass.

:class:`ImmediateStream` and :class:`ImmediateEvent` are complete for a device
whose every operation is done when its call returns (a host device).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from ..errors import EventFailed, InvalidArgument, Unsupported

if TYPE_CHECKING:
    from .device import Device


class Stream:
    """An ordered queue of work on one device (``device`` says which).

    A backend's stream implements ``synchronize``, ``query`` and ``wait_event``
    (the defaults are those of a device whose every operation is done when its
    call returns), ``begin_capture``/``end_capture`` where it declares
    ``"graphs"``, and ``close`` when it holds a driver object.
    """

    device: Device

    def synchronize(self) -> None:  # noqa: B027 - immediate devices have nothing to wait for
        """Wait for all work on this stream; a device fault raises ``SyncFailed``."""

    def query(self) -> bool:
        """True when all work on this stream has finished."""
        return True

    def wait_event(self, event: Event) -> None:  # noqa: B027 - immediate: nothing pending
        """Make work enqueued later on this stream wait for ``event``."""

    def close(self) -> None:  # noqa: B027 - optional: a stream may hold no driver object
        """Release the driver's stream (idempotent; the stream is unusable afterwards)."""

    def begin_capture(self, mode: str = "thread_local") -> None:
        """Start recording this stream's work into a graph (capability ``"graphs"``;
        ``Unsupported`` naming it on a device that does not declare it)."""
        raise Unsupported(f"backend {self.device.backend!r} does not provide graphs "
                          "(capability 'graphs'): streams cannot be captured")

    def end_capture(self) -> Any:
        """Stop recording and return the captured graph (capability ``"graphs"``)."""
        raise Unsupported(f"backend {self.device.backend!r} does not provide graphs "
                          "(capability 'graphs'): streams cannot be captured")


class ImmediateStream(Stream):
    """The stream of a device whose every operation is done when its call returns."""

    def __init__(self, device: Device) -> None:
        self.device = device

    def __repr__(self) -> str:
        return f"<ImmediateStream of {self.device.backend}:{self.device.ordinal}>"


class Event(ABC):
    """A marker in a stream (capability ``"events"``; ``Device.create_event(timing)``)."""

    device: Device

    @abstractmethod
    def record(self, stream: Stream | None = None) -> None:
        """Mark the current end of ``stream`` (default: the device's)."""

    @abstractmethod
    def synchronize(self) -> None:
        """Wait until the work before the event has finished (``SyncFailed`` on a fault)."""

    @abstractmethod
    def query(self) -> bool:
        """True when the work before the event has finished."""

    @abstractmethod
    def elapsed_us(self, start: Event) -> float:
        """Microseconds from ``start``'s record to this event's (``EventFailed`` when either
        was created with ``timing=False`` or never recorded)."""

    def close(self) -> None:  # noqa: B027 - optional: an event may hold no driver object
        """Release the driver's event (idempotent)."""


class Graph(ABC):
    """Work captured from a stream (``Stream.end_capture()``, capability ``"graphs"``)."""

    device: Device

    @abstractmethod
    def instantiate(self) -> GraphExec:
        """An executable graph of this capture."""

    def close(self) -> None:  # noqa: B027 - optional: a graph may hold no driver object
        """Release the driver's graph (idempotent)."""


class GraphExec(ABC):
    """An instantiated :class:`Graph`: replayed by :meth:`launch`."""

    device: Device

    @abstractmethod
    def launch(self, stream: Stream | None = None) -> None:
        """Enqueue one replay on ``stream`` (default: the device's)."""

    @abstractmethod
    def update(self, graph: Graph) -> None:
        """Take ``graph``'s node parameters (same topology); ``GraphFailed`` otherwise."""

    def close(self) -> None:  # noqa: B027 - optional: may hold no driver object
        """Release the driver's executable graph (idempotent)."""


class ImmediateEvent(Event):
    """An event of a device whose every operation is done when its call returns.

    ``record`` reads the host's monotonic clock: all work enqueued before it
    has already finished, so the reading is when the stream reached the
    event, and ``elapsed_us`` is the difference of two readings (host time,
    including the Python overhead of the calls in between). ``synchronize``
    waits for nothing and ``query`` is always True.
    """

    def __init__(self, device: Device, timing: bool = True) -> None:
        self.device = device
        self.timing = timing
        self._ns: int | None = None

    def record(self, stream: Stream | None = None) -> None:
        """Mark the current end of ``stream`` (default: the device's)."""
        s = self.device.stream if stream is None else stream
        if getattr(s, "device", None) is not self.device:
            raise InvalidArgument(f"record: stream {s!r} does not belong to this event's "
                                  f"device ({self.device!r})")
        self._ns = time.perf_counter_ns()

    def synchronize(self) -> None:
        """Nothing to wait for: the work before the event already completed."""

    def query(self) -> bool:
        """True: the work before the event already completed."""
        return True

    def elapsed_us(self, start: ImmediateEvent) -> float:
        """Microseconds of host time from ``start``'s record to this event's."""
        if not isinstance(start, ImmediateEvent) or start.device is not self.device:
            raise InvalidArgument(f"elapsed_us: start must be an event of {self.device!r}, "
                                  f"got {start!r}")
        if not (self.timing and start.timing):
            raise EventFailed("elapsed_us: an event created with timing=False has no time")
        if self._ns is None or start._ns is None:
            which = "this event" if self._ns is None else "start"
            raise EventFailed(f"elapsed_us: {which} was never recorded")
        return (self._ns - start._ns) / 1000.0

    def __repr__(self) -> str:
        return f"<ImmediateEvent of {self.device.backend}:{self.device.ordinal}>"

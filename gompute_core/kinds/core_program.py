"""``CoreProgram``: what the programs of raw kernels the core writes for a spec share.

A scan (:mod:`.scan_program`) and a checked reduce (:mod:`.reduce_checked`) run as raw
kernels the core generates, not as an entry a backend renders. Their loaded programs
keep the spec, the device, a stream ``launch`` and ``run`` enqueue on, and a lock, and
their ``launch`` front ends check the params and each buffer the same way: this class.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from ..backend.buffer import Buffer
from ..errors import InvalidArgument
from ..interop import as_buffer
from .base import Kind, kind_named
from .program import device_stream

if TYPE_CHECKING:
    from ..backend.device import Device, Stream
    from ..specs import Spec


class CoreProgram:
    """A spec's core-written raw kernels on one device: the state and checks they share
    (subclasses load the kernels)."""

    def __init__(self, device: Device, spec: Spec, checked: bool) -> None:
        self.device, self.spec = device, spec
        self.kind: Kind = kind_named(spec.kind)
        self.checked = checked
        """Whether the raw kernels are checked (``synchronize`` and ``run`` raise the
        first fault of ``pre`` or ``combine``)."""
        self.block_size = spec.block_size
        self.dtypes = {"T": np.dtype(spec.T)}
        self._stream: Stream = device.stream
        self._lock = threading.RLock()
        """Held across a launch's plan (the scratch is shared) and a host ``run``."""
        self._scratch: dict[str, Buffer] = {}
        """The plan's scratch buffers of ``T`` by name (:meth:`scratch`)."""
        self._P = spec.params

    @property
    def stream(self) -> Stream:
        """The stream the program's kernels are enqueued on."""
        return self._stream

    @stream.setter
    def stream(self, value: Stream) -> None:
        """Enqueue later launches on ``value``, after waiting for the launches already on
        the old stream: they use the program's scratch (a scan's flags and ticket counter,
        totals), which a launch on another stream must not overlap."""
        new = device_stream(self.device, value)
        with self._lock:
            if new is not self._stream:
                self._stream.synchronize()
            self._stream = new

    # ---- scratch -----------------------------------------------------------------------------
    def scratch(self, name: str, count: int) -> Buffer:
        """Scratch buffer ``name`` of at least ``count`` elements of ``T``: kept between
        launches, grown (after the launches using the old one) when a launch needs more,
        freed by :meth:`free_scratch`. Call it holding the lock."""
        dtype = self.dtypes["T"]
        buf = self._scratch.get(name)
        if buf is None or buf.nbytes < count * dtype.itemsize:
            if buf is not None:
                self._stream.synchronize()
                buf.free()
            buf = self._scratch[name] = self.device.alloc(max(count, 64) * dtype.itemsize)
            buf.dtype = dtype
        return buf

    def free_scratch(self) -> None:
        """Free every scratch buffer (``close``)."""
        with self._lock:
            for buf in self._scratch.values():
                buf.free()
            self._scratch = {}

    # ---- the front end's checks ------------------------------------------------------------
    def check_params(self, p: Any) -> None:
        """``p`` must be a ``P`` instance (None when the spec has no params)."""
        P = self._P
        if P is None:
            if p is not None:
                raise InvalidArgument(f"launch: spec {self.spec.name!r} has no params (P is "
                                      f"None), got {type(p).__name__}")
        elif not isinstance(p, P):
            raise InvalidArgument(f"launch: spec {self.spec.name!r} takes a {P.__qualname__} "
                                  f"instance, got {type(p).__name__}")

    def operand(self, buf: Any, n: int, name: str = "data") -> Buffer:
        """``buf`` (the launch's argument ``name``) as a buffer of this device holding
        ``n`` elements of ``T``."""
        if not isinstance(buf, Buffer):
            buf = as_buffer(buf, self.device.backend)
        if buf.device is not self.device:
            raise InvalidArgument(f"launch: {name} is a buffer of {buf.device!r}; this kernel "
                                  f"runs on {self.device!r}")
        if buf.freed:
            raise InvalidArgument(f"launch: {name} is a buffer used after free()")
        size = self.dtypes["T"].itemsize
        if n * size > buf.nbytes:
            raise InvalidArgument(f"launch: {name} holds {buf.nbytes // size} elements, the "
                                  f"launch needs {n}")
        if getattr(buf, "dtype", None) != self.dtypes["T"]:
            buf.dtype = self.dtypes["T"]
        return buf

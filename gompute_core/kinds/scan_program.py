"""``ScanProgram``: a scan spec loaded on one device, as the raw kernels of one of its
two plans (:mod:`.scan_device`).

``launch`` (the kind's front end, :mod:`.scan`) checks the buffer and count, then
:meth:`ScanProgram.enqueue` launches the plan on the program's stream: the one-pass
tile scan with look-back (one block per tile) where the device runs it, else the three
passes (tile totals, their prefixes, the tiles scanned onto them). The plan's scratch
(flags, totals and the ticket counter; or the totals and prefixes) lives in buffers the
program keeps (grown on the first launch of a larger ``n``, freed by ``close``). ``run``
scans the caller's array in place: on a host-memory device and for a device array
directly, otherwise through a device buffer (upload, scan, download).

A host-memory device (capability ``host_memory``) scans the caller's array through
``Device.borrow``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..backend.buffer import Buffer
from ..plugins import manager
from ..raw.launch import RawKernel
from .core_program import CoreProgram
from .foreign import DeviceArray
from .scan import tiling
from .scan_device import TICKET_MASK, NoParams, scan_kernels, slot_type
from .support import backend_features

if TYPE_CHECKING:
    from ..backend.device import Device
    from ..specs import Spec

_NO_PARAMS = NoParams(unused=0)
ONE_PASS_FEATURES = frozenset({"barriers", "shared_memory", "atomics"})
"""What the one-pass plan's kernel uses; a host-memory device runs the three passes (its
threads walk memory in order, and a spinning look-back would hold one of few cores)."""


def one_pass_runs_on(device: Device) -> bool:
    """True when ``device`` runs the one-pass plan by default."""
    features = backend_features(manager.record(device.backend).info)
    return ONE_PASS_FEATURES <= features and not device.has("host_memory")


class ScanProgram(CoreProgram):
    """A scan's raw kernels on one device; ``launch`` is the kind's checked front end."""

    def __init__(self, device: Device, spec: Spec, one_pass: bool | None = None, *,
                 checked: bool = False) -> None:
        super().__init__(device, spec, checked)
        made = scan_kernels(spec)
        backend, ordinal = device.backend, device.ordinal
        self.one_pass = one_pass_runs_on(device) if one_pass is None else one_pass
        """The plan (``one_pass``; default: by the device, :func:`one_pass_runs_on`): one
        launch with look-back, or three passes. Both compute the documented order."""
        if self.one_pass:
            self._kernels = (RawKernel(made.tiles, backend, ordinal, checked=checked),)
        else:
            self._kernels = tuple(RawKernel(k, backend, ordinal, checked=checked)
                                  for k in (made.totals, made.carries, made.apply))
        self.artifact = self._kernels[0].artifact
        self.tiling = tiling(spec)
        self._scratch: dict[str, Buffer] = {}
        self._tickets = 0  # tickets handed out since the counter was zeroed
        self._cleared = 0  # the ticket count when the flags were last zeroed
        self._data: Buffer | None = None
        self.launch = self.kind.launch(self)
        """The kind's checked launch, bound to this program."""

    # ---- the plan ------------------------------------------------------------------------------
    def enqueue(self, data: Buffer, n: int, p: Any) -> None:
        """Enqueue the scan of ``data[:n]`` (checked) on the program's stream."""
        tiles = self.tiling.tiles(n)
        q = _NO_PARAMS if p is None else p
        inclusive = int(self.spec.inclusive)
        with self._lock:
            s = self._stream
            if self.one_pass:
                scratch = self._one_pass_scratch(tiles)
                base = self._tickets & 0xFFFFFFFF
                self._kernels[0].launch(tiles, self.tiling.threads, [
                    data, n, scratch["flags"], scratch["aggregates"], scratch["prefixes"],
                    scratch["counter"], base, inclusive, q], stream=s)
                self._tickets += tiles
                return
            totals, carries, apply = self._kernels
            scratch = self._three_pass_scratch(n, tiles)
            bs = self.block_size
            grid = -(-tiles // bs)
            runs = scratch["runs"]
            totals.launch(grid, bs, [data, n, runs, scratch["aggregates"], inclusive, q],
                          stream=s)
            carries.launch(1, 1, [scratch["aggregates"], scratch["prefixes"], tiles], stream=s)
            apply.launch(grid, bs, [data, n, runs, scratch["prefixes"]], stream=s)

    def _buffer(self, name: str, count: int, dtype: Any, zeroed: bool = False) -> Buffer:
        """Scratch buffer ``name`` of at least ``count`` elements (grown as needed, after
        the launches using the old one; a new one zeroed when asked)."""
        buf = self._scratch.get(name)
        if buf is None or buf.nbytes < count * np.dtype(dtype).itemsize:
            if buf is not None:
                self._stream.synchronize()
                buf.free()
            buf = self._scratch[name] = self._kernels[0].alloc(max(count, 64), dtype)
            if zeroed:
                buf.upload(np.zeros(max(count, 64), dtype))
        return buf

    def _one_pass_scratch(self, tiles: int) -> dict[str, Buffer]:
        """Flags, totals, prefixes and the ticket counter for ``tiles`` tiles. A flag keeps
        30 bits of its ticket, so the flags are zeroed again before a launch whose tickets
        could match a flag written since they were last zeroed (every 2**30 tickets)."""
        self._buffer("counter", 1, np.uint32, zeroed=True)  # counts self._tickets
        old = self._scratch.get("flags")
        flags = self._buffer("flags", tiles, np.uint32, zeroed=True)
        if flags is not old:
            self._cleared = self._tickets
        elif self._tickets + tiles - self._cleared > TICKET_MASK:
            self._stream.synchronize()
            flags.upload(np.zeros(flags.nbytes // 4, np.uint32))
            self._cleared = self._tickets
        W = slot_type(self.spec.T)
        self._buffer("aggregates", tiles, W)
        self._buffer("prefixes", tiles, W)
        return self._scratch

    def _three_pass_scratch(self, n: int, tiles: int) -> dict[str, Buffer]:
        """The runs' totals, the tiles' totals and their prefixes."""
        self._buffer("runs", -(-n // self.tiling.items), self.spec.T)
        self._buffer("aggregates", tiles, self.spec.T)
        self._buffer("prefixes", tiles, self.spec.T)
        return self._scratch

    def run(self, original: Any, data: Any, p: Any) -> None:
        """``Kernel.run``: scan ``data`` (checked by the front end; ``original`` as the
        caller passed it) in place, and wait for it."""
        n = data.size
        if type(data) is DeviceArray:
            self.enqueue(self.operand(original, n), n, p)
            self._stream.synchronize()
        elif self.device.has("host_memory"):  # the caller's array itself
            self.enqueue(self.operand(self.device.borrow(data), n), n, p)
            self._stream.synchronize()
        else:  # a host array on a device: through the program's data buffer
            with self._lock:
                buf = self._data
                if buf is None or buf.nbytes < data.nbytes:
                    if buf is not None:
                        buf.free()
                    buf = self._data = self._kernels[0].alloc(n, self.spec.T)
                buf.upload(data)
                self.enqueue(buf, n, p)
                self._stream.synchronize()
                buf.download(data)
        if self.checked:
            self.synchronize()

    def synchronize(self) -> None:
        """Wait for the device; checked, raise the first fault of one of the scan's kernels
        since the last synchronization (``OutOfBounds`` naming ``pre``'s or ``combine``'s
        array and line)."""
        self.device.synchronize()
        for kernel in self._kernels:
            kernel.raise_faults()

    def close(self) -> None:
        """Free the scratch buffers (``Kernel.close``)."""
        with self._lock:
            for buf in self._scratch.values():
                buf.free()
            self._scratch = {}
            if self._data is not None:
                self._data.free()
                self._data = None

    def __repr__(self) -> str:
        return f"<ScanProgram {self.spec.name!r} on {self.device!r}>"

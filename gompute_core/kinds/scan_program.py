"""``ScanProgram``: a scan spec loaded on one device, as the three raw kernels of one of
its two plans (:mod:`.scan_device`).

``launch`` (the kind's front end, :mod:`.scan`) checks the buffer and count, then
:meth:`ScanProgram.enqueue` launches the plan's passes on the program's stream: the
tiles' totals, their left fold, the tiles scanned onto their carries; by blocks (one
block per tile, through shared memory) where the device has barriers and shared memory
and is not host memory, else by threads (one thread per tile). The totals and prefixes
(and the by-threads plan's run totals) live in scratch buffers the program keeps (grown
on the first launch of a larger ``n``, freed by ``close``). ``run`` scans the caller's
array in place: on a host-memory device and for a device array directly, otherwise
through a device buffer (upload, scan, download).

A host-memory device (capability ``host_memory``) scans the caller's array through
``Device.borrow``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..backend.buffer import Buffer
from ..plugins import manager
from ..raw.launch import RawKernel
from .core_program import CoreProgram
from .foreign import DeviceArray
from .scan import tiling
from .scan_device import NoParams, scan_kernels
from .support import backend_features

if TYPE_CHECKING:
    from ..backend.device import Device
    from ..specs import Spec

_NO_PARAMS = NoParams(unused=0)
BY_BLOCKS_FEATURES = frozenset({"barriers", "shared_memory"})
"""What the by-blocks plan's kernels use; a host-memory device runs the plan by threads
(its threads walk memory in order, a block's threads run one after another)."""


def by_blocks_runs_on(device: Device) -> bool:
    """True when ``device`` runs the by-blocks plan by default."""
    features = backend_features(manager.record(device.backend).info)
    return BY_BLOCKS_FEATURES <= features and not device.has("host_memory")


class ScanProgram(CoreProgram):
    """A scan's raw kernels on one device; ``launch`` is the kind's checked front end."""

    def __init__(self, device: Device, spec: Spec, by_blocks: bool | None = None, *,
                 checked: bool = False) -> None:
        super().__init__(device, spec, checked)
        made = scan_kernels(spec)
        self.by_blocks = by_blocks_runs_on(device) if by_blocks is None else by_blocks
        """The plan (``by_blocks``; default: by the device, :func:`by_blocks_runs_on`):
        a block per tile through shared memory, or a thread per tile. Both compute the
        documented order."""
        self._kernels = tuple(RawKernel(k, device.backend, device.ordinal, checked=checked)
                              for k in (made.by_blocks if self.by_blocks else made.by_threads))
        self.artifact = self._kernels[0].artifact
        self.tiling = tiling(spec)
        self._data: Buffer | None = None
        self.launch = self.kind.launch(self)
        """The kind's checked launch, bound to this program."""

    # ---- the plan ------------------------------------------------------------------------------
    def enqueue(self, data: Buffer, n: int, p: Any) -> None:
        """Enqueue the scan of ``data[:n]`` (checked) on the program's stream."""
        tiles = self.tiling.tiles(n)
        q = _NO_PARAMS if p is None else p
        inclusive = int(self.spec.inclusive)
        totals, carries, apply = self._kernels
        with self._lock:
            s = self._stream
            aggregates = self.scratch("aggregates", tiles)
            prefixes = self.scratch("prefixes", tiles)
            if self.by_blocks:
                threads = self.tiling.threads
                totals.launch(tiles, threads, [data, n, aggregates, prefixes, inclusive, q],
                              stream=s)
                carries.launch(1, threads, [aggregates, prefixes, tiles], stream=s)
                apply.launch(tiles, threads, [data, n, aggregates, prefixes, inclusive, q],
                             stream=s)
                return
            runs = self.scratch("runs", -(-n // self.tiling.items))
            grid = -(-tiles // self.block_size)
            totals.launch(grid, self.block_size, [data, n, runs, aggregates, inclusive, q],
                          stream=s)
            carries.launch(1, 1, [aggregates, prefixes, tiles], stream=s)
            apply.launch(grid, self.block_size, [data, n, runs, prefixes], stream=s)

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
        self.free_scratch()
        with self._lock:
            if self._data is not None:
                self._data.free()
                self._data = None

    def __repr__(self) -> str:
        return f"<ScanProgram {self.spec.name!r} on {self.device!r}>"

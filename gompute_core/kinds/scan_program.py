"""``ScanProgram``: a scan spec loaded on one device, as its three raw kernels.

``launch`` (the kind's front end, :mod:`.scan`) checks the buffer and count,
then :meth:`ScanProgram.enqueue` launches the plan of :func:`.scan.levels`:
the chunk scans from the data up (each level's totals are the next level's
data), then the fix-ups from the top down, all on the program's stream. The
totals of every level live in scratch buffers the program keeps (grown on the
first launch of a larger ``n``, freed by ``close``). ``run`` scans the caller's
array in place: on a host-memory device and for a device array directly,
otherwise through a device buffer (upload, scan, download).

A host-memory device (capability ``host_memory``) scans the caller's array through
``Device.borrow``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..backend.buffer import Buffer
from ..raw.launch import RawKernel
from .core_program import CoreProgram
from .foreign import DeviceArray
from .scan import levels
from .scan_device import NoParams, scan_kernels

if TYPE_CHECKING:
    from ..backend.device import Device
    from ..specs import Spec

_NO_PARAMS = NoParams(unused=0)


class ScanProgram(CoreProgram):
    """A scan's raw kernels on one device; ``launch`` is the kind's checked front end."""

    def __init__(self, device: Device, spec: Spec, per_element: bool | None = None, *,
                 checked: bool = False) -> None:
        super().__init__(device, spec, checked)
        first, upper, fix, fix_each = scan_kernels(spec)
        backend, ordinal = device.backend, device.ordinal
        self._first = RawKernel(first, backend, ordinal, checked=checked)
        self._upper = RawKernel(upper, backend, ordinal, checked=checked)
        self.fix_per_element = not device.has("host_memory") if per_element is None \
            else per_element
        """The fix-up's shape (``per_element``; default: by the device): one thread per
        element (a GPU: neighbouring threads touch neighbouring elements) or per chunk (a
        host device: memory walked in order). Both compute ``combine(C_{c-1}, e_i)``."""
        self._fix = RawKernel(fix_each if self.fix_per_element else fix, backend, ordinal,
                              checked=checked)
        self.artifact = self._first.artifact
        self._totals: list[Buffer] = []
        self._data: Buffer | None = None
        self.launch = self.kind.launch(self)
        """The kind's checked launch, bound to this program."""

    # ---- the plan ------------------------------------------------------------------------------
    def enqueue(self, data: Buffer, n: int, p: Any) -> None:
        """Enqueue the scan of ``data[:n]`` (checked) on the program's stream."""
        plan = levels(n)
        q = _NO_PARAMS if p is None else p
        bs = self.block_size
        with self._lock:
            totals = self._scratch(plan)
            s = self._stream
            below = [data]
            for k, (count, chunk, chunks) in enumerate(plan):
                grid = -(-chunks // bs)
                if k == 0:
                    self._first.launch(grid, bs, [data, count, totals[0], chunk,
                                                  int(self.spec.inclusive), q], stream=s)
                else:
                    self._upper.launch(grid, bs, [below[k], count, totals[k], chunk], stream=s)
                below.append(totals[k])
            for k in range(len(plan) - 2, -1, -1):
                count, chunk, chunks = plan[k]
                threads = count - chunk if self.fix_per_element else chunks - 1
                self._fix.launch(-(-threads // bs), bs, [below[k], count, totals[k], chunk],
                                 stream=s)

    def _scratch(self, plan: tuple[tuple[int, int, int], ...]) -> list[Buffer]:
        """One buffer of totals per level, grown as needed."""
        T = self.spec.T
        for k, (_, _, chunks) in enumerate(plan):
            if k == len(self._totals):
                self._totals.append(self._first.alloc(max(chunks, 64), T))
            elif self._totals[k].nbytes < chunks * self.dtypes["T"].itemsize:
                self._totals[k].free()
                self._totals[k] = self._first.alloc(chunks, T)
        return self._totals

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
                    buf = self._data = self._first.alloc(n, self.spec.T)
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
        for kernel in (self._first, self._upper, self._fix):
            kernel.raise_faults()

    def close(self) -> None:
        """Free the scratch buffers (``Kernel.close``)."""
        with self._lock:
            for buf in self._totals:
                buf.free()
            self._totals = []
            if self._data is not None:
                self._data.free()
                self._data = None

    def __repr__(self) -> str:
        return f"<ScanProgram {self.spec.name!r} on {self.device!r}>"

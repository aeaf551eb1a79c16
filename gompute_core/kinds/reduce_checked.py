"""Checked mode for the ``reduce`` kind: ``CheckedReduce``, a reduce spec as the core's raw
kernels (:mod:`.reduce_device`), instrumented.

A reduce's entry is rendered by each backend, which cannot pass it a fault record; checked,
the spec runs as core-written raw kernels that fold the data by chunks
(:func:`.reduce_device.levels`): level 0 folds ``pre(x)`` of each chunk left to right from the
identity into a total, each level above folds the totals below it left to right, and the
top level's one total is the result. The data are only read, so no copy is made.

**Order of operations.** That order is not the unchecked reduce's: each backend folds in
its own order (the CPU's sub-chunks, a GPU's lanes and shared-memory tree; presets may
reassociate), which the core does not know. A float result of a checked reduce may
therefore differ from the unchecked one in its last bits; integers (which wrap) and any
exactly associative combine give the same value. Checked mode is for finding faults; the
unchecked kernel's bits are the reference.

The kind's front ends are kept: ``launch(data, n, partials, blocks, p)`` writes the total
to ``partials[0]`` and the identity to ``partials[1:blocks]`` (all of them for ``n == 0``),
so folding the partials on the host (``Kernel.fold``) gives the total; ``run(data, p)``
(through :meth:`CheckedReduce.reduce`) returns it as a ``T`` scalar and raises the first
fault of ``pre`` or ``combine`` at its end.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..raw.launch import RawKernel
from .base import launch_count
from .core_program import CoreProgram
from .foreign import DeviceArray, order_after, order_before
from .reduce import MAX_REDUCE_BLOCKS, refused_blocks
from .reduce_device import levels, reduce_kernels
from .scan_device import NoParams

if TYPE_CHECKING:
    from ..backend.buffer import Buffer
    from ..backend.device import Device

_NO_PARAMS = NoParams(unused=0)


class CheckedReduce(CoreProgram):
    """A reduce spec on ``device``, checked: the raw kernels of :mod:`.reduce_device`
    behind the kind's ``launch`` and ``run`` (module docstring)."""

    def __init__(self, device: Device, spec: Any) -> None:
        super().__init__(device, spec, True)
        first, upper, fill = reduce_kernels(spec)
        backend, ordinal = device.backend, device.ordinal
        self._first = RawKernel(first, backend, ordinal, checked=True)
        self._upper = RawKernel(upper, backend, ordinal, checked=True)
        self._fill = RawKernel(fill, backend, ordinal, checked=True)
        self.artifact = self._first.artifact
        """The first level's artifact (``Kernel.artifact``)."""
        self._data: Buffer | None = None
        """``run``'s upload of a host array to a device that does not compute on it."""
        self._result: Buffer | None = None
        """Where ``run``'s top level writes the total."""

    @property
    def runner(self) -> CheckedReduce:
        """What ``Kernel.run``'s front end hands the validated data to: this program
        (:meth:`reduce`), not a :class:`~.run.Runner`."""
        return self

    # ---- launch ----------------------------------------------------------------------------
    def launch(self, data: Any, n: Any, partials: Any, blocks: Any, p: Any = None) -> None:
        """The kind's ``launch(data, n, partials, blocks, p)``: the total of ``data[:n]`` to
        ``partials[0]``, the identity to the other ``blocks - 1`` partials, enqueued
        without synchronizing; a fault raises at :meth:`synchronize`."""
        n, blocks = launch_count(n, "n"), launch_count(blocks, "blocks")
        self.check_params(p)
        if blocks == 0 and n == 0:
            return
        if not 1 <= blocks <= MAX_REDUCE_BLOCKS:
            raise refused_blocks(blocks, n)
        data = self.operand(data, n)
        out = self.operand(partials, blocks, "partials")
        with self._lock:
            if n:
                self.enqueue(data, n, out, p)
            first = 1 if n else 0
            if blocks > first:
                bs = self.block_size
                self._fill.launch(-(-(blocks - first) // bs), bs, [out, first, blocks],
                                  stream=self._stream)

    def enqueue(self, data: Buffer, n: int, out: Buffer, p: Any) -> None:
        """Enqueue the fold of ``data[:n]`` (``n >= 1``) into ``out[0]`` on the program's
        stream: level by level of :func:`.reduce_device.levels`, the top one writing ``out``."""
        plan = levels(n)
        q = _NO_PARAMS if p is None else p
        bs = self.block_size
        with self._lock:
            totals = self._level_totals(plan)
            below = data
            for k, (count, chunk, chunks) in enumerate(plan):
                dest = out if k == len(plan) - 1 else totals[k]
                grid = -(-chunks // bs)
                if k == 0:
                    self._first.launch(grid, bs, [below, count, dest, chunk, q],
                                       stream=self._stream)
                else:
                    self._upper.launch(grid, bs, [below, count, dest, chunk],
                                       stream=self._stream)
                below = dest

    def _level_totals(self, plan: tuple[tuple[int, int, int], ...]) -> list[Buffer]:
        """One scratch buffer of chunk totals per level below the top."""
        return [self.scratch(f"level{k}", chunks) for k, (_, _, chunks) in enumerate(plan[:-1])]

    # ---- run -------------------------------------------------------------------------------
    def reduce(self, data: np.ndarray | DeviceArray, p: Any) -> np.generic:
        """``Kernel.run``'s plan: the total of ``data`` (validated, flat, non-empty) as a
        ``T`` scalar, after waiting for it and raising the first fault."""
        n, T = data.size, self.spec.T
        total = np.empty(1, T)
        with self._lock:
            if self._result is None:
                self._result = self._first.alloc(1, T)
            s = self._stream
            if type(data) is DeviceArray:
                buf = self.device._borrow(data.addr, data.nbytes)
                buf.keep = data.keep
                order_before(self.device, s, (data,))
                self.enqueue(self.operand(buf, n), n, self._result, p)
                order_after(self.device, s, (data,))
            elif self.device.has("host_memory"):  # the caller's array itself
                self.enqueue(self.operand(self.device.borrow(data), n), n, self._result, p)
            else:  # a host array on a device: through the program's data buffer
                buf = self._data
                if buf is None or buf.nbytes < data.nbytes:
                    if buf is not None:
                        buf.free()
                    buf = self._data = self._first.alloc(n, T)
                buf.upload(data)
                self.enqueue(buf, n, self._result, p)
            s.synchronize()
            self._result.download(total)
        self.synchronize()
        return total[0]

    def synchronize(self) -> None:
        """Wait for the device and raise the first fault of one of the kernels since the
        last synchronization (``OutOfBounds`` naming ``pre``'s or ``combine``'s array and
        line)."""
        self.device.synchronize()
        for kernel in (self._first, self._upper, self._fill):
            kernel.raise_faults()

    def close(self) -> None:
        """Free the scratch buffers (``Kernel.close``; idempotent)."""
        with self._lock:
            self.free_scratch()
            for buf in (self._data, self._result):
                if buf is not None:
                    buf.free()
            self._data, self._result = None, None

    def __repr__(self) -> str:
        return f"<CheckedReduce {self.spec.name!r} on {self.device!r}>"

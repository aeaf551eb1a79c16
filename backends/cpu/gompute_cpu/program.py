"""A loaded CPU kernel: the launcher ``CpuDevice._load`` returns, ``launcher(grid, block,
shared_bytes, stream)``: a spec kernel's loops (:class:`CpuEntry`, which takes the block
count from ``grid``) or a raw kernel's blocks of threads (:class:`RawEntry`).

Below ``GOMPUTE_CPU_PARALLEL_THRESHOLD`` elements (default 2**17, the
crossover measured on a 2-core host: a ``prange`` loop costs about a
microsecond more to start, and wins from roughly 128 Ki f32 elements) the
serial loop runs; at or above it, the threaded one. A spec kernel's loops are
each compiled (or loaded from numba's on-disk cache) by the first launch that
runs them, with the signature the launch ABI fixes: a process compiles only the
loops it uses (one numba compilation where numba's own ``@njit(parallel=True)``
does one), and a numba failure surfaces there, as ``CompileFailed`` naming the
rendered file. What the core checks, and a module that does not run, still fail
when the program is loaded. A raw kernel's serial entry point is compiled when
it is loaded, its threaded ones on first use.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numba
import numpy as np
from numba import types as nbt

from gompute_core.backend import ArgBuffer, Stream
from gompute_core.errors import CompileFailed, InvalidArgument
from gompute_core.ir.entry import BlockReduce, IndexedMove
from gompute_core.ir.kernel import KernelIR
from gompute_core.ir.nodes import PointerType, StructType

from .compiler import load_module
from .params import HostParams

DEFAULT_PARALLEL_THRESHOLD = 1 << 17
SLICE_THREADS = 1 << 14
"""A raw launch of more threads than this runs in slices of blocks, the first of about
this many threads, so that Ctrl-C (and any Python signal handler) gets to run between
them: numba holds the interpreter while it computes, so a signal's handler waits for the
call to return."""
SLICE_SECONDS = 0.1
"""What a slice aims to take: each slice after the first is sized from the time the last
one took (doubled below half of it, halved above twice)."""
RAW_WORK_PER_THREAD = 64
"""A raw kernel's thread counts as this many elements against the threshold: it usually
does more than one element's work (a grid-stride loop, a tree step), and starting the
threaded block loop costs about 1 us more than the serial one (measured, 2 cores)."""

def parallel_threshold() -> int:
    """Elements from which loops run threaded (``GOMPUTE_CPU_PARALLEL_THRESHOLD`` overrides)."""
    text = os.environ.get("GOMPUTE_CPU_PARALLEL_THRESHOLD", "")
    if not text:
        return DEFAULT_PARALLEL_THRESHOLD
    try:
        value = int(text)
    except ValueError:
        raise InvalidArgument(f"GOMPUTE_CPU_PARALLEL_THRESHOLD={text!r} is not an integer"
                              ) from None
    return max(value, 0)


def thread_count() -> int:
    """Threads numba's threaded loops use."""
    return max(numba.get_num_threads(), 1)


def _array_type(dtype: np.dtype) -> nbt.Array:
    # typeof (not from_dtype) so numba's one-time ndarray typing setup happens here, not
    # in the first run
    return numba.typeof(np.empty(0, dtype))


class CpuEntry:
    """The loops of one kernel; calling it launches them with ``args``'s values (typed
    arrays and counts in entry order) and params leaves. Each loop is compiled by the
    first launch that runs it (:meth:`_ready`)."""

    def __init__(self, kernel: KernelIR, source: str, args: ArgBuffer) -> None:
        self.kernel = kernel
        self.kind = kernel.kind
        self.params = HostParams(kernel)
        self.threshold = parallel_threshold()
        self.module = module = load_module(source, owner=self)
        self.args = args
        self._blocks = isinstance(kernel.entry, BlockReduce)
        """Whether the loops take the block count after the entry's arguments (a block
        reduce: ``k_blocks``, ``k_blocks_parallel``)."""
        self._params = not isinstance(kernel.entry, IndexedMove)
        """Whether the loops take the params leaves (every entry structure but an indexed
        move, which has no functions and no params)."""
        blocks = self._blocks
        self._loops = (module.k_blocks if blocks else module.k_serial,
                       module.k_blocks_parallel if blocks else module.k_parallel)
        """numba's dispatchers of the serial and the threaded loop."""
        self._serial: Any = None
        """The serial loop once compiled (None before its first launch)."""
        self._parallel: Any = None
        """The threaded loop once compiled (None before its first launch)."""
        count = kernel.entry.count  # type: ignore[union-attr]
        self._count_at = [name for name, _ in kernel.entry_args].index(count)
        """Where the element count is among the launch's values (it picks the loop)."""

    def _signature(self) -> tuple[nbt.Type, ...]:
        """The numba argument types of both loops (the launch ABI's arrays, counts and
        params leaves)."""
        pleaves = tuple(numba.typeof(a) for a in self.params.example())
        types = self.kernel.entry.arrays()  # type: ignore[union-attr]
        blocks = (nbt.int64,) if self._blocks else ()
        return (*(_array_type(np.dtype(types[name])) if arg == "pointer" else nbt.int64
                  for name, arg in self.kernel.entry_args), *blocks,
                *(pleaves if self._params else ()))

    def _ready(self, parallel: bool) -> Any:
        """Compile (or load from numba's cache) the threaded or the serial loop and keep
        it for the next launches; ``CompileFailed`` when numba cannot."""
        loop = self._loops[parallel]
        try:
            loop.compile(self._signature())
        except Exception as exc:
            path = getattr(self.module, "__file__", "?")
            raise CompileFailed(f"numba could not compile kernel {self.kernel.name!r} "
                                f"(rendered source {path}): {exc}") from exc
        if parallel:
            self._parallel = loop
        else:
            self._serial = loop
        return loop

    def __call__(self, grid: tuple[int, int, int], block: tuple[int, int, int],
                 shared_bytes: int, stream: Stream) -> None:
        values = self.args.values
        if values[self._count_at] >= self.threshold:
            fn = self._parallel
            if fn is None:
                fn = self._ready(True)
        else:
            fn = self._serial
            if fn is None:
                fn = self._ready(False)
        if self._blocks:
            fn(*values, grid[0], *self.args.params)
        elif self._params:
            fn(*values, *self.args.params)
        else:
            fn(*values)


class RawEntry:
    """A loaded raw kernel (:mod:`.raw`): calling it launches ``grid`` blocks of ``block``
    threads with ``args``'s values (signature order; the params leaves spliced in where
    the record sits). A launch of at least ``GOMPUTE_CPU_PARALLEL_THRESHOLD /
    RAW_WORK_PER_THREAD`` threads in all (2048 by default) runs threaded: as one flat
    parallel loop over the threads (``k_flat``) when the kernel's threads never meet and
    the launch is 1-D, else with blocks in parallel (``k_parallel``, one contiguous range
    of blocks per numba thread) when there are several blocks and more than one numba
    thread. Others run serially. A launch of more than :data:`SLICE_THREADS` threads runs
    in slices (of threads for ``k_flat``, of blocks otherwise), so Ctrl-C interrupts it
    between two slices."""

    def __init__(self, kernel: KernelIR, source: str, args: ArgBuffer) -> None:
        self.kernel = kernel
        self.module = load_module(source, owner=self)
        self.args = args
        self.threshold = parallel_threshold() // RAW_WORK_PER_THREAD
        self._flat = getattr(self.module, "k_flat", None)
        fn = kernel.functions[-1]
        self._params_at = -1
        """Where the params leaves go among the values (-1: the kernel takes no params)."""
        for position, (_, t) in enumerate(fn.args):
            if isinstance(t, StructType):
                self._params_at = position
        self._compile(fn)

    def _compile(self, fn: Any) -> None:
        """Compile (or load from numba's cache) the serial entry point."""
        arg_types: list[Any] = []
        for _, t in fn.args:
            if isinstance(t, PointerType):
                arg_types.append(_array_type(np.dtype(t.elem)))
            elif isinstance(t, StructType):
                arg_types.extend(numba.typeof(a) for a in HostParams(self.kernel).example())
            else:
                arg_types.append(numba.typeof(np.dtype(t).type(0)))
        try:
            self.module.k_serial.compile((*[nbt.int64] * 9, *arg_types))
        except Exception as exc:
            path = getattr(self.module, "__file__", "?")
            raise CompileFailed(f"numba could not compile raw kernel {self.kernel.name!r} "
                                f"(rendered source {path}): {exc}") from exc

    def __call__(self, grid: tuple[int, int, int], block: tuple[int, int, int],
                 shared_bytes: int, stream: Stream) -> None:
        values = self.args.values
        if self._params_at >= 0:
            at = self._params_at
            values = (*values[:at], *(self.args.params or ()), *values[at:])
        blocks = grid[0] * grid[1] * grid[2]
        per_block = block[0] * block[1] * block[2]
        total = blocks * per_block
        module = self.module
        if total <= SLICE_THREADS:
            if total < self.threshold:
                module.k_serial(*grid, *block, 0, blocks, 1, *values)
            elif self._flat is not None and grid[1] == grid[2] == block[1] == block[2] == 1:
                self._flat(*grid, *block, 0, total, *values)
            elif blocks > 1 and (threads := thread_count()) > 1:
                module.k_parallel(*grid, *block, 0, blocks, min(blocks, threads), *values)
            else:
                module.k_serial(*grid, *block, 0, blocks, 1, *values)
            return
        if self._flat is not None and grid[1] == grid[2] == block[1] == block[2] == 1:
            def run(first: int, last: int) -> None:
                self._flat(*grid, *block, first, last, *values)
            self._sliced(run, total, SLICE_THREADS)
            return
        threads = thread_count() if blocks > 1 else 1
        if threads > 1:
            def run(first: int, last: int) -> None:
                module.k_parallel(*grid, *block, first, last, min(last - first, threads),
                                  *values)
        else:
            def run(first: int, last: int) -> None:
                module.k_serial(*grid, *block, first, last, 1, *values)
        self._sliced(run, blocks, max(1, SLICE_THREADS // per_block))

    @staticmethod
    def _sliced(run: Any, units: int, step: int) -> None:
        """Run ``units`` (threads of ``k_flat`` or blocks) through ``run(first, last)`` in
        slices, the first of ``step``, each later one sized to take about
        ``SLICE_SECONDS``. A pending signal's handler runs between two slices: Ctrl-C raises
        ``KeyboardInterrupt`` there, the units before it done, none after."""
        first = 0
        while first < units:
            last = min(units, first + step)
            start = time.perf_counter()
            run(first, last)
            took = time.perf_counter() - start
            first = last
            if took < SLICE_SECONDS / 2:
                step *= 2
            elif took > SLICE_SECONDS * 2 and step > 1:
                step //= 2

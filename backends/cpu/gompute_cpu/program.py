"""A loaded CPU kernel: the launcher the core's ``KernelProgram`` calls.

Below ``GOMPUTE_CPU_PARALLEL_THRESHOLD`` elements (default 2**17, the
crossover measured on a 2-core host: a ``prange`` loop costs about a
microsecond more to start, and wins from roughly 128 Ki f32 elements) the
serial loop runs; at or above it, the threaded one. The serial entry point
is compiled when the program is loaded (so a bad kernel fails there, not in
the middle of a run); the threaded one on first use. Both come from
numba's on-disk cache when present.
"""

from __future__ import annotations

import os
from typing import Any

import numba
import numpy as np
from numba import types as nbt

from gompute_core.backend import ArgBuffer, Stream
from gompute_core.errors import CompileFailed, InvalidArgument
from gompute_core.ir.kernel import KernelIR

from .params import HostParams

DEFAULT_PARALLEL_THRESHOLD = 1 << 17

_ROLES = {"map": ("T",), "map_indexed": ("T",), "map_to": ("In", "Out"),
          "zip": ("A", "B", "Out"), "reduce": ("T", "T"), "gather": ("T", "Idx", "T"),
          "scatter": ("T", "Idx", "T")}
"""The element type of each array argument of a kind's loops, in order."""


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
    """The compiled loops of one kernel; calling it launches them with ``args``'s values
    (typed arrays and counts in entry order) and params leaves."""

    def __init__(self, kernel: KernelIR, module: Any, args: ArgBuffer) -> None:
        self.kernel = kernel
        self.kind = kernel.kind
        self.params = HostParams(kernel)
        self.threshold = parallel_threshold()
        self.threads = thread_count()
        self.module = module
        self.args = args
        reduce = self.kind == "reduce"
        self._serial = module.k_blocks if reduce else module.k_serial
        self._parallel = module.k_blocks_parallel if reduce else module.k_parallel
        self._count_at = 1 if self.kind in ("map", "map_indexed", "reduce") else \
            (2 if self.kind == "map_to" else 3)
        self._compile()

    def _compile(self) -> None:
        """Compile (or load from numba's cache) the serial entry point."""
        dtypes = {role: np.dtype(t) for role, t in self.kernel.value_types}
        arrays = [_array_type(dtypes[r]) for r in _ROLES[self.kind]]
        pleaves = tuple(numba.typeof(a) for a in self.params.example())
        if self.kind == "reduce":
            sig = (arrays[0], nbt.int64, arrays[1], nbt.int64, *pleaves)
        elif self.kind in ("gather", "scatter"):
            sig = (*arrays, nbt.int64, nbt.int64)
        else:
            sig = (*arrays, nbt.int64, *pleaves)
        try:
            self._serial.compile(sig)
        except Exception as exc:
            path = getattr(self.module, "__file__", "?")
            raise CompileFailed(f"numba could not compile kernel {self.kernel.name!r} "
                                f"(rendered source {path}): {exc}") from exc

    def __call__(self, grid: int, stream: Stream) -> None:
        values = self.args.values
        n = values[self._count_at]
        fn = self._parallel if n >= self.threshold else self._serial
        if self.kind == "reduce":
            fn(*values, grid, *self.args.params)
        elif self.kind in ("gather", "scatter"):
            fn(*values)
        else:
            fn(*values, *self.args.params)

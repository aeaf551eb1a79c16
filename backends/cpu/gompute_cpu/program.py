"""A loaded CPU kernel: ``launch`` on device buffers, ``run`` on the user's arrays.

Below ``GOMPUTE_CPU_PARALLEL_THRESHOLD`` elements (default 2**17, the
crossover measured on a 2-core host: a ``prange`` loop costs about a
microsecond more to start, and wins from roughly 128 Ki f32 elements) the
serial loop runs; at or above it, the threaded one. The serial entry point
is compiled when the program is created (so a bad kernel fails there, not
in the middle of a run); the threaded one on first use. Both come from
numba's on-disk cache when present.
"""

from __future__ import annotations

import os
from typing import Any

import numba
import numpy as np
from numba import types as nbt

from gompute_core.errors import CompileFailed, InvalidArgument
from gompute_core.ir.kernel import KernelIR
from gompute_core.runtime import checks

from .device import STREAM, CpuBuffer
from .params import HostParams

DEFAULT_PARALLEL_THRESHOLD = 1 << 17


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


def _array_type(dtype: np.dtype) -> nbt.Array:
    # typeof (not from_dtype) so numba's one-time ndarray typing setup happens here, not
    # in the first run
    return numba.typeof(np.empty(0, dtype))


class CpuProgram:
    """One kernel's compiled entry points and its per-kind ``launch``/``run``."""

    stream = STREAM

    def __init__(self, kernel: KernelIR, module: Any) -> None:
        self.kernel = kernel
        self.kind = kernel.kind
        self.params = HostParams(kernel)
        self.threshold = parallel_threshold()
        self._module = module
        self._serial = module.k_serial
        self._parallel = module.k_parallel
        self._dtypes = {role: np.dtype(t) for role, t in kernel.value_types}
        self.launch = getattr(self, f"_launch_{self.kind}")
        self.run = getattr(self, f"_run_{self.kind}")
        self._compile()

    # compilation -------------------------------------------------------------------------

    def _compile(self) -> None:
        """Compile (or load from numba's cache) the serial entry point."""
        d = self._dtypes
        pleaves = tuple(numba.typeof(a) for a in self.params.example())
        if self.kind in ("gather", "scatter"):
            arrays = (d["T"], d["Idx"], d["T"])
            sig = (*map(_array_type, arrays), nbt.int64, nbt.int64)
        else:
            roles = {"map": "T", "map_indexed": "T", "reduce": "T", "map_to": "In Out",
                     "zip": "A B Out"}[self.kind].split()
            sig = (*(_array_type(d[r]) for r in roles), nbt.int64, *pleaves)
        try:
            self._serial.compile(sig)
        except Exception as exc:
            path = getattr(self._module, "__file__", "?")
            raise CompileFailed(f"numba could not compile kernel {self.kernel.name!r} "
                                f"(rendered source {path}): {exc}") from exc

    def _pick(self, n: int) -> Any:
        return self._parallel if n >= self.threshold else self._serial

    # launch: device buffers, O(1) checks -------------------------------------------------

    def _view(self, buf: Any, role: str, n: int, what: str) -> np.ndarray:
        if not isinstance(buf, CpuBuffer):
            raise InvalidArgument(f"launch: {what} must be a CPU buffer, "
                                  f"got {type(buf).__name__}")
        v = buf.view(self._dtypes[role])
        if n > v.shape[0]:
            raise InvalidArgument(f"launch: {what} holds {v.shape[0]} elements, n is {n}")
        return v

    def _count(self, n: Any, role: str = "n") -> int:
        return checks.count(n, f"launch: {role}")

    def _launch_map(self, buf: Any, n: Any, p: Any = None) -> None:
        n = self._count(n)
        self._pick(n)(self._view(buf, "T", n, "buf"), n, *self.params.args(p))

    _launch_map_indexed = _launch_map

    def _launch_map_to(self, inp: Any, out: Any, n: Any, p: Any = None) -> None:
        n = self._count(n)
        self._pick(n)(self._view(inp, "In", n, "inp"), self._view(out, "Out", n, "out"), n,
                      *self.params.args(p))

    def _launch_zip(self, a: Any, b: Any, out: Any, n: Any, p: Any = None) -> None:
        n = self._count(n)
        self._pick(n)(self._view(a, "A", n, "a"), self._view(b, "B", n, "b"),
                      self._view(out, "Out", n, "out"), n, *self.params.args(p))

    def _launch_reduce(self, data: Any, n: Any, partials: Any, blocks: Any,
                       p: Any = None) -> None:
        n, blocks = self._count(n), self._count(blocks, "blocks")
        if blocks < (1 if n else 0):
            raise InvalidArgument(f"launch: {n} elements need at least one block, got {blocks}")
        fn = self._module.k_blocks_parallel if n >= self.threshold else self._module.k_blocks
        fn(self._view(data, "T", n, "data"), n, self._view(partials, "T", blocks, "partials"),
           blocks, *self.params.args(p))

    def _launch_move(self, src: Any, idx: Any, out: Any, n: Any, bound: Any) -> None:
        n, bound = self._count(n), self._count(bound, "bound")
        gather = self.kind == "gather"
        s = self._view(src, "T", bound if gather else n, "src")
        o = self._view(out, "T", n if gather else bound, "out")
        self._pick(n)(s, self._view(idx, "Idx", n, "idx"), o, n, bound)

    _launch_gather = _launch_move
    _launch_scatter = _launch_move

    # run: the host arrays the Kernel handle validated (a non-contiguous one still works:
    # numba compiles an "A"-layout variant) ---------------------------------------------

    def _run_map(self, data: np.ndarray, p: Any = None) -> None:
        n = data.shape[0]
        self._pick(n)(data, n, *self.params.args(p))

    _run_map_indexed = _run_map

    def _run_map_to(self, inp: np.ndarray, out: np.ndarray, p: Any = None) -> None:
        n = inp.shape[0]
        self._pick(n)(inp, out, n, *self.params.args(p))

    def _run_zip(self, a: np.ndarray, b: np.ndarray, out: np.ndarray, p: Any = None) -> None:
        n = a.shape[0]
        self._pick(n)(a, b, out, n, *self.params.args(p))

    def _run_reduce(self, data: np.ndarray, p: Any = None) -> Any:
        n = data.shape[0]
        T = self._dtypes["T"].type
        if n >= self.threshold:
            chunks = max(numba.get_num_threads(), 1)
            return T(self._parallel(data, n, chunks, *self.params.args(p)))
        return T(self._serial(data, n, *self.params.args(p)))

    def _run_move(self, src: np.ndarray, idx: np.ndarray, out: np.ndarray) -> None:
        n = idx.shape[0]
        bound = src.shape[0] if self.kind == "gather" else out.shape[0]
        self._pick(n)(src, idx, out, n, bound)

    _run_gather = _run_move
    _run_scatter = _run_move

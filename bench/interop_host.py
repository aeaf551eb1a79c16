"""The host (Python) cost of foreign arrays in ``launch`` and ``run``, without a GPU.

Run anywhere:  python bench/interop_host.py [--calls 20000]

A stand-in CUDA device (DLPack type kDLCUDA, a launcher that does nothing) takes
stand-in arrays that behave as CuPy's do on the host: ``__cuda_array_interface__``
builds a new dictionary on every access (shape, typestr, descr, data, version, strides,
current stream), ``.device`` builds a new object, ``.data.ptr`` is a property. Only the
Python between the call and the (no-op) driver call is timed: the extra cost of a
foreign array over a native buffer is what ``bench/interop.py`` measures on a GPU, less
the driver. The last two rows are an elementwise launch of Black-Scholes' shape (two
arrays and a scalar in, two arrays out) on native buffers and on CuPy-like arrays (every
row's ``+`` is against the first). ``--profile`` prints where the time of a CuPy-like
launch goes.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from benchkit import per_call as _per_call

sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(
    os.path.abspath(__file__))]
sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "tests"))

from pybackend import FEATURES, PackedPyDevice, PyBackend, PyBuffer  # noqa: E402

import gompute_core as g  # noqa: E402
from gompute_core import dlpack  # noqa: E402
from gompute_core.kinds import foreign  # noqa: E402
from gompute_core.plugins import manager  # noqa: E402


def per_call(fn: Callable[[], Any], calls: int) -> float:
    """The fastest batch's seconds per call (the least disturbed by other load)."""
    return _per_call(fn, calls, pick=min)

LEGACY = 1


class _Stream:
    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


_current = [_Stream(0)]


def current_stream() -> _Stream:
    """CuPy's ``get_current_stream()`` stand-in (0: the legacy default stream)."""
    return _current[0]


class _Device:
    def __init__(self, ordinal: int) -> None:
        self.id = ordinal


class _Pointer:
    def __init__(self, ptr: int) -> None:
        self._ptr = ptr

    @property
    def ptr(self) -> int:
        return self._ptr


class CupyLike:
    """A CuPy ``ndarray`` as the host sees it (memory: a NumPy array, never touched)."""

    def __init__(self, n: int) -> None:
        self._host = np.zeros(n, np.float32)
        self.data = _Pointer(self._host.ctypes.data)
        self.size, self.shape, self.dtype = n, (n,), self._host.dtype

    @property
    def device(self) -> _Device:
        return _Device(0)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        ptr = current_stream().ptr
        return {"shape": self.shape, "typestr": self.dtype.str, "descr": self.dtype.descr,
                "stream": ptr or LEGACY, "version": 3, "strides": None,
                "data": (self.data.ptr, False)}


class CaiOnly(CupyLike):
    """The same object, with no probe registered for its type: the generic CAI path."""


class TimingGpu(PackedPyDevice):
    """kDLCUDA, ordered with the legacy stream, launches that do nothing."""

    dlpack_device_type = dlpack.KDL_CUDA
    ordered_streams = frozenset({LEGACY})

    def _load(self, artifact: Any, kernel: Any, args: Any) -> Callable[..., None]:
        return lambda *launch: None

    def _borrow(self, addr: int, nbytes: int) -> PyBuffer:
        buf = PyBuffer.__new__(PyBuffer)
        PyBuffer.__mro__[1].__init__(buf, self, nbytes, addr, owned=False)
        return buf

    def pointer_ordinal(self, addr: int) -> int | None:
        return 0

    def stream_handle(self, stream: Any) -> int:
        return 0x5000

    def order_streams(self, waiter: int, signaller: int) -> None:
        pass


def add_half(x):
    return x + 0.5


def sum_and_difference(a, b, s):
    return a + b, (a - b) * s


class CupyLike64(CupyLike):
    """The same, of f64 elements."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self._host = np.zeros(n, np.float64)
        self.data = _Pointer(self._host.ctypes.data)
        self.dtype = self._host.dtype


def elementwise_rows(calls: int) -> list[tuple[str, float]]:
    """An elementwise launch of 3 arrays, 1 scalar and 2 outputs (Black-Scholes' shape) on
    native buffers and on CuPy-like arrays."""
    foreign.PROBES[CupyLike64] = foreign.array_probe(current_stream)
    spec = g.elementwise("iop_host_ew", sum_and_difference,
                         ins=(g.f64, g.f64, g.Scalar[g.f64]), outs=(g.f64, g.f64))
    with g.Kernel(spec, "timinggpu") as k:
        n = 1 << 10
        arrays = [CupyLike64(n) for _ in range(4)]
        bufs = [k.alloc(n, name) for name in ("a", "b", "out0", "out1")]
        return [("elementwise launch, 4 native buffers",
                 per_call(lambda: k.launch(bufs[0], bufs[1], 0.5, out=(bufs[2], bufs[3])),
                          calls)),
                ("elementwise launch, 4 CuPy-like arrays",
                 per_call(lambda: k.launch(arrays[0], arrays[1], 0.5,
                                           out=(arrays[2], arrays[3])), calls))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    with manager.isolated():
        plugin = PyBackend("timinggpu", host_memory=False)
        plugin.device_class = TimingGpu
        plugin.features = FEATURES  # raw kernels too: the elementwise kind's variants
        manager.register(plugin)
        foreign.PROBES[CupyLike] = foreign.array_probe(current_stream)
        k = g.Kernel(g.map("iop_host_add_half", g.f32, None, add_half), "timinggpu")
        n = 1 << 10
        buf, x, y = k.alloc(n), CupyLike(n), CaiOnly(n)
        rows = [("launch, native buffer", per_call(lambda: k.launch(buf, n), args.calls))]
        rows.append(("launch, CuPy-like (probe)", per_call(lambda: k.launch(x, n), args.calls)))
        rows.append(("launch, CAI dict each call", per_call(lambda: k.launch(y, n),
                                                            args.calls)))
        _current[0] = _Stream(0x7000)
        rows.append(("launch, CuPy-like on another stream",
                     per_call(lambda: k.launch(x, n), args.calls)))
        _current[0] = _Stream(0)
        rows.append(("run in place, CuPy-like", per_call(lambda: k.run(x), args.calls // 4)))
        rows += elementwise_rows(args.calls // 4)
        base = rows[0][1]
        for name, t in rows:
            print(f"{name:40s} {t * 1e9:8.0f} ns   (+{(t - base) * 1e9:6.0f} ns)")
        if args.profile:
            import cProfile
            import pstats

            cProfile.runctx("for _ in range(20000): k.launch(x, n)", globals(), locals(),
                            "/tmp/iop.prof")
            pstats.Stats("/tmp/iop.prof").sort_stats("tottime").print_stats(12)
            cProfile.runctx("for _ in range(5000): k.run(x)", globals(), locals(),
                            "/tmp/iop_run.prof")
            pstats.Stats("/tmp/iop_run.prof").sort_stats("tottime").print_stats(20)
        k.close()


if __name__ == "__main__":
    main()

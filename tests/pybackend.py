"""A small pure-Python backend plugin for the core's own tests.

It implements the four hooks for real: ``launch`` runs the spec's Python
functions element by element on NumPy scalars over byte buffers (the same
grid-stride partials a GPU reduce writes), so handles, the registry and the
CLI are exercised end to end with no compiler and no device. Knobs make it
unavailable, refuse to compile, declare another API version or offer the
host ``run`` path.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from gompute_core.errors import CompileFailed, InvalidArgument
from gompute_core.ir.kernel import KINDS, KernelIR
from gompute_core.plugins.manager import hookimpl
from gompute_core.plugins.records import (
    PLUGIN_API_VERSION,
    Artifact,
    Availability,
    BackendInfo,
    CompileRequest,
    DeviceInfo,
)
from gompute_core.specs import Spec, registered_spec


def _arity(fn: Any) -> int:
    target = fn if inspect.isfunction(fn) else getattr(fn, "eval", fn)
    return len(inspect.signature(target).parameters)


class PyBuffer:
    """Host bytes standing in for device memory; transfers in BYTES, bounds-checked."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes
        self.data: np.ndarray | None = np.zeros(nbytes, np.uint8)

    def _mem(self, offset: int, nbytes: int) -> np.ndarray:
        if self.data is None:
            raise InvalidArgument("buffer used after free()")
        if offset < 0 or offset + nbytes > self.nbytes:
            raise InvalidArgument(f"transfer of {nbytes} bytes at {offset} is past the end "
                                  f"of a {self.nbytes}-byte buffer")
        return self.data[offset:offset + nbytes]

    def upload(self, host: np.ndarray, nbytes: int | None = None) -> None:
        self.upload_at(0, host, nbytes)

    def download(self, host: np.ndarray, nbytes: int | None = None) -> None:
        self.download_at(0, host, nbytes)

    def upload_at(self, offset: int, host: np.ndarray, nbytes: int | None = None) -> None:
        n = host.nbytes if nbytes is None else nbytes
        self._mem(offset, n)[:] = host.reshape(-1).view(np.uint8)[:n]

    def download_at(self, offset: int, host: np.ndarray, nbytes: int | None = None) -> None:
        n = host.nbytes if nbytes is None else nbytes
        host.reshape(-1).view(np.uint8)[:n] = self._mem(offset, n)

    def copy_from(self, other: PyBuffer, nbytes: int | None = None) -> None:
        n = other.nbytes if nbytes is None else nbytes
        self._mem(0, n)[:] = other._mem(0, n)

    def free(self) -> None:
        self.data = None

    def device_addr(self) -> int:
        return 0 if self.data is None else self.data.ctypes.data

    def typed(self, dtype: np.dtype, n: int) -> np.ndarray:
        return self._mem(0, n * dtype.itemsize).view(dtype)


class PyStream:
    """Launches run immediately, so a stream is always idle."""

    def synchronize(self) -> None:
        """Nothing is ever pending."""

    def query(self) -> bool:
        return True


class PyProgram:
    """Runs one spec's Python functions over buffers (``launch``), per DESIGN.md."""

    def __init__(self, kir: KernelIR, spec: Spec) -> None:
        self.kir, self.spec = kir, spec
        self.stream = PyStream()
        self.launches = 0
        fn = spec.fn if spec.fn is not None else spec.pre
        self._with_p = fn is not None and _arity(fn) == (3 if kir.kind in ("zip",
                                                         "map_indexed") else 2)

    def _call(self, fn: Any, p: Any, *args: Any) -> Any:
        if self._with_p:
            return fn(*args, p)
        return fn(*args)

    def launch(self, *args: Any) -> None:
        self.launches += 1
        spec, kind = self.spec, self.kir.kind
        with np.errstate(all="ignore"):
            getattr(self, f"_launch_{kind}")(spec, *args)

    def _launch_map(self, spec: Spec, buf: PyBuffer, n: int, p: Any) -> None:
        data = buf.typed(np.dtype(spec.T), n)
        for i in range(n):
            data[i] = spec.T(self._call(spec.fn, p, data[i]))

    def _launch_map_indexed(self, spec: Spec, buf: PyBuffer, n: int, p: Any) -> None:
        data = buf.typed(np.dtype(spec.T), n)
        for i in range(n):
            data[i] = spec.T(self._call(spec.fn, p, data[i], np.uint64(i)))

    def _launch_map_to(self, spec: Spec, inp: PyBuffer, out: PyBuffer, n: int, p: Any) -> None:
        src, dst = inp.typed(np.dtype(spec.In), n), out.typed(np.dtype(spec.Out), n)
        for i in range(n):
            dst[i] = spec.Out(self._call(spec.fn, p, src[i]))

    def _launch_zip(self, spec: Spec, a: PyBuffer, b: PyBuffer, out: PyBuffer, n: int,
                    p: Any) -> None:
        x, y = a.typed(np.dtype(spec.A), n), b.typed(np.dtype(spec.B), n)
        dst = out.typed(np.dtype(spec.Out), n)
        for i in range(n):
            dst[i] = spec.Out(self._call(spec.fn, p, x[i], y[i]))

    def _launch_reduce(self, spec: Spec, buf: PyBuffer, n: int, partials: PyBuffer,
                       blocks: int, p: Any) -> None:
        T, bs = spec.T, spec.block_size
        data, out = buf.typed(np.dtype(T), n), partials.typed(np.dtype(T), blocks)
        for b in range(blocks):
            acc = T(spec.identity)
            for start in range(b * bs, n, blocks * bs):
                for i in range(start, min(start + bs, n)):
                    x = data[i] if spec.pre is None else T(self._call(spec.pre, p, data[i]))
                    acc = T(spec.combine(acc, x))
            out[b] = acc

    def _launch_gather(self, spec: Spec, src: PyBuffer, idx: PyBuffer, out: PyBuffer, n: int,
                       bound: int) -> None:
        s, ix = src.typed(np.dtype(spec.T), bound), idx.typed(np.dtype(spec.Idx), n)
        o = out.typed(np.dtype(spec.T), n)
        for i in range(n):
            j = int(ix[i])
            if 0 <= j < bound:
                o[i] = s[j]

    def _launch_scatter(self, spec: Spec, src: PyBuffer, idx: PyBuffer, out: PyBuffer, n: int,
                        bound: int) -> None:
        s, ix = src.typed(np.dtype(spec.T), n), idx.typed(np.dtype(spec.Idx), n)
        o = out.typed(np.dtype(spec.T), bound)
        for i in range(n):
            j = int(ix[i])
            if 0 <= j < bound:
                o[j] = s[i]


class HostPyProgram(PyProgram):
    """A PyProgram that also offers the host ``run`` path (as the CPU backend does)."""

    def run(self, *args: Any) -> Any:
        self.host_runs = getattr(self, "host_runs", 0) + 1
        spec = self.spec
        if spec.kind == "reduce":
            data, p = args
            acc = spec.T(spec.identity)
            with np.errstate(all="ignore"):
                for x in data:
                    x = x if spec.pre is None else spec.T(self._call(spec.pre, p, x))
                    acc = spec.T(spec.combine(acc, x))
            return acc
        arrays = [a for a in args if isinstance(a, np.ndarray)]
        p = args[-1] if spec.kind not in ("gather", "scatter") else None
        bufs = []
        for a in arrays:
            b = PyBuffer(max(a.nbytes, 1))
            b.upload(a)
            bufs.append(b)
        n = arrays[-1].size if spec.kind != "scatter" else arrays[0].size
        if spec.kind in ("gather", "scatter"):
            bound = arrays[0].size if spec.kind == "gather" else arrays[2].size
            self.launch(*bufs, n, bound)
        else:
            self.launch(*bufs, n, p)
        bufs[-1].download(arrays[-1])
        return None


class PyDevice:
    """A fake device whose memory is host bytes."""

    def __init__(self, backend: str, ordinal: int, host_run: bool) -> None:
        self.backend, self.ordinal, self.arch = backend, ordinal, "py1"
        self.host_run = host_run
        self.closed = False
        self.allocs = 0
        self._stream = PyStream()

    def alloc(self, nbytes: int) -> PyBuffer:
        self.allocs += 1
        return PyBuffer(nbytes)

    def program(self, artifact: Artifact, kir: KernelIR) -> PyProgram:
        spec = registered_spec(kir.name)
        if spec is None or artifact.digest != kir.digest():
            raise InvalidArgument(f"artifact {artifact.entry!r} does not match kernel "
                                  f"{kir.name!r}")
        return (HostPyProgram if self.host_run else PyProgram)(kir, spec)

    def synchronize(self) -> None:
        """Launches are synchronous."""

    def create_stream(self) -> PyStream:
        return PyStream()

    @property
    def stream(self) -> PyStream:
        return self._stream

    def close(self) -> None:
        self.closed = True


class PyBackend:
    """The test plugin; every knob is a constructor argument."""

    def __init__(self, name: str = "pytest", *, priority: int = 50, available: bool = True,
                 reason: str = "", compile_error: str = "", api_version: int = PLUGIN_API_VERSION,
                 host_run: bool = False, probe_error: str = "",
                 unsupported_types: tuple[str, ...] = ()) -> None:
        self.name, self.priority, self.available, self.reason = name, priority, available, reason
        self.compile_error, self.api_version, self.host_run = compile_error, api_version, host_run
        self.probe_error, self.unsupported_types = probe_error, unsupported_types
        self.probes = 0
        self.compiles = 0

    @hookimpl
    def gompute_backend_info(self) -> BackendInfo:
        return BackendInfo(self.name, "0.0.test", self.api_version, self.priority, KINDS,
                           self.unsupported_types, "pure-Python test backend")

    @hookimpl
    def gompute_probe(self, backend: str) -> Availability | None:
        if backend != self.name:
            return None
        self.probes += 1
        if self.probe_error:
            raise RuntimeError(self.probe_error)
        if not self.available:
            return Availability(backend, False, reason=self.reason)
        return Availability(backend, True, devices=(DeviceInfo(0, "python", "py1"),),
                            compiler="python")

    @hookimpl
    def gompute_compile(self, request: CompileRequest) -> Artifact | None:
        if request.backend != self.name:
            return None
        self.compiles += 1
        if self.compile_error:
            raise CompileFailed(self.compile_error)
        kir = request.kernel
        return Artifact(self.name, kir.digest().encode(), "py", kir.name,
                        request.arch or "py1", f"# {kir.name}\n", "python", kir.digest(),
                        kir.kind)

    @hookimpl
    def gompute_device(self, backend: str, ordinal: int) -> PyDevice | None:
        if backend != self.name:
            return None
        return PyDevice(backend, ordinal, self.host_run)

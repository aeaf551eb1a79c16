"""A pytest plugin registering the mutant backends of the conformance self-test.

"mutant" is the CPU backend under another name whose launches corrupt what
they produce (the lowest bit of the last output element; the last element
is dropped from reductions), and which declares ``f16``/``f64`` unsupported
and no ``scatter`` kind. "asyncmutant" is the device-style reference backend
(``pybackend.py``) with truly asynchronous streams (a worker thread each) and
events, which ``GOMPUTE_MUTANT_BREAK`` breaks in one of :data:`BREAKAGES`.
Loaded with ``pytest -p conformance_mutant``.
"""

from __future__ import annotations

import copy
import os
import queue
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
from gompute_cpu.device import CpuDevice
from gompute_cpu.plugin import CpuCompiler, host_arch
from pybackend import PackedPyDevice, PyBackend, PyBuffer, PyEntry

from gompute_core.backend import (
    ArgBuffer,
    Artifact,
    Availability,
    BackendInfo,
    Buffer,
    Stream,
    hookimpl,
)
from gompute_core.errors import SyncFailed
from gompute_core.ir.kernel import KernelIR
from gompute_core.plugins import manager

_OUT = {"map": 0, "map_indexed": 0, "map_to": 1, "zip": 2, "gather": 2, "scatter": 2}
"""Which value of a launch is the array it writes."""


class MutantEntry:
    """Runs the CPU launcher, then corrupts its output."""

    def __init__(self, inner: Any, kind: str, args: ArgBuffer) -> None:
        self.inner, self.kind, self.args = inner, kind, args

    def __call__(self, grid: tuple[int, int, int], block: tuple[int, int, int],
                 shared_bytes: int, stream: Stream) -> None:
        values = self.args.values
        if self.kind == "reduce":
            data, n, partials = values
            self.args.values = (data, max(n - 1, 1), partials)
            self.inner(grid, block, shared_bytes, stream)
            return
        self.inner(grid, block, shared_bytes, stream)
        out = values[_OUT[self.kind]]
        written = {"gather": values[3], "scatter": values[4]}.get(self.kind, values[-1])
        if written:
            out[written - 1:written].view("u1")[0] ^= 1


class MutantDevice(CpuDevice):
    """The CPU device whose launches are mutants."""

    backend = "mutant"

    def _load(self, artifact: Artifact, kernel: KernelIR, args: ArgBuffer) -> MutantEntry:
        return MutantEntry(super()._load(artifact, kernel, args), kernel.kind, args)


class MutantCompiler(CpuCompiler):
    """The CPU compiler under the mutant's name."""

    backend = "mutant"


class MutantPlugin:
    """The CPU backend under another name, with corrupting launches and fewer capabilities."""

    @hookimpl
    def gompute_backend_info(self) -> BackendInfo:
        """Everything but scatter, f16 and f64."""
        return BackendInfo(name="mutant", version="0", api_version=3,
                           priority=1,
                           kinds=("map", "map_to", "zip", "map_indexed", "reduce", "gather"),
                           unsupported_types=("f16", "f64"))

    @hookimpl
    def gompute_probe(self) -> Availability:
        """Always available."""
        return Availability("mutant", True)

    @hookimpl
    def gompute_compiler(self) -> MutantCompiler:
        """The CPU backend's compiler."""
        return MutantCompiler()

    @hookimpl
    def gompute_device(self, ordinal: int) -> MutantDevice:
        """The CPU device, mutated."""
        return MutantDevice(host_arch(), "mutant CPU")


manager.register(MutantPlugin(), "mutant")


# ---------------------------------------------------------------- the asynchronous mutant
BREAKAGES = ("unchecked", "offset", "copy_from", "addr0", "query", "stream", "create_stream")
"""What ``GOMPUTE_MUTANT_BREAK`` may break in the "asyncmutant" backend (one at a time):
transfers that skip the core's checks, ``*_at`` ignoring the offset, ``copy_from``
raising, ``device_addr()`` returning 0, ``Stream.query()`` always true, launches ignoring
the program's assigned stream, ``create_stream`` raising."""

BROKEN = os.environ.get("GOMPUTE_MUTANT_BREAK", "")
if BROKEN and BROKEN not in BREAKAGES:
    raise RuntimeError(f"GOMPUTE_MUTANT_BREAK={BROKEN!r}: one of {BREAKAGES}")

LONG_KERNEL_SLEEP = 0.3
"""Device-side seconds the long kernel (``gct_tier_spin``) takes on top of its work."""


class AsyncStream(Stream):
    """An in-order queue run by a worker thread: work really is pending after enqueue."""

    def __init__(self, device: AsyncDevice) -> None:
        self.device = device
        self._work: queue.Queue[Callable[[], None]] = queue.Queue()
        self._fault: BaseException | None = None
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            job = self._work.get()
            try:
                job()
            except BaseException as exc:  # a device fault: reported by synchronize
                self._fault = exc
            finally:
                self._work.task_done()

    def submit(self, job: Callable[[], None]) -> None:
        """Enqueue ``job``."""
        self._work.put(job)

    def synchronize(self) -> None:
        """Wait until every job so far has run; a job that raised is a ``SyncFailed``."""
        self._work.join()
        fault, self._fault = self._fault, None
        if fault is not None:
            raise SyncFailed(f"asyncmutant: {fault}") from fault

    def query(self) -> bool:
        """True when no job is pending."""
        return BROKEN == "query" or self._work.unfinished_tasks == 0

    def wait_event(self, event: AsyncEvent) -> None:
        """Later jobs wait for ``event``."""
        self.submit(event.done.wait)


class AsyncEvent:
    """A marker job: set when the stream reaches it, with its time."""

    def __init__(self, device: AsyncDevice) -> None:
        self.device = device
        self.done = threading.Event()
        self.at = 0.0

    def record(self, stream: AsyncStream | None = None) -> None:
        """Mark the current end of ``stream`` (default: the device's)."""
        self.done.clear()

        def reached() -> None:
            self.at = time.perf_counter()
            self.done.set()
        (stream if stream is not None else self.device.stream).submit(reached)

    def synchronize(self) -> None:
        """Wait for the marker."""
        self.done.wait()

    def query(self) -> bool:
        """True once the marker was reached."""
        return self.done.is_set()

    def elapsed_us(self, start: AsyncEvent) -> float:
        """Microseconds between two reached markers."""
        return (self.at - start.at) * 1e6


class AsyncBuffer(PyBuffer):
    """Host bytes whose transfers run on the device's streams."""

    __slots__ = ()

    def _on(self, stream: Stream | None, job: Callable[[], None]) -> None:
        s = stream if stream is not None else self.device.stream
        s.submit(job)  # type: ignore[attr-defined]
        if stream is None:
            s.synchronize()

    def _copyin(self, offset: int, host: np.ndarray, stream: Stream | None) -> None:
        self._on(stream, lambda: PyBuffer._copyin(self, offset, host, None))

    def _copyout(self, offset: int, host: np.ndarray, stream: Stream | None) -> None:
        self._on(stream, lambda: PyBuffer._copyout(self, offset, host, None))

    def _copy_device(self, offset: int, src: Buffer, src_offset: int, nbytes: int,
                     stream: Stream | None) -> None:
        if BROKEN == "copy_from":
            raise RuntimeError("mutant: copy_from is broken")
        self._on(stream, lambda: PyBuffer._copy_device(self, offset, src, src_offset, nbytes,
                                                       None))

    def _fill(self, offset: int, nbytes: int, value: int, stream: Stream | None) -> None:
        self._on(stream, lambda: PyBuffer._fill(self, offset, nbytes, value, None))

    def upload_at(self, offset: int, host: np.ndarray, nbytes: int | None = None) -> None:
        """Broken on request: unchecked, or at offset 0."""
        if BROKEN == "unchecked":
            self._copyin(offset, host.reshape(-1).view(np.uint8)[:nbytes], None)
            return
        super().upload_at(0 if BROKEN == "offset" else offset, host, nbytes)

    def download_at(self, offset: int, host: np.ndarray, nbytes: int | None = None) -> None:
        """Broken on request: unchecked, or at offset 0."""
        if BROKEN == "unchecked":
            self._copyout(offset, host.reshape(-1).view(np.uint8)[:nbytes], None)
            return
        super().download_at(0 if BROKEN == "offset" else offset, host, nbytes)

    def device_addr(self) -> int:
        """Broken on request: 0."""
        return 0 if BROKEN == "addr0" else super().device_addr()


class AsyncDevice(PackedPyDevice):
    """The device-style reference device with real asynchronous streams and events."""

    capabilities = frozenset({"streams", "events"})

    def __init__(self, backend: str, ordinal: int) -> None:
        super().__init__(backend, ordinal)
        self._streams = [AsyncStream(self)]

    @property
    def stream(self) -> AsyncStream:  # type: ignore[override]
        return self._streams[0]

    def _alloc(self, nbytes: int) -> AsyncBuffer:
        self.allocs += 1
        buf = AsyncBuffer(self, nbytes)
        self._buffers.append(buf)
        return buf

    def _load(self, artifact: Artifact, kernel: KernelIR, args: ArgBuffer) -> Any:
        entry = super()._load(artifact, kernel, args)
        delay = LONG_KERNEL_SLEEP if kernel.name == "gct_tier_spin" else 0.0

        def launcher(grid: tuple[int, int, int], block: tuple[int, int, int],
                     shared_bytes: int, stream: AsyncStream) -> None:
            values = entry.values()  # resolved now: the core patches args for the next launch
            snapshot = copy.copy(entry)
            snapshot.args = SimpleNamespace(params=args.params, values=values)
            snapshot.values = lambda: values

            def run() -> None:
                time.sleep(delay)
                PyEntry.__call__(snapshot, grid, block, shared_bytes, stream)
            (self.stream if BROKEN == "stream" else stream).submit(run)
        return launcher

    def synchronize(self) -> None:
        for s in list(self._streams):
            s.synchronize()

    def create_stream(self) -> AsyncStream:
        if BROKEN == "create_stream":
            raise RuntimeError("mutant: create_stream is broken")
        s = AsyncStream(self)
        self._streams.append(s)
        return s

    def create_event(self, timing: bool = True) -> AsyncEvent:
        return AsyncEvent(self)


_ASYNC = PyBackend("asyncmutant", priority=1, host_memory=False)
_ASYNC.device_class = AsyncDevice
manager.register(_ASYNC, "asyncmutant")

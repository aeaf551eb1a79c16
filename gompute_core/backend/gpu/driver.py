"""The driver table: the primitives a GPU binding provides, and its error mapping.

A GPU backend is a :class:`GpuDriver` over its binding (CUDA: ``libcuda`` through
ctypes; HIP: hip-python), its context policy (:meth:`GpuDriver.open_context`,
:meth:`GpuDriver.make_current`) and its runtime compiler. Everything else, written
once, is the generic layer of :mod:`gompute_core.backend.gpu`.

Conventions every primitive follows: device addresses and host addresses are ints;
``stream`` is a native stream handle as :meth:`GpuDriver.stream_create` returned it, or
None for the synchronous variant of a copy; a failing call raises through
:meth:`GpuDriver.check` (the core error type named in each primitive's docstring,
unless :attr:`GpuDriver.errors` maps the code to a more precise one), with the code
kept as the thread's ``last_driver_error``; the release primitives (``*_free``,
``*_destroy``, ``module_unload``, ``host_unregister``) raise the same way and the
generic layer decides when a failure there matters.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, NoReturn

from ...errors import GomputeError, clear_last_driver_error, set_last_driver_error


@dataclass(frozen=True)
class DeviceProps:
    """What the generic device needs to know of one GPU (read once, at open)."""

    name: str
    arch: str
    memory_bytes: int
    multiprocessors: int
    max_threads_per_multiprocessor: int
    max_block_dims: tuple[int, int, int]
    max_block_threads: int
    max_shared_bytes: int
    max_argument_bytes: int
    fp64_ratio: float


def primitive(fn: str, cls: type[GomputeError], out: Any = None,
              tail: tuple[Any, ...] = ()) -> Callable[..., Any]:
    """A driver-table method that passes its arguments straight to binding function ``fn``
    (then the constants ``tail``) through :meth:`GpuDriver.invoke`: ``cls`` is the error
    type of a failure, ``out`` the type of what a binding that answers through a pointer
    writes first (the C drivers' convention; None: nothing)."""

    def method(self: GpuDriver, *args: Any) -> Any:
        return self.invoke(cls, fn, out, *args, *tail)

    method.__name__ = method.__qualname__ = fn
    method.__doc__ = f"``{fn}``."
    return method


def query(fn: str, cls: type[GomputeError]) -> Callable[..., bool]:
    """A driver-table method asking whether a stream's or event's work is done: True when
    ``fn`` succeeds, False when it answers :attr:`GpuDriver.not_ready`, ``cls`` otherwise."""

    def method(self: GpuDriver, handle: Any) -> bool:
        code = self.status(fn, handle)
        if code not in (0, self.not_ready):
            self.fail(code, fn, cls)
        return code == 0

    method.__name__ = method.__qualname__ = fn
    method.__doc__ = f"``{fn}``."
    return method


class GpuDriver(ABC):
    """One binding's primitives (about 25 groups: memory, host registration, modules,
    launch, streams, events, graphs, errors, context)."""

    #: backend name: error messages and ``last_driver_error`` say it
    name: ClassVar[str]
    #: codes whose meaning overrides the call's error type (out of memory -> AllocFailed)
    errors: ClassVar[dict[int, type[GomputeError]]] = {}
    #: ``(pointer, size, end)`` markers of the launch's ``extra`` argument array
    launch_markers: ClassVar[tuple[int, int, int]]
    #: True when :meth:`make_current` must run before every call, not once per thread
    #: (CUDA: another library may replace the thread's current context at any time)
    recheck_current: ClassVar[bool] = False
    #: a query's "still running" (CUDA_ERROR_NOT_READY and hipErrorNotReady: 600)
    not_ready: ClassVar[int] = 600
    #: what a code is called in messages, before its number (``"CUresult "``)
    code_label: ClassVar[str] = ""
    #: ``launch(fn, gx, gy, gz, bx, by, bz, shared_bytes, stream, None, extra) -> code``:
    #: the binding's raw launch call, called directly on the hot path (0: success)
    launch: Any

    # ---- the binding's calling convention and errors -----------------------------------------
    @abstractmethod
    def invoke(self, cls: type[GomputeError], fn: str, out: Any, *args: Any) -> Any:
        """Call binding function ``fn`` with ``args`` (after a pointer to a new ``out``
        where the binding answers through one); its answer; ``cls`` on failure."""

    @abstractmethod
    def status(self, fn: str, *args: Any) -> int:
        """Call binding function ``fn`` with ``args``; its result code, unchecked."""

    @abstractmethod
    def error_name(self, code: int) -> str:
        """The driver's words for ``code`` (``"out of memory"``, ``"hipErrorOutOfMemory"``)."""

    def fail(self, code: int, what: str, cls: type[GomputeError]) -> NoReturn:
        """Record ``code`` as the thread's last driver error and raise the mapped error."""
        set_last_driver_error(self.name, code)
        raise self.errors.get(code, cls)(f"{self.name}: {what} failed: {self.error_name(code)} "
                                         f"({self.code_label}{code})")

    def check(self, code: int, what: str, cls: type[GomputeError]) -> None:
        """Raise for a non-zero ``code``; clear the thread's last driver error otherwise."""
        if code:
            self.fail(code, what, cls)
        clear_last_driver_error()

    # ---- devices and contexts -------------------------------------------------------------
    @abstractmethod
    def device_count(self) -> int:
        """GPUs this driver sees (``NoDevice``/``InitFailed`` when it cannot initialise)."""

    @abstractmethod
    def props(self, ordinal: int) -> DeviceProps:
        """The properties of GPU ``ordinal``."""

    @abstractmethod
    def open_context(self, ordinal: int) -> Any:
        """The context the device's work runs in (CUDA: the retained primary context;
        HIP: the ordinal); ``ContextFailed`` on failure."""

    def close_context(self, ordinal: int, context: Any) -> None:  # noqa: B027 - HIP: nothing
        """Give back what :meth:`open_context` took for GPU ``ordinal``."""

    @abstractmethod
    def make_current(self, context: Any) -> None:
        """Make ``context`` current on the calling thread (``ContextFailed``)."""

    @abstractmethod
    def synchronize(self) -> None:
        """Wait for all work of the current context (``SyncFailed``)."""

    def enable_peer(self, peer: Any) -> None:  # noqa: B027 - optional
        """Let the current context read ``peer``'s memory directly (where the GPUs can;
        nothing happens where they cannot: peer copies then go through the host)."""

    def pointer_ordinal(self, addr: int) -> int | None:
        """The ordinal of the GPU holding ``addr``, None for memory that is no GPU's."""
        return None

    # ---- memory ----------------------------------------------------------------------------
    @abstractmethod
    def mem_alloc(self, nbytes: int) -> int:
        """``nbytes`` (> 0) of device memory (``AllocFailed``)."""

    @abstractmethod
    def mem_free(self, addr: int) -> None:
        """Free device memory (``AllocFailed``)."""

    @abstractmethod
    def copy_htod(self, dst: int, src: int, nbytes: int, stream: Any) -> None:
        """Host to device (``CopyFailed``)."""

    @abstractmethod
    def copy_dtoh(self, dst: int, src: int, nbytes: int, stream: Any) -> None:
        """Device to host (``CopyFailed``)."""

    @abstractmethod
    def copy_dtod(self, dst: int, src: int, nbytes: int, stream: Any) -> None:
        """Device to device, one GPU (``CopyFailed``)."""

    @abstractmethod
    def copy_peer(self, dst: int, dst_context: Any, src: int, src_context: Any, nbytes: int,
                  stream: Any) -> None:
        """Device to device across GPUs, enqueued on ``stream`` (``CopyFailed``)."""

    @abstractmethod
    def memset_d8(self, dst: int, value: int, nbytes: int, stream: Any) -> None:
        """Set bytes (``CopyFailed``)."""

    @abstractmethod
    def host_alloc(self, nbytes: int) -> int:
        """Page-locked host memory (``AllocFailed``)."""

    @abstractmethod
    def host_free(self, addr: int) -> None:
        """Free what :meth:`host_alloc` gave."""

    @abstractmethod
    def host_register(self, addr: int, nbytes: int) -> bool:
        """Page-lock existing host memory; False when the driver refuses (never raises)."""

    @abstractmethod
    def host_unregister(self, addr: int) -> None:
        """Undo :meth:`host_register`."""

    def host_is_pinned(self, addr: int) -> bool:
        """True when the byte at ``addr`` is in page-locked host memory (allocated or
        registered by anyone in the process); a driver that cannot tell answers False, and
        ``run`` then stages such memory like pageable memory."""
        return False

    # ---- modules ----------------------------------------------------------------------------
    @abstractmethod
    def module_load(self, image: bytes) -> Any:
        """Load a compiled image (``ModuleLoadFailed``)."""

    @abstractmethod
    def module_unload(self, module: Any) -> None:
        """Unload a module."""

    @abstractmethod
    def module_function(self, module: Any, name: str) -> Any:
        """Entry point ``name`` of ``module`` (``KernelNotFound``)."""

    def opt_in_shared(self, function: Any, total_bytes: int) -> None:  # noqa: B027 - optional
        """Let ``function`` use up to ``total_bytes`` of shared memory (static plus dynamic)
        where the driver asks kernels to opt in above a default."""

    # ---- streams, events, graphs --------------------------------------------------------------
    @abstractmethod
    def stream_create(self) -> Any:
        """A new blocking stream (``SyncFailed``)."""

    @abstractmethod
    def stream_destroy(self, stream: Any) -> None:
        """Release a stream."""

    @abstractmethod
    def stream_address(self, stream: Any) -> int:
        """A stream handle as the int other libraries know it by."""

    @abstractmethod
    def foreign_stream(self, address: int) -> Any:
        """The native handle of another library's stream known by ``address``."""

    @abstractmethod
    def stream_synchronize(self, stream: Any) -> None:
        """Wait for a stream's work (``SyncFailed``)."""

    @abstractmethod
    def stream_query(self, stream: Any) -> bool:
        """True when a stream's work has finished (``SyncFailed``)."""

    @abstractmethod
    def stream_wait_event(self, stream: Any, event: Any) -> None:
        """Later work on ``stream`` waits for ``event`` (``EventFailed``)."""

    @abstractmethod
    def event_create(self, timing: bool) -> Any:
        """A new event (``EventFailed``)."""

    @abstractmethod
    def event_destroy(self, event: Any) -> None:
        """Release an event."""

    @abstractmethod
    def event_record(self, event: Any, stream: Any) -> None:
        """Record ``event`` at the end of native ``stream`` (``EventFailed``)."""

    @abstractmethod
    def event_synchronize(self, event: Any) -> None:
        """Wait for an event (``SyncFailed``)."""

    @abstractmethod
    def event_query(self, event: Any) -> bool:
        """True when an event has happened (``EventFailed``)."""

    @abstractmethod
    def event_elapsed_ms(self, start: Any, end: Any) -> float:
        """Milliseconds between two completed events (``EventFailed``)."""

    @abstractmethod
    def begin_capture(self, stream: Any, mode: str) -> None:
        """Record ``stream``'s work into a graph; ``mode`` is ``"global"``,
        ``"thread_local"`` or ``"relaxed"`` (``CaptureFailed``)."""

    @abstractmethod
    def end_capture(self, stream: Any) -> Any:
        """Stop recording: the graph (``CaptureFailed``)."""

    @abstractmethod
    def graph_instantiate(self, graph: Any) -> Any:
        """An executable graph (``GraphFailed``)."""

    @abstractmethod
    def graph_launch(self, graph_exec: Any, stream: Any) -> None:
        """Replay an executable graph on ``stream`` (``GraphFailed``)."""

    @abstractmethod
    def graph_update(self, graph_exec: Any, graph: Any) -> None:
        """Take ``graph``'s node parameters, same topology (``GraphFailed``)."""

    @abstractmethod
    def graph_destroy(self, graph: Any) -> None:
        """Release a graph."""

    @abstractmethod
    def graph_exec_destroy(self, graph_exec: Any) -> None:
        """Release an executable graph."""

"""The OpenCL device: buffers, command queues as streams, markers as events, launchers.

OpenCL has no device addresses a host can do arithmetic on (``cl_mem`` is a
handle), while the core packs each launch's pointers as 64-bit addresses.
So each buffer gets a *synthetic* address from the SDK's ``AddressMap``, and a
launcher resolves the packed addresses back to ``cl_mem`` objects through it (an
address inside a buffer becomes a sub-buffer at that offset).
"""

from __future__ import annotations

import struct
import threading
import weakref
from typing import Any

import numpy as np
import pyopencl as cl

from gompute_core.backend import (
    AddressMap,
    ArgBuffer,
    Artifact,
    Buffer,
    Device,
    Event,
    Stream,
)
from gompute_core.errors import (
    AllocFailed,
    CopyFailed,
    EventFailed,
    InvalidArgument,
    LaunchFailed,
    ModuleLoadFailed,
    SyncFailed,
    Unsupported,
    set_last_driver_error,
)
from gompute_core.ir.kernel import KernelIR


def driver_error(exc: cl.Error) -> str:
    """Record ``exc``'s OpenCL status code as this thread's last driver error; its text."""
    code = getattr(exc, "code", -1)
    set_last_driver_error("opencl", code if isinstance(code, int) else -1)
    return str(exc)


class OpenCLStream(Stream):
    """An in-order command queue (with profiling, for event timing)."""

    def __init__(self, device: OpenCLDevice) -> None:
        self.device = device
        self.queue = cl.CommandQueue(device.cl_context, device.cl_device,
                                     properties=cl.command_queue_properties.PROFILING_ENABLE)
        self.last: cl.Event | None = None

    def track(self, event: cl.Event) -> None:
        """Remember ``event`` as the newest command of this in-order queue, and submit it."""
        self.last = event
        self.queue.flush()

    def synchronize(self) -> None:
        """Wait for everything enqueued here."""
        try:
            self.queue.finish()
        except cl.Error as exc:
            raise SyncFailed(f"opencl: stream synchronize: {driver_error(exc)}") from exc

    def query(self) -> bool:
        """True when everything enqueued here has finished (in order: the newest command)."""
        last = self.last
        return last is None or \
            last.command_execution_status == cl.command_execution_status.COMPLETE

    def wait_event(self, event: OpenCLEvent) -> None:
        """Make later work here wait for ``event``."""
        if event.event is None:
            raise EventFailed("opencl: wait_event on an event never recorded")
        self.track(cl.enqueue_barrier(self.queue, wait_for=[event.event]))

    def __repr__(self) -> str:
        return f"<OpenCLStream of opencl:{self.device.ordinal}>"


class OpenCLEvent(Event):
    """A marker in a queue: ``record``, ``synchronize``, ``query``, ``elapsed_us``."""

    def __init__(self, device: OpenCLDevice) -> None:
        self.device = device
        self.event: cl.Event | None = None

    def record(self, stream: OpenCLStream | None = None) -> None:
        """Mark the current end of ``stream`` (default: the device's)."""
        s = stream if stream is not None else self.device.stream
        if getattr(s, "device", None) is not self.device:
            raise InvalidArgument(f"record: {s!r} is not a stream of {self.device!r}")
        self.event = cl.enqueue_marker(s.queue)
        s.track(self.event)

    def _recorded(self, what: str) -> cl.Event:
        if self.event is None:
            raise EventFailed(f"opencl: event {what} before record()")
        return self.event

    def synchronize(self) -> None:
        """Wait until the marker is reached."""
        self._recorded("synchronize").wait()

    def query(self) -> bool:
        """True when the marker has been reached."""
        status = self._recorded("query").command_execution_status
        return status == cl.command_execution_status.COMPLETE

    def elapsed_us(self, start: OpenCLEvent) -> float:
        """Microseconds from ``start`` to this event (both complete)."""
        end, begin = self._recorded("elapsed_us"), start._recorded("elapsed_us")
        end.wait()
        begin.wait()
        return (end.profile.end - begin.profile.end) / 1000.0


class OpenCLBuffer(Buffer):
    """A ``cl_mem`` of ``nbytes`` bytes (at least one byte is allocated)."""

    __slots__ = ("mem", "_subs")

    def __init__(self, device: OpenCLDevice, mem: cl.Buffer, nbytes: int, addr: int) -> None:
        super().__init__(device, nbytes, addr)
        self.mem = mem
        self._subs: dict[int, cl.Buffer] = {}

    def _run(self, stream: Stream | None, enqueue: Any) -> None:
        """``enqueue(queue)`` on ``stream`` (the default stream, waited for, when None)."""
        s: OpenCLStream = stream if stream is not None else self.device.stream  # type: ignore[assignment]
        try:
            event = enqueue(s.queue)
        except cl.Error as exc:
            raise CopyFailed(f"opencl: transfer on {self!r}: {driver_error(exc)}") from exc
        s.track(event)
        if stream is None:
            event.wait()

    def _copyin(self, offset: int, host: np.ndarray, stream: Stream | None) -> None:
        self._run(stream, lambda q: cl.enqueue_copy(q, self.mem, host, dst_offset=offset,
                                                    is_blocking=False))

    def _copyout(self, offset: int, host: np.ndarray, stream: Stream | None) -> None:
        self._run(stream, lambda q: cl.enqueue_copy(q, host, self.mem, src_offset=offset,
                                                    is_blocking=False))

    def _copy_device(self, offset: int, src: Buffer, src_offset: int, nbytes: int,
                     stream: Stream | None) -> None:
        self._run(stream, lambda q: cl.enqueue_copy(
            q, self.mem, src.mem, byte_count=nbytes,  # type: ignore[attr-defined]
            src_offset=src_offset, dst_offset=offset))

    def _fill(self, offset: int, nbytes: int, value: int, stream: Stream | None) -> None:
        self._run(stream, lambda q: cl.enqueue_fill_buffer(q, self.mem, np.uint8(value),
                                                           offset, nbytes))

    def _release(self) -> None:
        self.device.addresses.remove(self)
        for sub in self._subs.values():
            sub.release()
        self._subs.clear()
        self.mem.release()

    def at(self, offset: int) -> cl.Buffer:
        """The ``cl_mem`` starting ``offset`` bytes in (a cached sub-buffer past 0)."""
        if offset == 0:
            return self.mem
        sub = self._subs.get(offset)
        if sub is None:
            align = self.device.cl_device.mem_base_addr_align // 8
            if offset % align:
                raise LaunchFailed(f"opencl: a pointer {offset} bytes into a buffer is not "
                                   f"aligned to the device's {align}-byte sub-buffer rule")
            sub = self._subs[offset] = self.mem.get_sub_region(offset, self.nbytes - offset)
        return sub


class OpenCLLauncher:
    """``launcher(grid, block, shared_bytes, stream)`` of a spec or raw kernel: each
    argument set from its bytes in the packed buffer (a pointer resolved to its
    ``cl_mem``), then an NDRange of ``grid * block`` work-items in work-groups of
    ``block``."""

    def __init__(self, device: OpenCLDevice, kernel: cl.Kernel, args: ArgBuffer) -> None:
        self.device, self.kernel, self.args = device, kernel, args
        self.slots = [(s.kind == "pointer", s.offset, s.size) for s in args.layout.slots]

    def __call__(self, grid: tuple[int, int, int], block: tuple[int, int, int],
                 shared_bytes: int, stream: OpenCLStream) -> None:
        if shared_bytes:
            raise Unsupported("opencl: raw kernels take no dynamic shared memory here "
                              "(declare it with g.builtins.shared_array)")
        raw = self.args.data
        for i, (pointer, at, size) in enumerate(self.slots):
            if pointer:
                self.kernel.set_arg(i, self.device.resolve(struct.unpack_from("<Q", raw, at)[0]))
            else:
                self.kernel.set_arg(i, np.frombuffer(bytes(raw[at:at + size]), np.uint8))
        size = tuple(g * b for g, b in zip(grid, block, strict=True))
        try:
            event = cl.enqueue_nd_range_kernel(stream.queue, self.kernel, size, block)
        except cl.Error as exc:
            raise LaunchFailed(f"opencl: launch of {self.kernel.function_name} with grid "
                               f"{grid}, block {block}: {driver_error(exc)}") from exc
        stream.track(event)


class OpenCLDevice(Device):
    """One OpenCL device with its context, default queue and program cache."""

    backend = "opencl"
    capabilities = frozenset({"streams", "events"})

    def __init__(self, ordinal: int, cl_device: cl.Device, arch: str) -> None:
        self.ordinal, self.cl_device, self.arch = ordinal, cl_device, arch
        self.name = cl_device.name
        self.max_block_dims = tuple(cl_device.max_work_item_sizes[:3])  # type: ignore[assignment]
        self.max_block_threads = cl_device.max_work_group_size
        self.max_shared_bytes = cl_device.local_mem_size
        if "cl_khr_int64_base_atomics" in cl_device.extensions.split():
            # f64 atomics are compare-and-swap loops on the 64-bit pattern
            self.capabilities = type(self).capabilities | {"f64_atomics"}
        self.cl_context = cl.Context([cl_device])
        self._streams: weakref.WeakSet[OpenCLStream] = weakref.WeakSet()
        self._stream = self.create_stream()
        self._lock = threading.Lock()
        self.addresses = AddressMap(self.backend)
        """The live buffers by their synthetic addresses (``cl_mem`` has none)."""
        self._programs: dict[bytes, cl.Program] = {}

    @property
    def stream(self) -> OpenCLStream:
        """The default queue."""
        return self._stream

    # ---- memory ----------------------------------------------------------------------
    def _alloc(self, nbytes: int) -> OpenCLBuffer:
        if nbytes > self.cl_device.max_mem_alloc_size:
            set_last_driver_error(self.backend, cl.status_code.INVALID_BUFFER_SIZE)
            raise AllocFailed(f"opencl: {nbytes} bytes is more than this device allocates at "
                              f"once ({self.cl_device.max_mem_alloc_size})")
        try:
            mem = cl.Buffer(self.cl_context, cl.mem_flags.READ_WRITE, max(nbytes, 1))
        except cl.Error as exc:
            raise AllocFailed(f"opencl: cannot allocate {nbytes} bytes: "
                              f"{driver_error(exc)}") from exc
        buf = OpenCLBuffer(self, mem, nbytes, self.addresses.reserve(nbytes))
        self.addresses.add(buf)
        return buf

    def resolve(self, addr: int) -> cl.Buffer:
        """The ``cl_mem`` a packed address stands for."""
        buf, offset = self.addresses.find(addr)
        return buf.at(offset)  # type: ignore[attr-defined]

    # ---- programs ----------------------------------------------------------------------
    def _load(self, artifact: Artifact, kernel: KernelIR, args: ArgBuffer) -> OpenCLLauncher:
        return OpenCLLauncher(self, self.cl_kernel(artifact), args)

    def cl_kernel(self, artifact: Artifact) -> cl.Kernel:
        """A new ``cl.Kernel`` of the artifact's entry (its program built once per image)."""
        if artifact.format != "opencl-binary":
            raise ModuleLoadFailed(f"opencl: cannot load a {artifact.format!r} artifact")
        if artifact.target != self.arch:
            raise ModuleLoadFailed(f"opencl: artifact built for {artifact.target!r}, this "
                                   f"device is {self.arch!r}")
        with self._lock:
            program = self._programs.get(artifact.image)
            if program is None:
                try:
                    program = cl.Program(self.cl_context, [self.cl_device],
                                         [artifact.image]).build()
                except cl.Error as exc:
                    raise ModuleLoadFailed(f"opencl: loading {artifact.entry!r}: "
                                           f"{driver_error(exc)}") from exc
                self._programs[artifact.image] = program
        return cl.Kernel(program, artifact.entry)

    def max_grid_blocks(self, block_size: int) -> int:
        """A few blocks per compute unit: the entries loop grid-stride."""
        return max(1, self.cl_device.max_compute_units) * 8

    def synchronize(self) -> None:
        """Wait for every queue of this device."""
        for stream in list(self._streams):
            stream.synchronize()

    def create_stream(self) -> OpenCLStream:
        """A new in-order queue."""
        stream = OpenCLStream(self)
        self._streams.add(stream)
        return stream

    def create_event(self, timing: bool = True) -> OpenCLEvent:
        """A new (unrecorded) event; every queue profiles, so events always time."""
        return OpenCLEvent(self)

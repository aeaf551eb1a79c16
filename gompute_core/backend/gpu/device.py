"""The generic GPU device and launcher: everything CUDA and HIP share, over a driver table.

A backend subclasses :class:`GpuDevice` with its :class:`~.driver.GpuDriver`, its
DLPack device type and :meth:`GpuDevice.compatible` (can an artifact built for one
arch load here). Context policy: each thread remembers which device it made current
last (:data:`_current`); a device makes itself current before a driver call when it is
not that one, or before every call when the driver says another library may change
the current context behind our back (``recheck_current``, CUDA). The launch path
checks only the thread's memory; a launch the driver refuses (another library made
its context current: CUDA answers ``CUDA_ERROR_INVALID_CONTEXT`` or ``_INVALID_HANDLE``)
makes the device current again and launches once more, and only a second refusal is
an error.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import hashlib
import threading
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from ...abi.entry_args import ArgBuffer
from ...errors import (
    GomputeError,
    InvalidArgument,
    LaunchFailed,
    ModuleLoadFailed,
    NoDevice,
)
from ...ir.kernel import KernelIR
from ...plugins.records import Artifact, Availability, DeviceInfo
from ..device import Device
from ..pinning import HostPinning, pinned_array
from .driver import GpuDriver
from .memory import GpuBuffer
from .objects import GpuEvent, GpuStream, Lifetimes

MAX_THREADS_PER_LAUNCH = 2**32 - 1
"""HIP requires ``gridDim.x * blockDim.x < 2**32``; CUDA's grids are far from it."""


def list_devices(driver: GpuDriver) -> tuple[DeviceInfo, ...]:
    """Every GPU ``driver`` sees, as a probe reports them."""
    return tuple(DeviceInfo(i, p.name, p.arch, p.memory_bytes)
                 for i, p in ((i, driver.props(i)) for i in range(driver.device_count())))


def probe(backend: str, compiler: Callable[[], str], driver: Callable[[], GpuDriver],
          none: str, hazards: Callable[[], tuple[str, ...]] | None = None) -> Availability:
    """A GPU backend's availability; never raises. ``compiler()`` names the runtime
    compiler, ``driver()`` opens the driver table (its error is the reason when it
    cannot), ``none`` is the reason when it sees no GPU; ``hazards()``, when given, lists
    known defects of the compiler that will be used (``Availability.warnings``)."""
    try:
        name = compiler()
        warnings = hazards() if hazards is not None else ()
    except Exception as exc:  # noqa: BLE001 - a broken compiler must not break the probe
        name, warnings = f"unusable ({exc})", ()
    try:
        devices = list_devices(driver())
    except Exception as exc:  # noqa: BLE001 - a probe reports, it never raises
        return Availability(backend, False, reason=str(exc), compiler=name)
    if not devices:
        return Availability(backend, False, reason=none, compiler=name)
    return Availability(backend, True, devices=devices, compiler=name, warnings=warnings)


class _Current(threading.local):
    device: GpuDevice | None = None


_current = _Current()
"""The device each thread made current last (None: none yet)."""


class GpuLauncher:
    """One loaded entry point with its argument buffer handed to the driver as the
    launch's ``extra`` array (built once: the buffer keeps one address for its life).
    Calling it (``grid``, ``block``, ``shared_bytes``, ``stream``) is the one launch
    primitive of spec and raw kernels alike."""

    __slots__ = ("device", "name", "_fn", "_size", "_extra", "_extra_ptr", "_launch")

    def __init__(self, device: GpuDevice, function: Any, name: str, args: ArgBuffer) -> None:
        self.device, self.name = device, name
        pointer, size, end = device.driver.launch_markers
        self._size = ctypes.c_size_t(args.size)
        self._extra = (ctypes.c_void_p * 5)(pointer, args.address, size,
                                            ctypes.addressof(self._size), end)
        self._extra_ptr = ctypes.c_void_p(ctypes.addressof(self._extra))
        self._fn = function
        self._launch = device.driver.launch

    def __call__(self, grid: tuple[int, int, int], block: tuple[int, int, int],
                 shared_bytes: int, stream: GpuStream) -> None:
        """Launch with this geometry (checked by the core) on ``stream``."""
        if _current.device is self.device:
            gx, gy, gz = grid
            bx, by, bz = block
            if not self._launch(self._fn, gx, gy, gz, bx, by, bz, shared_bytes, stream.handle,
                                None, self._extra_ptr):
                return
        self._relaunch(grid, block, shared_bytes, stream)

    def _relaunch(self, grid: tuple[int, int, int], block: tuple[int, int, int],
                  shared_bytes: int, stream: GpuStream) -> None:
        """The slow path: another device (or none) was current here, another library
        replaced our context, or the launch failed (nothing ran: launching again is
        safe and gives the error)."""
        self.device.make_current()
        code = self._launch(self._fn, *grid, *block, shared_bytes, stream.handle, None,
                            self._extra_ptr)
        if code:
            self.device.driver.fail(code, f"launching {self.name!r} with grid {tuple(grid)}, "
                                          f"block {tuple(block)} and {shared_bytes} bytes of "
                                          "dynamic shared memory", LaunchFailed)


class GpuDevice(Device):
    """One GPU over a driver table (see the module docstring for contexts and threads)."""

    capabilities = frozenset({"streams", "events", "graphs", "pinned_memory", "f64_atomics"})
    #: full-occupancy waves of blocks an elementwise launch fills (the entries loop
    #: grid-stride): on an H200, 8 waves reached 0.94x of a device copy against 0.91x for 1
    grid_waves: ClassVar[int] = 8

    def __init__(self, driver: GpuDriver, ordinal: int) -> None:
        count = driver.device_count()
        if isinstance(ordinal, bool) or not isinstance(ordinal, int) or not 0 <= ordinal < count:
            raise NoDevice(f"{self.backend}: device {ordinal!r} does not exist ({count} "
                           "device(s))")
        self.driver, self.ordinal = driver, ordinal
        self.props = props = driver.props(ordinal)
        self.name, self.arch, self.memory_bytes = props.name, props.arch, props.memory_bytes
        self.sm_count = props.multiprocessors
        self.max_threads_per_sm = props.max_threads_per_multiprocessor
        self.max_block_dims, self.max_block_threads = props.max_block_dims, \
            props.max_block_threads
        self.max_shared_bytes = props.max_shared_bytes
        self.max_argument_bytes = props.max_argument_bytes
        self.native_context = driver.open_context(ordinal)
        self._lifetimes = Lifetimes()
        self._modules: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._pinning = HostPinning(self._register_host, self._unregister_host,
                                    self._in_context(self.driver.host_is_pinned))
        self._peers: set[int] = set()
        self._order_event: GpuEvent | None = None
        self._closed = False
        self.make_current()
        self._stream = GpuStream(self)
        atexit.register(self.close)

    # ---- contexts and lifetimes ----------------------------------------------------------------
    def make_current(self) -> None:
        """Make this device's context current on the calling thread."""
        self.driver.make_current(self.native_context)
        _current.device = self

    def enter(self) -> None:
        """Make this device current before a driver call, when it may not be."""
        if self.driver.recheck_current or _current.device is not self:
            self.make_current()

    def track(self, owner: object, release: Callable[[Any], None], handle: Any) -> Any:
        """Release native ``handle`` with driver primitive ``release`` once: on the
        returned finalizer's call, ``owner``'s collection or :meth:`close`."""
        return self._lifetimes.track(owner, self._in_context(release), handle)

    def _in_context(self, call: Callable[..., Any]) -> Callable[..., Any]:
        """``call`` run with this device current, from whatever thread (a collection may
        run it between another device's ``enter`` and its driver call: that device is
        made current again afterwards)."""

        def run(*args: Any) -> Any:
            previous = _current.device
            self.enter()
            try:
                return call(*args)
            finally:
                if previous is not None and previous is not self and not previous.closed:
                    previous.make_current()

        return run

    @property
    def live_objects(self) -> int:
        """Native objects (buffers, streams, events, graphs) not yet released."""
        return len(self._lifetimes)

    def close(self) -> None:
        """Release every live object, the modules, pinned registrations and the context
        (idempotent; also at exit)."""
        if self._closed:
            return
        with contextlib.suppress(GomputeError):
            self.synchronize()
        self._closed = True
        with contextlib.suppress(GomputeError):
            self._pinning.close()
        self._lifetimes.close()
        with self._lock:
            modules, self._modules = list(self._modules.values()), {}
        for module in modules:
            with contextlib.suppress(GomputeError):
                self.driver.module_unload(module)
        self.driver.close_context(self.ordinal, self.native_context)
        if _current.device is self:
            _current.device = None

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed

    # ---- the SDK's primitives ---------------------------------------------------------------
    @property
    def stream(self) -> GpuStream:
        """The device's default stream (launches enqueue here unless told otherwise)."""
        return self._stream

    def _alloc(self, nbytes: int) -> GpuBuffer:
        return GpuBuffer.allocate(self, nbytes)

    def synchronize(self) -> None:
        """Wait for all work on the device; a device fault raises ``SyncFailed``."""
        self.enter()
        self.driver.synchronize()

    def create_stream(self) -> GpuStream:
        """A new stream on this device."""
        return GpuStream(self)

    def create_event(self, timing: bool = True) -> GpuEvent:
        """A new event (with timing unless ``timing=False``)."""
        return GpuEvent(self, timing)

    def max_grid_blocks(self, block_size: int) -> int:
        """:attr:`grid_waves` full-occupancy waves of ``block_size``-thread blocks, under
        ``2**32`` threads per launch."""
        waves = self.sm_count * self.grid_waves * max(1, self.max_threads_per_sm // block_size)
        return max(1, min(waves, MAX_THREADS_PER_LAUNCH // block_size))

    def fp64_ratio(self) -> float:
        """FP64 throughput as a fraction of FP32 (0.5 on H100/H200 and MI200-class parts)."""
        return self.props.fp64_ratio

    # ---- modules and launchers ----------------------------------------------------------------
    def compatible(self, artifact: Artifact) -> bool:
        """True when ``artifact`` (built for ``artifact.target``) loads on this device."""
        return True

    def check_arch(self, artifact: Artifact) -> None:
        """``ModuleLoadFailed`` naming both archs when ``artifact`` cannot load here."""
        if not self.compatible(artifact):
            raise ModuleLoadFailed(
                f"{self.backend}: artifact for kernel {artifact.entry!r} was built for "
                f"{artifact.target} but device {self.ordinal} ({self.name}) is {self.arch}; "
                f"rebuild it with arch={self.arch!r} (gompute build --arch {self.arch})")

    def load_module(self, image: bytes) -> Any:
        """Load a compiled image once per device and image (cached by its sha256)."""
        if not isinstance(image, (bytes, bytearray, memoryview)):
            raise InvalidArgument(f"load_module: image must be bytes, got {type(image).__name__}")
        key = hashlib.sha256(image).hexdigest()
        with self._lock:
            module = self._modules.get(key)
            if module is None:
                self.enter()
                module = self._modules[key] = self.driver.module_load(bytes(image))
        return module

    def function(self, image: bytes, name: str) -> Any:
        """The native handle of entry ``name`` of ``image`` (``KernelNotFound``)."""
        module = self.load_module(image)
        self.enter()
        return self.driver.module_function(module, name)

    def _load(self, artifact: Artifact, kernel: KernelIR, args: ArgBuffer) -> GpuLauncher:
        """Load ``artifact``'s entry, allowed :attr:`max_shared_bytes` of shared memory in
        all, and return its launcher."""
        self.check_arch(artifact)
        function = self.function(artifact.image, artifact.entry)
        self.driver.opt_in_shared(function, self.max_shared_bytes)
        return GpuLauncher(self, function, artifact.entry, args)

    # ---- host memory ----------------------------------------------------------------
    def pin(self, host: np.ndarray) -> bool:
        """Page-lock ``host``'s memory while it lives (:class:`HostPinning`)."""
        return self._pinning.pin(host)

    def _register_host(self, addr: int, nbytes: int) -> bool:
        return bool(self._in_context(self.driver.host_register)(addr, nbytes))

    def _unregister_host(self, addr: int) -> None:
        self._in_context(self.driver.host_unregister)(addr)

    def pinned(self, shape: Any, dtype: Any = np.uint8) -> np.ndarray:
        """A page-locked host array, freed when it and its views are collected (from any
        thread; nothing to free once the device is closed: the context took it along)."""
        host_free = self._in_context(self.driver.host_free)

        def free(addr: int) -> None:
            if not self._closed:
                host_free(addr)

        host_alloc = self._in_context(self.driver.host_alloc)
        return pinned_array(lambda nbytes: int(host_alloc(nbytes)), free, shape, dtype)

    # ---- interop ----------------------------------------------------------------
    def _borrow(self, addr: int, nbytes: int) -> GpuBuffer:
        return GpuBuffer(self, nbytes, addr, owned=False)

    def pointer_ordinal(self, addr: int) -> int | None:
        """The ordinal of the GPU holding ``addr``, None for memory that is no GPU's."""
        self.enter()
        return self.driver.pointer_ordinal(addr)

    def stream_handle(self, stream: GpuStream) -> int:  # type: ignore[override]
        """The native handle of one of this device's streams, as an int."""
        return stream.address

    def order_streams(self, waiter: int, signaller: int) -> None:
        """``waiter`` waits for ``signaller``'s pending work (native handles, either
        another library's): an event recorded on ``signaller``, then waited for."""
        driver = self.driver
        with self._lock:
            if self._order_event is None:
                self._order_event = GpuEvent(self, timing=False)
            self.enter()
            driver.event_record(self._order_event.handle, driver.foreign_stream(signaller))
            driver.stream_wait_event(driver.foreign_stream(waiter), self._order_event.handle)

    def enable_peer(self, peer: GpuDevice) -> None:
        """Let this device read ``peer``'s memory directly (once per pair)."""
        if peer.ordinal not in self._peers:
            self.enter()
            self.driver.enable_peer(peer.native_context)
            self._peers.add(peer.ordinal)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.ordinal}: {self.name} ({self.arch})>"

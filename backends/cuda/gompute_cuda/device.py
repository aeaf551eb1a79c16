"""The CUDA device: primary context, module cache, allocation, streams, synchronize.

Threads: pycuda keeps a context stack per thread and aborts the process if a
thread ends with a context still pushed. So the primary context is pushed once
on the main thread (popped by :meth:`CudaDevice.close` or at exit), and any
other thread pushes it around each driver call and pops it afterwards
(:meth:`CudaDevice.enter`).

Several GPUs: each ``CudaDevice`` retains its own device's primary context.
On the main thread one of them is pushed at a time (:data:`driver.MAIN`): a
call for another device pops it and pushes its own (only when the device in
use changes); other threads push the right one around each call. Interop
(:mod:`gompute_core.interop`): buffers are ``kDLCUDA`` memory, foreign
streams are ordered through an event (``cuEventRecord`` then
``cuStreamWaitEvent``), and the legacy default stream needs no ordering (our
streams are blocking streams).
"""

from __future__ import annotations

import atexit
import ctypes
import hashlib
import threading
import weakref
from typing import Any

import numpy as np

from gompute_core.backend import ArgBuffer, Artifact, Device, HostPinning, RawArgBuffer
from gompute_core.errors import (
    AllocFailed,
    ContextFailed,
    EventFailed,
    KernelNotFound,
    ModuleLoadFailed,
    NoDevice,
    SyncFailed,
)
from gompute_core.ir.kernel import KernelIR

from .driver import MAIN, check, cuda, guarded, libcuda
from .memory import CudaBuffer, pinned_empty
from .nvrtc import parse_arch
from .program import CudaLauncher, CudaRawLauncher
from .stream import CudaEvent, CudaStream

_get_ident = threading.get_ident

GRID_WAVES = 8
"""Grid cap for elementwise kinds, in full-occupancy waves: measured on an H200 (2**28 f32
map in place), 8 waves reached 0.94x of a device copy against 0.91x for one wave."""

CU_STREAM_LEGACY = 1
"""The legacy default stream's handle (what CuPy, torch and numba report for their default
stream): our blocking streams are ordered with it both ways, for free."""
CU_EVENT_DISABLE_TIMING = 2
CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
STATIC_SHARED_LIMIT = 48 * 1024
"""Shared memory a block may use without opting in (``cuFuncSetAttribute``)."""


class CudaDevice(Device):
    """One NVIDIA GPU opened through pycuda (see the module docstring for threads)."""

    backend = "cuda"
    capabilities = frozenset({"streams", "events", "graphs", "pinned_memory", "f64_atomics"})
    dlpack_device_type = 2  # kDLCUDA
    ordered_streams = frozenset({CU_STREAM_LEGACY})

    def __init__(self, ordinal: int) -> None:
        drv = cuda()
        count = drv.Device.count()
        if isinstance(ordinal, bool) or not isinstance(ordinal, int) or not 0 <= ordinal < count:
            raise NoDevice(f"cuda: device {ordinal!r} does not exist ({count} device(s))")
        self.ordinal = ordinal
        self._dev = drv.Device(ordinal)
        with guarded(ContextFailed, f"cuda: retaining the primary context of device {ordinal}"):
            self._ctx = self._dev.retain_primary_context()
        self._ctx_handle = int(self._ctx.handle)
        self._current = ctypes.c_void_p()  # cuCtxGetCurrent's answer (main thread only)
        self._current_ref = ctypes.byref(self._current)
        self._get_current = libcuda().cuCtxGetCurrent
        self.main_thread = threading.main_thread().ident
        major, minor = self._dev.compute_capability()
        self.arch = f"sm_{major}{minor}"
        self.name = self._dev.name()
        attr = drv.device_attribute
        self.sm_count = self._dev.get_attribute(attr.MULTIPROCESSOR_COUNT)
        self.max_threads_per_sm = self._dev.get_attribute(attr.MAX_THREADS_PER_MULTIPROCESSOR)
        self.max_block_dims = (self._dev.get_attribute(attr.MAX_BLOCK_DIM_X),
                               self._dev.get_attribute(attr.MAX_BLOCK_DIM_Y),
                               self._dev.get_attribute(attr.MAX_BLOCK_DIM_Z))
        self.max_block_threads = self._dev.get_attribute(attr.MAX_THREADS_PER_BLOCK)
        # the opt-in maximum (227 KiB on Hopper): raw launchers opt in at load
        self.max_shared_bytes = self._dev.get_attribute(
            getattr(attr, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", attr.MAX_SHARED_MEMORY_PER_BLOCK))
        self.memory_bytes = self._dev.total_memory()
        # 32,764 bytes of kernel arguments from CUDA 12.1 on Volta and later; 4 KiB before
        self.max_argument_bytes = 32764 if major >= 7 and drv.get_driver_version() >= 12010 \
            else 4096
        self._modules: dict[str, Any] = {}
        self._cmodules: dict[str, ctypes.c_void_p] = {}
        self._pinning = HostPinning(self._register_host, self._unregister_host)
        self._lock = threading.Lock()
        self._buffers: weakref.WeakSet[CudaBuffer] = weakref.WeakSet()
        self._closed = False
        self._stream = CudaStream(self)
        self._order_event: ctypes.c_void_p | None = None
        self._context_handle: ctypes.c_void_p | None = None
        self._peers: set[int] = set()
        self._order_lock = threading.Lock()
        atexit.register(self.close)

    # ---- context -------------------------------------------------------------------
    def enter(self) -> bool:
        """Make the context current on this thread; True when the caller must pop it.

        On the main thread the context we keep pushed is checked to be still current:
        another library may have made its own current with ``cuCtxSetCurrent`` and left it
        there (XLA does after its own calls; on a machine with several GPUs that may be
        another device's context), and a module, stream or event made then would belong
        to that context (every later launch failing with CUDA_ERROR_INVALID_HANDLE)."""
        if _get_ident() == self.main_thread:
            if MAIN.device is not self:
                self._become_main()
            else:
                self.reclaim_main_context()
            return False
        try:
            self._ctx.push()
        except cuda().Error as exc:
            raise ContextFailed(f"cuda: making device {self.ordinal} current: {exc}") from None
        return True

    def _become_main(self) -> None:
        """Make this device's context the one the main thread keeps pushed."""
        with MAIN.lock, guarded(ContextFailed, f"cuda: making device {self.ordinal} current"):
            if MAIN.device is not None:
                cuda().Context.pop()
                MAIN.device = None
            self._ctx.push()
            MAIN.device = self

    def reclaim_main_context(self) -> bool:
        """On the main thread: make this device's context current again if another library
        replaced it (``cuCtxSetCurrent``); True when it had been replaced."""
        if self._get_current(self._current_ref) != 0 or \
                self._current.value == self._ctx_handle:
            return False
        return libcuda().cuCtxSetCurrent(ctypes.c_void_p(self._ctx_handle)) == 0

    def track(self, buf: CudaBuffer) -> None:
        """Remember ``buf`` so :meth:`close` can free it before the context goes."""
        self._buffers.add(buf)

    # ---- the SDK's primitives -----------------------------------------------------------
    @property
    def stream(self) -> CudaStream:
        """The device's default stream (launches enqueue here unless told otherwise)."""
        return self._stream

    def _alloc(self, nbytes: int) -> CudaBuffer:
        return CudaBuffer(self, nbytes)

    # ---- interop --------------------------------------------------------------------------
    def _borrow(self, addr: int, nbytes: int) -> CudaBuffer:
        return CudaBuffer.borrowed(self, addr, nbytes)

    def pointer_ordinal(self, addr: int) -> int | None:
        """The ordinal of the GPU holding ``addr`` (``cuPointerGetAttribute``), None for
        memory that is no device's."""
        ordinal = ctypes.c_int(-1)
        with guarded(ContextFailed, "cuda: cuPointerGetAttribute", self):
            code = libcuda().cuPointerGetAttribute(ctypes.byref(ordinal),
                                                   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                                   ctypes.c_uint64(addr))
        return ordinal.value if code == 0 and ordinal.value >= 0 else None

    def context_handle(self) -> ctypes.c_void_p:
        """This device's primary context as a raw ``CUcontext``."""
        if self._context_handle is None:
            handle = ctypes.c_void_p()
            with guarded(ContextFailed, "cuda: cuCtxGetCurrent", self):
                check(libcuda().cuCtxGetCurrent(ctypes.byref(handle)), ContextFailed,
                      "cuda: cuCtxGetCurrent")
            self._context_handle = handle
        return self._context_handle

    def enable_peer(self, peer: CudaDevice) -> None:
        """Let this device's context read ``peer``'s memory directly (once per pair; where
        the GPUs cannot, peer copies go through the host, done by the driver)."""
        if peer.ordinal in self._peers:
            return
        theirs = peer.context_handle()  # before entering ours: it makes the peer's current
        with guarded(ContextFailed, "cuda: cuCtxEnablePeerAccess", self):
            libcuda().cuCtxEnablePeerAccess(theirs, 0)  # 704: already enabled; else no P2P
        self._peers.add(peer.ordinal)

    def stream_handle(self, stream: CudaStream) -> int:  # type: ignore[override]
        """The ``CUstream`` of one of this device's streams."""
        return stream.handle

    def order_streams(self, waiter: int, signaller: int) -> None:
        """``waiter`` waits for ``signaller``'s pending work: an event recorded on
        ``signaller`` (this device's context), then ``cuStreamWaitEvent``."""
        lib = libcuda()
        with self._order_lock, guarded(EventFailed, "cuda: ordering streams", self):
            if self._order_event is None:
                event = ctypes.c_void_p()
                check(lib.cuEventCreate(ctypes.byref(event), CU_EVENT_DISABLE_TIMING),
                      EventFailed, "cuda: cuEventCreate")
                self._order_event = event
            # on every launch with a foreign stream: the messages are built only on failure
            code = lib.cuEventRecord(self._order_event, ctypes.c_void_p(signaller))
            if code:
                check(code, EventFailed, f"cuda: cuEventRecord on stream {signaller:#x}")
            code = lib.cuStreamWaitEvent(ctypes.c_void_p(waiter), self._order_event, 0)
            if code:
                check(code, EventFailed, f"cuda: cuStreamWaitEvent on stream {waiter:#x}")

    def _load(self, artifact: Artifact, kernel: KernelIR, args: ArgBuffer) -> CudaLauncher:
        """Load ``artifact`` once per image (through libcuda: the launcher calls
        ``cuLaunchKernel`` itself) and return the launcher of its entry."""
        self._check_arch(artifact)
        return CudaLauncher(self, self.cfunction(artifact.image, artifact.entry),
                            artifact.entry, kernel.block_size, args)

    def _load_raw(self, artifact: Artifact, kernel: KernelIR,
                  args: RawArgBuffer) -> CudaRawLauncher:
        """Load a raw kernel's artifact and return its launcher; the function may use up to
        :attr:`max_shared_bytes` of shared memory in all (opted in here, above 48 KiB)."""
        self._check_arch(artifact)
        cfn = self.cfunction(artifact.image, artifact.entry)
        if self.max_shared_bytes > STATIC_SHARED_LIMIT:
            lib, fn = libcuda(), ctypes.c_void_p(cfn)
            static = ctypes.c_int(0)
            with guarded(ModuleLoadFailed, "cuda: cuFuncGetAttribute", self):
                check(lib.cuFuncGetAttribute(ctypes.byref(static),
                                             CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn),
                      ModuleLoadFailed, f"cuda: shared memory of {artifact.entry!r}")
                check(lib.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                             self.max_shared_bytes - static.value),
                      ModuleLoadFailed, f"cuda: opting {artifact.entry!r} in to "
                                        f"{self.max_shared_bytes} bytes of shared memory")
        return CudaRawLauncher(self, cfn, artifact.entry, args)

    def max_grid_blocks(self, block_size: int) -> int:
        """``GRID_WAVES`` full-occupancy waves of ``block_size``-thread blocks."""
        return max(1, self.sm_count * GRID_WAVES * (self.max_threads_per_sm // block_size))

    def pin(self, host: np.ndarray) -> bool:
        """Page-lock ``host``'s memory while it lives (:class:`HostPinning`)."""
        return self._pinning.pin(host)

    def synchronize(self) -> None:
        """Wait for all work; a device fault raises ``SyncFailed`` with the CUresult."""
        with guarded(SyncFailed, f"cuda: synchronize on device {self.ordinal}", self):
            cuda().Context.synchronize()

    def load_module(self, image: bytes) -> Any:
        """Load a cubin/PTX/fatbin image (cached per image on this device)."""
        key = hashlib.sha256(image).hexdigest()
        with self._lock:
            module = self._modules.get(key)
            if module is None:
                with guarded(ModuleLoadFailed, f"cuda: loading a module on device "
                             f"{self.ordinal} ({self.name}, {self.arch})", self):
                    module = cuda().module_from_buffer(image)
                self._modules[key] = module
        return module

    def cfunction(self, image: bytes, name: str) -> int:
        """The ``CUfunction`` handle of entry ``name`` (module loaded through libcuda
        directly, cached per image: the launch path calls ``cuLaunchKernel`` itself)."""
        key = hashlib.sha256(image).hexdigest()
        lib = libcuda()
        with self._lock, guarded(ModuleLoadFailed, "cuda: loading a module", self):
            mod = self._cmodules.get(key)
            if mod is None:
                mod = ctypes.c_void_p()
                check(lib.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(image)),
                      ModuleLoadFailed, f"cuda: loading a module on device {self.ordinal} "
                      f"({self.name}, {self.arch})")
                self._cmodules[key] = mod
        fn = ctypes.c_void_p()
        with guarded(KernelNotFound, "cuda: cuModuleGetFunction", self):
            check(lib.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode()),
                  KernelNotFound, f"cuda: kernel {name!r} not found in its module")
        return int(fn.value or 0)

    def _register_host(self, ptr: int, size: int) -> bool:
        with guarded(AllocFailed, "cuda: cuMemHostRegister", self):
            return libcuda().cuMemHostRegister_v2(ctypes.c_void_p(ptr), ctypes.c_size_t(size),
                                                  0) == 0

    def _unregister_host(self, ptr: int) -> None:
        with guarded(AllocFailed, "cuda: cuMemHostUnregister", self):
            libcuda().cuMemHostUnregister(ctypes.c_void_p(ptr))

    def function(self, module: Any, name: str) -> Any:
        """Entry point ``name`` of a loaded module (``KernelNotFound`` if absent)."""
        with guarded(KernelNotFound, f"cuda: kernel {name!r} not found in module", self):
            return module.get_function(name)

    def _check_arch(self, artifact: Artifact) -> None:
        if artifact.format != "cubin":
            return
        built, here = parse_arch(artifact.target), parse_arch(self.arch)
        if built // 10 != here // 10 or built > here:
            raise ModuleLoadFailed(
                f"cuda: artifact for kernel {artifact.entry!r} was built for {artifact.target} "
                f"but device {self.ordinal} ({self.name}) is {self.arch}; rebuild it with "
                f"arch={self.arch!r} (gompute build --arch {self.arch})")

    # ---- runtime extras ------------------------------------------------------------
    def create_stream(self) -> CudaStream:
        """A new stream on this device."""
        return CudaStream(self)

    def create_event(self, timing: bool = True) -> CudaEvent:
        """A new event (with timing unless ``timing=False``)."""
        return CudaEvent(self, timing)

    def pinned(self, shape: Any, dtype: Any = np.uint8) -> np.ndarray:
        """A page-locked host array."""
        return pinned_empty(self, shape, dtype)

    def fp64_ratio(self) -> float:
        """FP64 throughput as a fraction of FP32 (0.5 on H100/H200, 1/64 on consumer parts)."""
        attr = cuda().device_attribute
        ratio = self._dev.get_attribute(attr.SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO)
        return 1.0 / ratio if ratio else 0.0

    def close(self) -> None:
        """Free tracked buffers, drop modules, pop the context (idempotent)."""
        if self._closed:
            return
        self._closed = True
        for buf in list(self._buffers):
            buf.free()
        self._modules.clear()
        self._pinning.close()
        for mod in self._cmodules.values():
            libcuda().cuModuleUnload(mod)
        self._cmodules.clear()
        if self._order_event is not None:
            libcuda().cuEventDestroy_v2(self._order_event)
            self._order_event = None
        with MAIN.lock:
            if MAIN.device is self and _get_ident() == self.main_thread:
                try:
                    cuda().Context.synchronize()
                except cuda().Error:
                    pass
                cuda().Context.pop()
                MAIN.device = None

    @property
    def closed(self) -> bool:
        """True after :meth:`close` (the primary context was released)."""
        return self._closed

    def __repr__(self) -> str:
        return f"<CudaDevice {self.ordinal}: {self.name} ({self.arch})>"

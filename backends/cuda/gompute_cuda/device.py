"""The CUDA device: primary context, module cache, allocation, streams, synchronize.

Threads: pycuda keeps a context stack per thread and aborts the process if a
thread ends with a context still pushed. So the primary context is pushed once
on the main thread (popped by :meth:`CudaDevice.close` or at exit), and any
other thread pushes it around each driver call and pops it afterwards
(:meth:`CudaDevice.enter`).
"""

from __future__ import annotations

import atexit
import ctypes
import hashlib
import threading
import weakref
from typing import Any

import numpy as np

from gompute_core.backend import ArgBuffer, Artifact, Device
from gompute_core.backend.pinning import HostPinning
from gompute_core.errors import (
    AllocFailed,
    ContextFailed,
    KernelNotFound,
    ModuleLoadFailed,
    NoDevice,
    SyncFailed,
)
from gompute_core.ir.kernel import KernelIR

from .driver import check, cuda, guarded, libcuda
from .memory import CudaBuffer, pinned_empty
from .nvrtc import parse_arch
from .program import CudaLauncher
from .stream import CudaEvent, CudaStream

_get_ident = threading.get_ident

GRID_WAVES = 8
"""Grid cap for elementwise kinds, in full-occupancy waves: measured on an H200 (2**28 f32
map in place), 8 waves reached 0.94x of a device copy against 0.91x for one wave."""

class CudaDevice(Device):
    """One NVIDIA GPU opened through pycuda (see the module docstring for threads)."""

    backend = "cuda"
    capabilities = frozenset({"streams", "events", "graphs", "pinned_memory", "f64_atomics"})

    def __init__(self, ordinal: int) -> None:
        drv = cuda()
        count = drv.Device.count()
        if isinstance(ordinal, bool) or not isinstance(ordinal, int) or not 0 <= ordinal < count:
            raise NoDevice(f"cuda: device {ordinal!r} does not exist ({count} device(s))")
        self.ordinal = ordinal
        self._dev = drv.Device(ordinal)
        with guarded(ContextFailed, f"cuda: retaining the primary context of device {ordinal}"):
            self._ctx = self._dev.retain_primary_context()
        self.main_thread = threading.main_thread().ident
        self.main_pushed = False
        major, minor = self._dev.compute_capability()
        self.arch = f"sm_{major}{minor}"
        self.name = self._dev.name()
        attr = drv.device_attribute
        self.sm_count = self._dev.get_attribute(attr.MULTIPROCESSOR_COUNT)
        self.max_threads_per_sm = self._dev.get_attribute(attr.MAX_THREADS_PER_MULTIPROCESSOR)
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
        atexit.register(self.close)

    # ---- context -------------------------------------------------------------------
    def enter(self) -> bool:
        """Make the context current on this thread; True when the caller must pop it."""
        if _get_ident() == self.main_thread:
            if not self.main_pushed:
                with guarded(ContextFailed, f"cuda: making device {self.ordinal} current"):
                    self._ctx.push()
                self.main_pushed = True
            return False
        try:
            self._ctx.push()
        except cuda().Error as exc:
            raise ContextFailed(f"cuda: making device {self.ordinal} current: {exc}") from None
        return True

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

    def _load(self, artifact: Artifact, kernel: KernelIR, args: ArgBuffer) -> CudaLauncher:
        """Load ``artifact`` once per image (through libcuda: the launcher calls
        ``cuLaunchKernel`` itself) and return the launcher of its entry."""
        self._check_arch(artifact)
        return CudaLauncher(self, self.cfunction(artifact.image, artifact.entry),
                            artifact.entry, kernel.block_size, args)

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
        if self.main_pushed and _get_ident() == self.main_thread:
            try:
                cuda().Context.synchronize()
            except cuda().Error:
                pass
            cuda().Context.pop()
            self.main_pushed = False

    @property
    def closed(self) -> bool:
        """True after :meth:`close` (the primary context was released)."""
        return self._closed

    def __repr__(self) -> str:
        return f"<CudaDevice {self.ordinal}: {self.name} ({self.arch})>"

"""The CUDA driver table: ``libcuda`` through ctypes, the one binding of this backend.

``libcuda.so.1`` is loaded lazily: without a driver :func:`driver` says
why, while rendering and compiling still work. Context policy: each device retains its
GPU's primary context (what the CUDA runtime, CuPy and torch use) and makes it current
with ``cuCtxSetCurrent`` when another is (checked before every call but launches:
another library may have replaced it, as XLA does). Synchronous copies and fills are the
asynchronous ones on the legacy default stream, then waited for (our streams are
blocking streams: ordered with it both ways).
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

from gompute_core.backend.gpu import DeviceProps, GpuDriver, primitive, query
from gompute_core.errors import (
    AllocFailed,
    BackendUnavailable,
    CaptureFailed,
    ContextFailed,
    CopyFailed,
    EventFailed,
    GraphFailed,
    InitFailed,
    KernelNotFound,
    ModuleLoadFailed,
    SyncFailed,
)

_C = {"p": ctypes.c_void_p, "u": ctypes.c_uint64, "z": ctypes.c_size_t, "i": ctypes.c_int}
_SIGNATURES = {
    "cuInit": "i", "cuDriverGetVersion": "p", "cuDeviceGetCount": "p", "cuDeviceGet": "pi",
    "cuDeviceGetName": "pii", "cuDeviceTotalMem_v2": "pi", "cuDeviceGetAttribute": "pii",
    "cuDevicePrimaryCtxRetain": "pi", "cuDevicePrimaryCtxRelease_v2": "i",
    "cuCtxGetCurrent": "p", "cuCtxSetCurrent": "p", "cuCtxSynchronize": "",
    "cuCtxEnablePeerAccess": "pi", "cuPointerGetAttribute": "piu", "cuMemAlloc_v2": "pz",
    "cuMemFree_v2": "u", "cuMemcpyHtoDAsync_v2": "upzp", "cuMemcpyDtoHAsync_v2": "puzp",
    "cuMemcpyDtoDAsync_v2": "uuzp", "cuMemcpyPeerAsync": "upupzp", "cuMemsetD8Async": "uizp",
    "cuMemHostAlloc": "pzi", "cuMemFreeHost": "p", "cuMemHostRegister_v2": "pzi",
    "cuMemHostUnregister": "p", "cuModuleLoadData": "pp", "cuModuleUnload": "p",
    "cuModuleGetFunction": "ppp", "cuFuncGetAttribute": "pip", "cuFuncSetAttribute": "pii",
    "cuStreamCreate": "pi", "cuStreamDestroy_v2": "p", "cuStreamSynchronize": "p",
    "cuStreamQuery": "p", "cuStreamWaitEvent": "ppi", "cuEventCreate": "pi",
    "cuEventDestroy_v2": "p", "cuEventRecord": "pp", "cuEventSynchronize": "p",
    "cuEventQuery": "p", "cuEventElapsedTime": "ppp", "cuStreamBeginCapture_v2": "pi",
    "cuStreamEndCapture": "pp", "cuGraphInstantiateWithFlags": "ppu", "cuGraphLaunch": "pp",
    "cuGraphExecUpdate_v2": "ppp", "cuGraphDestroy": "p", "cuGraphExecDestroy": "p",
    "cuGetErrorString": "ip",
}
_CAPTURE_MODES = {"global": 0, "thread_local": 1, "relaxed": 2}
_lock = threading.Lock()
_loaded: list[Any] = []  # [CudaDriver] once loaded, or [reason] when it cannot be


def driver() -> CudaDriver:
    """The process's CUDA driver table (loaded and initialised once); BackendUnavailable
    with the reason (``libcuda.so.1 not found (no NVIDIA driver): ...``) otherwise."""
    with _lock:
        if not _loaded:
            try:
                lib = ctypes.CDLL("libcuda.so.1")
            except OSError as exc:
                _loaded.append(f"libcuda.so.1 not found (no NVIDIA driver): {exc}")
            else:
                try:
                    table = CudaDriver(lib)
                except AttributeError as exc:  # a driver older than the calls we make
                    _loaded.append(f"libcuda.so.1 is too old for gompute-cuda: {exc}")
                else:
                    code = lib.cuInit(0)
                    _loaded.append(table if code == 0 else
                                   f"cuInit failed: {table.error_name(code)} (CUresult {code})")
    if isinstance(_loaded[0], str):
        raise BackendUnavailable(_loaded[0])
    return _loaded[0]


def _copy(fn: str) -> Any:
    """A copy or fill primitive: ``fn`` on the stream, or on the legacy default stream
    and waited for when the stream is None."""

    def method(self: CudaDriver, *args: Any) -> None:
        self.invoke(CopyFailed, fn, None, *args)
        if args[-1] is None:
            self.invoke(CopyFailed, "cuStreamSynchronize", None, None)

    method.__doc__ = f"``{fn}``."
    return method


class CudaDriver(GpuDriver):
    """The :class:`~gompute_core.backend.gpu.GpuDriver` of ``libcuda``: every call answers
    a ``CUresult``; values come back through a pointer passed first."""

    name = "cuda"
    errors = {2: AllocFailed}  # CUDA_ERROR_OUT_OF_MEMORY
    launch_markers = (1, 2, 0)  # CU_LAUNCH_PARAM_BUFFER_POINTER, _BUFFER_SIZE, _END
    recheck_current = True
    code_label = "CUresult "

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        for fn, signature in _SIGNATURES.items():
            getattr(lib, fn).argtypes = [_C[c] for c in signature]
        # no argtypes: ints and prebuilt c_void_p objects convert fastest that way
        self.launch = lib.cuLaunchKernel

    def invoke(self, cls: type, fn: str, out: Any, *args: Any) -> Any:
        """``fn(&out, *args)`` (``fn(*args)`` without ``out``): a handle comes back as the
        ``c_void_p`` itself (what the launch path passes), a number as its value."""
        value = out() if out is not None else None
        code = self.status(fn, *((ctypes.byref(value),) if out is not None else ()), *args)
        if code:
            self.fail(code, fn, cls)
        return value if out is ctypes.c_void_p else getattr(value, "value", None)

    def error_name(self, code: int) -> str:
        """``cuGetErrorString``'s text."""
        text = ctypes.c_char_p()
        found = self.lib.cuGetErrorString(code, ctypes.byref(text)) == 0 and text.value
        return text.value.decode() if found else "unknown error"  # type: ignore[union-attr]

    def status(self, fn: str, *args: Any) -> int:
        """``fn(*args)``'s ``CUresult``."""
        return getattr(self.lib, fn)(*args)

    device_count = primitive("cuDeviceGetCount", InitFailed, ctypes.c_int)
    _device = primitive("cuDeviceGet", ContextFailed, ctypes.c_int)
    _attribute = primitive("cuDeviceGetAttribute", InitFailed, ctypes.c_int)

    def props(self, ordinal: int) -> DeviceProps:
        """Name, compute capability and limits through ``cuDeviceGetAttribute``."""
        dev = self._device(ordinal)

        def attr(number: int) -> int:
            return self._attribute(number, dev)

        name = ctypes.create_string_buffer(256)
        self.invoke(InitFailed, "cuDeviceGetName", None, name, 256, dev)
        version = self.invoke(InitFailed, "cuDriverGetVersion", ctypes.c_int)
        major, ratio = attr(75), attr(87)
        # 32,764 bytes of kernel arguments from CUDA 12.1 on Volta and later; 4 KiB before
        return DeviceProps(name.value.decode(), f"sm_{major}{attr(76)}",
                           self.invoke(InitFailed, "cuDeviceTotalMem_v2", ctypes.c_size_t, dev),
                           attr(16), attr(39), (attr(2), attr(3), attr(4)), attr(1),
                           attr(97) or attr(8), 32764 if major >= 7 and version >= 12010
                           else 4096, 1.0 / ratio if ratio else 0.0)

    def open_context(self, ordinal: int) -> ctypes.c_void_p:
        """The GPU's primary context, retained."""
        return self.invoke(ContextFailed, "cuDevicePrimaryCtxRetain", ctypes.c_void_p,
                           self._device(ordinal))

    def close_context(self, ordinal: int, context: Any) -> None:
        """Release the primary context."""
        self.lib.cuDevicePrimaryCtxRelease_v2(self._device(ordinal))

    def make_current(self, context: ctypes.c_void_p) -> None:
        """``cuCtxSetCurrent`` unless ``context`` already is."""
        if self.invoke(ContextFailed, "cuCtxGetCurrent", ctypes.c_size_t) != context.value:
            self.invoke(ContextFailed, "cuCtxSetCurrent", None, context)

    synchronize = primitive("cuCtxSynchronize", SyncFailed)

    def enable_peer(self, peer: ctypes.c_void_p) -> None:
        """``cuCtxEnablePeerAccess`` (704: already enabled; others: no P2P, copies stage)."""
        self.lib.cuCtxEnablePeerAccess(peer, 0)

    def pointer_ordinal(self, addr: int) -> int | None:
        """``CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL``."""
        ordinal = ctypes.c_int(-1)
        found = self.lib.cuPointerGetAttribute(ctypes.byref(ordinal), 9, addr) == 0
        return ordinal.value if found and ordinal.value >= 0 else None

    def host_is_pinned(self, addr: int) -> bool:
        """``CU_POINTER_ATTRIBUTE_MEMORY_TYPE`` is ``CU_MEMORYTYPE_HOST`` (pageable memory is
        unknown to the driver: an error)."""
        kind = ctypes.c_uint(0)
        return self.lib.cuPointerGetAttribute(ctypes.byref(kind), 2, addr) == 0 and \
            kind.value == 1

    mem_alloc = primitive("cuMemAlloc_v2", AllocFailed, ctypes.c_uint64)
    mem_free = primitive("cuMemFree_v2", AllocFailed)

    copy_htod = _copy("cuMemcpyHtoDAsync_v2")
    copy_dtoh = _copy("cuMemcpyDtoHAsync_v2")
    copy_dtod = _copy("cuMemcpyDtoDAsync_v2")
    copy_peer = _copy("cuMemcpyPeerAsync")
    memset_d8 = _copy("cuMemsetD8Async")
    host_alloc = primitive("cuMemHostAlloc", AllocFailed, ctypes.c_uint64, tail=(1,))  # portable
    host_free = primitive("cuMemFreeHost", AllocFailed)
    host_unregister = primitive("cuMemHostUnregister", AllocFailed)

    def host_register(self, addr: int, nbytes: int) -> bool:
        """``cuMemHostRegister``."""
        return self.status("cuMemHostRegister_v2", addr, nbytes, 0) == 0

    module_load = primitive("cuModuleLoadData", ModuleLoadFailed, ctypes.c_void_p)
    module_unload = primitive("cuModuleUnload", ModuleLoadFailed)

    def module_function(self, module: Any, name: str) -> ctypes.c_void_p:
        """``cuModuleGetFunction``."""
        return self.invoke(KernelNotFound, "cuModuleGetFunction", ctypes.c_void_p, module,
                           name.encode())

    def opt_in_shared(self, function: Any, total_bytes: int) -> None:
        """Above 48 KiB: the dynamic maximum the function's static shared memory leaves."""
        if total_bytes > 48 * 1024:
            static = self.invoke(ModuleLoadFailed, "cuFuncGetAttribute", ctypes.c_int, 1,
                                 function)
            self.invoke(ModuleLoadFailed, "cuFuncSetAttribute", None, function, 8,
                        total_bytes - static)

    stream_create = primitive("cuStreamCreate", SyncFailed, ctypes.c_void_p, tail=(0,))
    stream_destroy = primitive("cuStreamDestroy_v2", SyncFailed)
    stream_synchronize = primitive("cuStreamSynchronize", SyncFailed)
    stream_wait_event = primitive("cuStreamWaitEvent", EventFailed, tail=(0,))
    foreign_stream = staticmethod(ctypes.c_void_p)

    def stream_address(self, stream: ctypes.c_void_p) -> int:
        """The ``CUstream`` as an int."""
        return stream.value or 0

    stream_query = query("cuStreamQuery", SyncFailed)

    def event_create(self, timing: bool) -> ctypes.c_void_p:
        """``cuEventCreate`` (``CU_EVENT_DISABLE_TIMING`` without timing)."""
        return self.invoke(EventFailed, "cuEventCreate", ctypes.c_void_p, 0 if timing else 2)

    event_destroy = primitive("cuEventDestroy_v2", EventFailed)
    event_record = primitive("cuEventRecord", EventFailed)
    event_synchronize = primitive("cuEventSynchronize", SyncFailed)
    event_elapsed_ms = primitive("cuEventElapsedTime", EventFailed, ctypes.c_float)

    event_query = query("cuEventQuery", EventFailed)

    def begin_capture(self, stream: Any, mode: str) -> None:
        """``cuStreamBeginCapture``."""
        self.invoke(CaptureFailed, "cuStreamBeginCapture_v2", None, stream, _CAPTURE_MODES[mode])

    def end_capture(self, stream: Any) -> ctypes.c_void_p:
        """``cuStreamEndCapture``."""
        graph = ctypes.c_void_p()
        self.invoke(CaptureFailed, "cuStreamEndCapture", None, stream, ctypes.byref(graph))
        return graph

    graph_instantiate = primitive("cuGraphInstantiateWithFlags", GraphFailed, ctypes.c_void_p,
                                  tail=(0,))
    graph_launch = primitive("cuGraphLaunch", GraphFailed)
    graph_destroy = primitive("cuGraphDestroy", GraphFailed)
    graph_exec_destroy = primitive("cuGraphExecDestroy", GraphFailed)

    def graph_update(self, graph_exec: Any, graph: Any) -> None:
        """``cuGraphExecUpdate`` (its result info is not read)."""
        info = (ctypes.c_void_p * 3)()
        self.invoke(GraphFailed, "cuGraphExecUpdate_v2", None, graph_exec, graph, info)

"""The CUDA driver table: ``libcuda`` through ctypes, the one binding of this backend.

``libcuda.so.1`` is loaded lazily: without a driver :func:`availability_reason` says
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

from gompute_core.backend.gpu import DeviceProps, GpuDriver
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
                table = CudaDriver(lib)
                code = lib.cuInit(0)
                _loaded.append(table if code == 0 else
                               f"cuInit failed: {table.error_name(code)} (CUresult {code})")
    if isinstance(_loaded[0], str):
        raise BackendUnavailable(_loaded[0])
    return _loaded[0]


def availability_reason() -> str | None:
    """None when the driver initialises, else why not (never raises)."""
    try:
        driver()
    except BackendUnavailable as exc:
        return str(exc)
    return None


class CudaDriver(GpuDriver):
    """The :class:`~gompute_core.backend.gpu.GpuDriver` of ``libcuda``."""

    name = "cuda"
    errors = {2: AllocFailed}  # CUDA_ERROR_OUT_OF_MEMORY
    context_lost = frozenset({201, 400})  # CUDA_ERROR_INVALID_CONTEXT, _INVALID_HANDLE
    launch_markers = (1, 2, 0)  # CU_LAUNCH_PARAM_BUFFER_POINTER, _BUFFER_SIZE, _END
    recheck_current = True
    code_label = "CUresult "

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        for fn, signature in _SIGNATURES.items():
            getattr(lib, fn).argtypes = [_C[c] for c in signature]
        # no argtypes: ints and prebuilt c_void_p objects convert fastest that way
        self.launch = lib.cuLaunchKernel

    def _call(self, cls: type, fn: str, *args: Any) -> None:
        code = getattr(self.lib, fn)(*args)
        if code:
            self.fail(code, fn, cls)

    def _get(self, out: Any, cls: type, fn: str, *args: Any) -> Any:
        self._call(cls, fn, ctypes.byref(out), *args)
        return out.value

    def error_name(self, code: int) -> str:
        """``cuGetErrorString``'s text."""
        text = ctypes.c_char_p()
        found = self.lib.cuGetErrorString(code, ctypes.byref(text)) == 0 and text.value
        return text.value.decode() if found else "unknown error"  # type: ignore[union-attr]

    def device_count(self) -> int:
        """``cuDeviceGetCount``."""
        return self._get(ctypes.c_int(), InitFailed, "cuDeviceGetCount")

    def props(self, ordinal: int) -> DeviceProps:
        """Name, compute capability and limits through ``cuDeviceGetAttribute``."""
        dev = self._get(ctypes.c_int(), InitFailed, "cuDeviceGet", ordinal)

        def attr(number: int) -> int:
            return self._get(ctypes.c_int(), InitFailed, "cuDeviceGetAttribute", number, dev)

        name = ctypes.create_string_buffer(256)
        self._call(InitFailed, "cuDeviceGetName", name, 256, dev)
        version = self._get(ctypes.c_int(), InitFailed, "cuDriverGetVersion")
        major, ratio = attr(75), attr(87)
        # 32,764 bytes of kernel arguments from CUDA 12.1 on Volta and later; 4 KiB before
        return DeviceProps(name.value.decode(), f"sm_{major}{attr(76)}",
                           self._get(ctypes.c_size_t(), InitFailed, "cuDeviceTotalMem_v2", dev),
                           attr(16), attr(39), (attr(2), attr(3), attr(4)), attr(1),
                           attr(97) or attr(8), 32764 if major >= 7 and version >= 12010
                           else 4096, 1.0 / ratio if ratio else 0.0)

    def open_context(self, ordinal: int) -> ctypes.c_void_p:
        """The GPU's primary context, retained."""
        ctx = ctypes.c_void_p()
        dev = self._get(ctypes.c_int(), ContextFailed, "cuDeviceGet", ordinal)
        self._get(ctx, ContextFailed, "cuDevicePrimaryCtxRetain", dev)
        return ctx

    def close_context(self, ordinal: int, context: Any) -> None:
        """Release the primary context."""
        self.lib.cuDevicePrimaryCtxRelease_v2(self._get(ctypes.c_int(), ContextFailed,
                                                        "cuDeviceGet", ordinal))

    def make_current(self, context: ctypes.c_void_p) -> None:
        """``cuCtxSetCurrent`` unless ``context`` already is."""
        if self._get(ctypes.c_void_p(), ContextFailed, "cuCtxGetCurrent") != context.value:
            self._call(ContextFailed, "cuCtxSetCurrent", context)

    def synchronize(self) -> None:
        """``cuCtxSynchronize``."""
        self._call(SyncFailed, "cuCtxSynchronize")

    def enable_peer(self, peer: ctypes.c_void_p) -> None:
        """``cuCtxEnablePeerAccess`` (704: already enabled; others: no P2P, copies stage)."""
        self.lib.cuCtxEnablePeerAccess(peer, 0)

    def pointer_ordinal(self, addr: int) -> int | None:
        """``CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL``."""
        ordinal = ctypes.c_int(-1)
        found = self.lib.cuPointerGetAttribute(ctypes.byref(ordinal), 9, addr) == 0
        return ordinal.value if found and ordinal.value >= 0 else None

    def mem_alloc(self, nbytes: int) -> int:
        """``cuMemAlloc``."""
        return self._get(ctypes.c_uint64(), AllocFailed, "cuMemAlloc_v2", nbytes)

    def mem_free(self, addr: int) -> None:
        """``cuMemFree``."""
        self._call(AllocFailed, "cuMemFree_v2", addr)

    def _copy(self, fn: str, stream: Any, *args: Any) -> None:
        self._call(CopyFailed, fn, *args, stream)
        if stream is None:
            self._call(CopyFailed, "cuStreamSynchronize", None)

    def copy_htod(self, dst: int, src: int, nbytes: int, stream: Any) -> None:
        """``cuMemcpyHtoDAsync``."""
        self._copy("cuMemcpyHtoDAsync_v2", stream, dst, src, nbytes)

    def copy_dtoh(self, dst: int, src: int, nbytes: int, stream: Any) -> None:
        """``cuMemcpyDtoHAsync``."""
        self._copy("cuMemcpyDtoHAsync_v2", stream, dst, src, nbytes)

    def copy_dtod(self, dst: int, src: int, nbytes: int, stream: Any) -> None:
        """``cuMemcpyDtoDAsync``."""
        self._copy("cuMemcpyDtoDAsync_v2", stream, dst, src, nbytes)

    def copy_peer(self, dst: int, dst_context: Any, src: int, src_context: Any, nbytes: int,
                  stream: Any) -> None:
        """``cuMemcpyPeerAsync``."""
        self._copy("cuMemcpyPeerAsync", stream, dst, dst_context, src, src_context, nbytes)

    def memset_d8(self, dst: int, value: int, nbytes: int, stream: Any) -> None:
        """``cuMemsetD8Async``."""
        self._copy("cuMemsetD8Async", stream, dst, value, nbytes)

    def host_alloc(self, nbytes: int) -> int:
        """``cuMemHostAlloc`` (portable)."""
        return self._get(ctypes.c_void_p(), AllocFailed, "cuMemHostAlloc", nbytes, 1) or 0

    def host_free(self, addr: int) -> None:
        """``cuMemFreeHost``."""
        self._call(AllocFailed, "cuMemFreeHost", addr)

    def host_register(self, addr: int, nbytes: int) -> bool:
        """``cuMemHostRegister``."""
        return self.lib.cuMemHostRegister_v2(addr, nbytes, 0) == 0

    def host_unregister(self, addr: int) -> None:
        """``cuMemHostUnregister``."""
        self._call(AllocFailed, "cuMemHostUnregister", addr)

    def module_load(self, image: bytes) -> ctypes.c_void_p:
        """``cuModuleLoadData`` (cubin, PTX or fatbin)."""
        module = ctypes.c_void_p()
        self._get(module, ModuleLoadFailed, "cuModuleLoadData", image)
        return module

    def module_unload(self, module: Any) -> None:
        """``cuModuleUnload``."""
        self._call(ModuleLoadFailed, "cuModuleUnload", module)

    def module_function(self, module: Any, name: str) -> ctypes.c_void_p:
        """``cuModuleGetFunction``."""
        fn = ctypes.c_void_p()
        self._get(fn, KernelNotFound, "cuModuleGetFunction", module, name.encode())
        return fn

    def opt_in_shared(self, function: Any, total_bytes: int) -> None:
        """Above 48 KiB: the dynamic maximum the function's static shared memory leaves."""
        if total_bytes > 48 * 1024:
            static = self._get(ctypes.c_int(), ModuleLoadFailed, "cuFuncGetAttribute", 1,
                               function)
            self._call(ModuleLoadFailed, "cuFuncSetAttribute", function, 8, total_bytes - static)

    def stream_create(self) -> ctypes.c_void_p:
        """``cuStreamCreate`` (a blocking stream)."""
        stream = ctypes.c_void_p()
        self._get(stream, SyncFailed, "cuStreamCreate", 0)
        return stream

    def stream_destroy(self, stream: Any) -> None:
        """``cuStreamDestroy``."""
        self._call(SyncFailed, "cuStreamDestroy_v2", stream)

    def stream_address(self, stream: ctypes.c_void_p) -> int:
        """The ``CUstream`` as an int."""
        return stream.value or 0

    def foreign_stream(self, address: int) -> ctypes.c_void_p:
        """Another library's ``CUstream``."""
        return ctypes.c_void_p(address)

    def stream_synchronize(self, stream: Any) -> None:
        """``cuStreamSynchronize``."""
        self._call(SyncFailed, "cuStreamSynchronize", stream)

    def stream_query(self, stream: Any) -> bool:
        """``cuStreamQuery`` (600: not ready)."""
        return self._ready(self.lib.cuStreamQuery(stream), "cuStreamQuery", SyncFailed)

    def _ready(self, code: int, what: str, cls: type) -> bool:
        if code not in (0, 600):
            self.fail(code, what, cls)
        return code == 0

    def stream_wait_event(self, stream: Any, event: Any) -> None:
        """``cuStreamWaitEvent``."""
        self._call(EventFailed, "cuStreamWaitEvent", stream, event, 0)

    def event_create(self, timing: bool) -> ctypes.c_void_p:
        """``cuEventCreate`` (``CU_EVENT_DISABLE_TIMING`` without timing)."""
        event = ctypes.c_void_p()
        self._get(event, EventFailed, "cuEventCreate", 0 if timing else 2)
        return event

    def event_destroy(self, event: Any) -> None:
        """``cuEventDestroy``."""
        self._call(EventFailed, "cuEventDestroy_v2", event)

    def event_record(self, event: Any, stream: Any) -> None:
        """``cuEventRecord``."""
        self._call(EventFailed, "cuEventRecord", event, stream)

    def event_synchronize(self, event: Any) -> None:
        """``cuEventSynchronize``."""
        self._call(SyncFailed, "cuEventSynchronize", event)

    def event_query(self, event: Any) -> bool:
        """``cuEventQuery`` (600: not ready)."""
        return self._ready(self.lib.cuEventQuery(event), "cuEventQuery", EventFailed)

    def event_elapsed_ms(self, start: Any, end: Any) -> float:
        """``cuEventElapsedTime``."""
        return self._get(ctypes.c_float(), EventFailed, "cuEventElapsedTime", start, end)

    def begin_capture(self, stream: Any, mode: str) -> None:
        """``cuStreamBeginCapture``."""
        self._call(CaptureFailed, "cuStreamBeginCapture_v2", stream, _CAPTURE_MODES[mode])

    def end_capture(self, stream: Any) -> ctypes.c_void_p:
        """``cuStreamEndCapture``."""
        graph = ctypes.c_void_p()
        self._call(CaptureFailed, "cuStreamEndCapture", stream, ctypes.byref(graph))
        return graph

    def graph_instantiate(self, graph: Any) -> ctypes.c_void_p:
        """``cuGraphInstantiateWithFlags``."""
        exe = ctypes.c_void_p()
        self._get(exe, GraphFailed, "cuGraphInstantiateWithFlags", graph, 0)
        return exe

    def graph_launch(self, graph_exec: Any, stream: Any) -> None:
        """``cuGraphLaunch``."""
        self._call(GraphFailed, "cuGraphLaunch", graph_exec, stream)

    def graph_update(self, graph_exec: Any, graph: Any) -> None:
        """``cuGraphExecUpdate`` (its result info is not read)."""
        info = (ctypes.c_void_p * 3)()
        self._call(GraphFailed, "cuGraphExecUpdate_v2", graph_exec, graph, info)

    def graph_destroy(self, graph: Any) -> None:
        """``cuGraphDestroy``."""
        self._call(GraphFailed, "cuGraphDestroy", graph)

    def graph_exec_destroy(self, graph_exec: Any) -> None:
        """``cuGraphExecDestroy``."""
        self._call(GraphFailed, "cuGraphExecDestroy", graph_exec)

"""The HIP driver table: hip-python, the one binding of this backend, and the probe.

hip-python returns every result as a tuple led by the ``hipError_t``; :meth:`HipDriver._call`
checks it and returns the rest. Context policy: HIP selects the device per host thread
(``hipSetDevice``), made once per thread and device switch by the generic layer.
Imported only when a device is opened or probed, so ``import gompute_hip`` and
compilation work on machines without a HIP runtime.
"""

from __future__ import annotations

import ctypes
from typing import Any

from gompute_core.backend import Availability
from gompute_core.backend.gpu import DeviceProps, GpuDriver, list_devices
from gompute_core.errors import (
    AllocFailed,
    CaptureFailed,
    CopyFailed,
    EventFailed,
    GraphFailed,
    InitFailed,
    KernelNotFound,
    ModuleLoadFailed,
    NoDevice,
    SyncFailed,
    Unsupported,
)

from . import libs

_CAPTURE_MODES = {"global": "Global", "thread_local": "ThreadLocal", "relaxed": "Relaxed"}
NOT_READY = 600  # hipErrorNotReady: a query's "still running"


def code_of(result: Any) -> int:
    """The integer value of a ``hipError_t`` (or ``hiprtcResult``) item."""
    return int(getattr(result, "value", result))


class HipDriver(GpuDriver):
    """The :class:`~gompute_core.backend.gpu.GpuDriver` of hip-python's ``hip.hip``."""

    name = "hip"
    errors = {2: AllocFailed, 100: NoDevice, 101: NoDevice, 200: ModuleLoadFailed,
              209: ModuleLoadFailed, 218: ModuleLoadFailed, 500: KernelNotFound,
              302: KernelNotFound, 700: SyncFailed, 719: SyncFailed, 801: Unsupported}

    def __init__(self, hip: Any) -> None:
        self.hip = hip
        self.launch_markers = (int(hip.HIP_LAUNCH_PARAM_BUFFER_POINTER),
                               int(hip.HIP_LAUNCH_PARAM_BUFFER_SIZE),
                               int(hip.HIP_LAUNCH_PARAM_END))

    def _call(self, cls: type, fn: str, *args: Any) -> Any:
        try:
            result = getattr(self.hip, fn)(*args)
        except RuntimeError as exc:  # hip-python's loader: libamdhip64 lacks the symbol
            raise Unsupported(f"hip: {fn} is not available in this HIP runtime: {exc}") from exc
        code = code_of(result[0])
        if code:
            self.fail(code, fn, cls)
        return result[1] if len(result) == 2 else result[1:]

    def _ready(self, cls: type, fn: str, handle: Any) -> bool:
        code = code_of(getattr(self.hip, fn)(handle)[0])
        if code not in (0, NOT_READY):
            self.fail(code, fn, cls)
        return code == 0

    def launch(self, fn: Any, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
               shared_bytes: int, stream: Any, params: Any, extra: ctypes.c_void_p) -> int:
        """``hipModuleLaunchKernel``; its ``hipError_t`` as an int."""
        return code_of(self.hip.hipModuleLaunchKernel(fn, gx, gy, gz, bx, by, bz, shared_bytes,
                                                      stream, params, extra.value)[0])

    def error_name(self, code: int) -> str:
        """``"hipErrorInvalidDevice"`` for 101; ``"hipError <code>"`` when unknown."""
        try:
            return self.hip.hipError_t(code).name
        except ValueError:
            return f"hipError {code}"

    def device_count(self) -> int:
        """``hipInit`` then ``hipGetDeviceCount``."""
        code = code_of(self.hip.hipInit(0)[0])
        if code:
            self.fail(code, "hipInit", InitFailed)
        return int(self._call(NoDevice, "hipGetDeviceCount"))

    def props(self, ordinal: int) -> DeviceProps:
        """``hipGetDeviceProperties`` and ``hipDeviceGetAttribute``."""
        hip, p = self.hip, self.hip.hipDeviceProp_t()
        self._call(InitFailed, "hipGetDeviceProperties", p, ordinal)

        def attr(name: str) -> int:
            enum = getattr(hip.hipDeviceAttribute_t, f"hipDeviceAttribute{name}")
            return int(self._call(InitFailed, "hipDeviceGetAttribute", enum, ordinal))

        def text(value: Any) -> str:
            return value.decode(errors="replace") if isinstance(value, bytes) else str(value)

        ratio = attr("SingleToDoublePrecisionPerfRatio")
        # arch: e.g. "gfx90a:sramecc+:xnack-", as hiprtc's --offload-arch takes it
        return DeviceProps(text(p.name), text(p.gcnArchName), int(p.totalGlobalMem),
                           attr("MultiprocessorCount"), attr("MaxThreadsPerMultiProcessor"),
                           (attr("MaxBlockDimX"), attr("MaxBlockDimY"), attr("MaxBlockDimZ")),
                           attr("MaxThreadsPerBlock"), attr("MaxSharedMemoryPerBlock"), 4096,
                           1.0 / ratio if ratio else 0.0)

    def open_context(self, ordinal: int) -> int:
        """The ordinal: HIP's context is the thread's current device."""
        return ordinal

    def make_current(self, context: int) -> None:
        """``hipSetDevice``."""
        self._call(NoDevice, "hipSetDevice", context)

    def synchronize(self) -> None:
        """``hipDeviceSynchronize``."""
        self._call(SyncFailed, "hipDeviceSynchronize")

    def enable_peer(self, peer: int) -> None:
        """``hipDeviceEnablePeerAccess`` (refused where the GPUs cannot: copies stage)."""
        self.hip.hipDeviceEnablePeerAccess(peer, 0)

    def mem_alloc(self, nbytes: int) -> int:
        """``hipMalloc``."""
        return int(self._call(AllocFailed, "hipMalloc", nbytes))

    def mem_free(self, addr: int) -> None:
        """``hipFree``."""
        self._call(AllocFailed, "hipFree", addr)

    def _copy(self, fn: str, stream: Any, *args: Any) -> None:
        if stream is None:
            self._call(CopyFailed, fn, *args)
        else:
            self._call(CopyFailed, f"{fn}Async", *args, stream)

    def copy_htod(self, dst: int, src: int, nbytes: int, stream: Any) -> None:
        """``hipMemcpyHtoD`` (``hipMemcpyHtoDAsync`` on a stream)."""
        self._copy("hipMemcpyHtoD", stream, dst, src, nbytes)

    def copy_dtoh(self, dst: int, src: int, nbytes: int, stream: Any) -> None:
        """``hipMemcpyDtoH`` (``hipMemcpyDtoHAsync``)."""
        self._copy("hipMemcpyDtoH", stream, dst, src, nbytes)

    def copy_dtod(self, dst: int, src: int, nbytes: int, stream: Any) -> None:
        """``hipMemcpyDtoD`` (``hipMemcpyDtoDAsync``)."""
        self._copy("hipMemcpyDtoD", stream, dst, src, nbytes)

    def copy_peer(self, dst: int, dst_context: int, src: int, src_context: int, nbytes: int,
                  stream: Any) -> None:
        """``hipMemcpyPeerAsync``."""
        self._call(CopyFailed, "hipMemcpyPeerAsync", dst, dst_context, src, src_context,
                   nbytes, stream)

    def memset_d8(self, dst: int, value: int, nbytes: int, stream: Any) -> None:
        """``hipMemsetD8`` (``hipMemsetD8Async``)."""
        self._copy("hipMemsetD8", stream, dst, value, nbytes)

    def host_alloc(self, nbytes: int) -> int:
        """``hipHostMalloc``."""
        return int(self._call(AllocFailed, "hipHostMalloc", nbytes, 0))

    def host_free(self, addr: int) -> None:
        """``hipHostFree``."""
        self._call(AllocFailed, "hipHostFree", addr)

    def host_register(self, addr: int, nbytes: int) -> bool:
        """``hipHostRegister``."""
        return code_of(self.hip.hipHostRegister(addr, nbytes, 0)[0]) == 0

    def host_unregister(self, addr: int) -> None:
        """``hipHostUnregister``."""
        self._call(AllocFailed, "hipHostUnregister", addr)

    def module_load(self, image: bytes) -> Any:
        """``hipModuleLoadData``."""
        return self._call(ModuleLoadFailed, "hipModuleLoadData", image)

    def module_unload(self, module: Any) -> None:
        """``hipModuleUnload``."""
        self._call(ModuleLoadFailed, "hipModuleUnload", module)

    def module_function(self, module: Any, name: str) -> Any:
        """``hipModuleGetFunction``."""
        return self._call(KernelNotFound, "hipModuleGetFunction", module, name.encode())

    def stream_create(self) -> Any:
        """``hipStreamCreate`` (a blocking stream)."""
        return self._call(SyncFailed, "hipStreamCreate")

    def stream_destroy(self, stream: Any) -> None:
        """``hipStreamDestroy``."""
        self._call(SyncFailed, "hipStreamDestroy", stream)

    def stream_address(self, stream: Any) -> int:
        """The ``hipStream_t`` as an int."""
        return int(stream)

    def foreign_stream(self, address: int) -> int:
        """Another library's ``hipStream_t`` (hip-python takes the int)."""
        return address

    def stream_synchronize(self, stream: Any) -> None:
        """``hipStreamSynchronize``."""
        self._call(SyncFailed, "hipStreamSynchronize", stream)

    def stream_query(self, stream: Any) -> bool:
        """``hipStreamQuery``."""
        return self._ready(SyncFailed, "hipStreamQuery", stream)

    def stream_wait_event(self, stream: Any, event: Any) -> None:
        """``hipStreamWaitEvent``."""
        self._call(EventFailed, "hipStreamWaitEvent", stream, event, 0)

    def event_create(self, timing: bool) -> Any:
        """``hipEventCreateWithFlags`` (``hipEventDisableTiming`` without timing)."""
        flags = 0 if timing else int(self.hip.hipEventDisableTiming)
        return self._call(EventFailed, "hipEventCreateWithFlags", flags)

    def event_destroy(self, event: Any) -> None:
        """``hipEventDestroy``."""
        self._call(EventFailed, "hipEventDestroy", event)

    def event_record(self, event: Any, stream: Any) -> None:
        """``hipEventRecord``."""
        self._call(EventFailed, "hipEventRecord", event, stream)

    def event_synchronize(self, event: Any) -> None:
        """``hipEventSynchronize``."""
        self._call(SyncFailed, "hipEventSynchronize", event)

    def event_query(self, event: Any) -> bool:
        """``hipEventQuery``."""
        return self._ready(EventFailed, "hipEventQuery", event)

    def event_elapsed_ms(self, start: Any, end: Any) -> float:
        """``hipEventElapsedTime``."""
        return float(self._call(EventFailed, "hipEventElapsedTime", start, end))

    def begin_capture(self, stream: Any, mode: str) -> None:
        """``hipStreamBeginCapture``."""
        mode_enum = getattr(self.hip.hipStreamCaptureMode,
                            f"hipStreamCaptureMode{_CAPTURE_MODES[mode]}")
        self._call(CaptureFailed, "hipStreamBeginCapture", stream, mode_enum)

    def end_capture(self, stream: Any) -> Any:
        """``hipStreamEndCapture``."""
        return self._call(CaptureFailed, "hipStreamEndCapture", stream)

    def graph_instantiate(self, graph: Any) -> Any:
        """``hipGraphInstantiate``."""
        return self._call(GraphFailed, "hipGraphInstantiate", graph, None, 0)

    def graph_launch(self, graph_exec: Any, stream: Any) -> None:
        """``hipGraphLaunch``."""
        self._call(GraphFailed, "hipGraphLaunch", graph_exec, stream)

    def graph_update(self, graph_exec: Any, graph: Any) -> None:
        """``hipGraphExecUpdate``."""
        self._call(GraphFailed, "hipGraphExecUpdate", graph_exec, graph)

    def graph_destroy(self, graph: Any) -> None:
        """``hipGraphDestroy``."""
        self._call(GraphFailed, "hipGraphDestroy", graph)

    def graph_exec_destroy(self, graph_exec: Any) -> None:
        """``hipGraphExecDestroy``."""
        self._call(GraphFailed, "hipGraphExecDestroy", graph_exec)


def probe() -> Availability:
    """Availability of HIP here; never raises (missing library or GPU is the reason)."""
    from .compiler import compiler_version

    try:
        compiler = compiler_version()
    except Exception:  # noqa: BLE001 - a probe reports, it never raises
        compiler = ""
    try:
        hip = libs.hip()
        code = code_of(hip.hipInit(0)[0])
        if code:
            return Availability("hip", False, reason=f"no AMD GPU (hipInit: {code})",
                                compiler=compiler)
        libs.require_properties_symbol()
        devices = list_devices(HipDriver(hip))
    except Exception as exc:  # noqa: BLE001 - a probe reports, it never raises
        return Availability("hip", False, reason=str(exc), compiler=compiler)
    if not devices:
        return Availability("hip", False, reason="no AMD GPU (hipGetDeviceCount: 0)",
                            compiler=compiler)
    return Availability("hip", True, devices=devices, compiler=compiler)

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
from gompute_core.backend.gpu import DeviceProps, GpuDriver, primitive, query
from gompute_core.backend.gpu import probe as gpu_probe
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


def code_of(result: Any) -> int:
    """The integer value of a ``hipError_t`` (or ``hiprtcResult``) item."""
    return int(getattr(result, "value", result))


def _copy(fn: str, fn_async: str) -> Any:
    """A copy or fill primitive: ``fn`` when the stream is None, ``fn_async`` on a stream."""

    def method(self: HipDriver, *args: Any) -> None:
        if args[-1] is None:
            self.invoke(CopyFailed, fn, None, *args[:-1])
        else:
            self.invoke(CopyFailed, fn_async, None, *args)

    method.__doc__ = f"``{fn}`` (``{fn_async}`` on a stream)."
    return method


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

    def invoke(self, cls: type, fn: str, out: Any, *args: Any) -> Any:
        """``hip.<fn>(*args)``: the result tuple's payload (None, one item or a tuple)."""
        try:
            result = getattr(self.hip, fn)(*args)
        except RuntimeError as exc:  # hip-python's loader: libamdhip64 lacks the symbol
            raise Unsupported(f"hip: {fn} is not available in this HIP runtime: {exc}") from exc
        code = code_of(result[0])
        if code:
            self.fail(code, fn, cls)
        return result[1] if len(result) == 2 else (result[1:] or None)

    def status(self, fn: str, *args: Any) -> int:
        """``hip.<fn>(*args)``'s ``hipError_t`` as an int."""
        return code_of(getattr(self.hip, fn)(*args)[0])

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
        """``hipInit`` (``NoDevice`` "no AMD GPU (hipInit: N)"), ``hipGetDeviceCount``."""
        code = self.status("hipInit", 0)
        if code:
            raise NoDevice(f"no AMD GPU (hipInit: {code})")
        return int(self.invoke(NoDevice, "hipGetDeviceCount", None))

    def props(self, ordinal: int) -> DeviceProps:
        """``hipGetDeviceProperties`` and ``hipDeviceGetAttribute``."""
        hip, p = self.hip, self.hip.hipDeviceProp_t()
        self.invoke(InitFailed, "hipGetDeviceProperties", None, p, ordinal)

        def attr(name: str) -> int:
            enum = getattr(hip.hipDeviceAttribute_t, f"hipDeviceAttribute{name}")
            return int(self.invoke(InitFailed, "hipDeviceGetAttribute", None, enum, ordinal))

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

    make_current = primitive("hipSetDevice", NoDevice)
    synchronize = primitive("hipDeviceSynchronize", SyncFailed)

    def enable_peer(self, peer: int) -> None:
        """``hipDeviceEnablePeerAccess`` (refused where the GPUs cannot: copies stage)."""
        self.hip.hipDeviceEnablePeerAccess(peer, 0)

    mem_alloc = primitive("hipMalloc", AllocFailed)
    mem_free = primitive("hipFree", AllocFailed)
    copy_htod = _copy("hipMemcpyHtoD", "hipMemcpyHtoDAsync")
    copy_dtoh = _copy("hipMemcpyDtoH", "hipMemcpyDtoHAsync")
    copy_dtod = _copy("hipMemcpyDtoD", "hipMemcpyDtoDAsync")
    copy_peer = primitive("hipMemcpyPeerAsync", CopyFailed)
    memset_d8 = _copy("hipMemsetD8", "hipMemsetD8Async")
    host_alloc = primitive("hipHostMalloc", AllocFailed, tail=(0,))
    host_free = primitive("hipHostFree", AllocFailed)
    host_unregister = primitive("hipHostUnregister", AllocFailed)

    def host_register(self, addr: int, nbytes: int) -> bool:
        """``hipHostRegister``."""
        return self.status("hipHostRegister", addr, nbytes, 0) == 0

    module_load = primitive("hipModuleLoadData", ModuleLoadFailed)
    module_unload = primitive("hipModuleUnload", ModuleLoadFailed)

    def module_function(self, module: Any, name: str) -> Any:
        """``hipModuleGetFunction``."""
        return self.invoke(KernelNotFound, "hipModuleGetFunction", None, module, name.encode())

    stream_create = primitive("hipStreamCreate", SyncFailed)
    stream_destroy = primitive("hipStreamDestroy", SyncFailed)
    stream_address = staticmethod(int)
    foreign_stream = staticmethod(int)  # hip-python takes a handle's address as an int
    stream_synchronize = primitive("hipStreamSynchronize", SyncFailed)
    stream_wait_event = primitive("hipStreamWaitEvent", EventFailed, tail=(0,))

    stream_query = query("hipStreamQuery", SyncFailed)

    def event_create(self, timing: bool) -> Any:
        """``hipEventCreateWithFlags`` (``hipEventDisableTiming`` without timing)."""
        flags = 0 if timing else int(self.hip.hipEventDisableTiming)
        return self.invoke(EventFailed, "hipEventCreateWithFlags", None, flags)

    event_destroy = primitive("hipEventDestroy", EventFailed)
    event_record = primitive("hipEventRecord", EventFailed)
    event_synchronize = primitive("hipEventSynchronize", SyncFailed)
    event_elapsed_ms = primitive("hipEventElapsedTime", EventFailed)

    event_query = query("hipEventQuery", EventFailed)

    def begin_capture(self, stream: Any, mode: str) -> None:
        """``hipStreamBeginCapture``."""
        mode_enum = getattr(self.hip.hipStreamCaptureMode,
                            f"hipStreamCaptureMode{_CAPTURE_MODES[mode]}")
        self.invoke(CaptureFailed, "hipStreamBeginCapture", None, stream, mode_enum)

    end_capture = primitive("hipStreamEndCapture", CaptureFailed)

    def graph_instantiate(self, graph: Any) -> Any:
        """``hipGraphInstantiate``: the executable graph (hip-python answers it with the
        error node; a failure raises, so the node is not needed)."""
        graph_exec, _error_node = self.invoke(GraphFailed, "hipGraphInstantiate", None, graph,
                                              None, 0)
        return graph_exec

    graph_launch = primitive("hipGraphLaunch", GraphFailed)
    graph_update = primitive("hipGraphExecUpdate", GraphFailed)
    graph_destroy = primitive("hipGraphDestroy", GraphFailed)
    graph_exec_destroy = primitive("hipGraphExecDestroy", GraphFailed)


def probe() -> Availability:
    """Availability of HIP here; never raises (missing library or GPU is the reason)."""
    from .compiler import compiler_version

    def driver() -> HipDriver:
        hip = libs.hip()
        if code_of(hip.hipInit(0)[0]) == 0:
            libs.require_properties_symbol()
        return HipDriver(hip)

    return gpu_probe("hip", compiler_version, driver, "no AMD GPU (hipGetDeviceCount: 0)")

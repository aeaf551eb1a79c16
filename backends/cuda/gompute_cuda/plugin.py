"""The ``gompute.backends`` entry point ``cuda``: the four hooks, answering only for "cuda"."""

from __future__ import annotations

import threading

import pluggy

from gompute_core.errors import InvalidArgument
from gompute_core.ir.kernel import KINDS
from gompute_core.plugins.records import (
    PLUGIN_API_VERSION,
    Artifact,
    Availability,
    BackendInfo,
    CompileRequest,
    DeviceInfo,
)

from . import __version__

hookimpl = pluggy.HookimplMarker("gompute")

NAME = "cuda"
_lock = threading.Lock()


@hookimpl
def gompute_backend_info() -> BackendInfo:
    """CUDA: priority 300 (probed first), every kind, every scalar type."""
    return BackendInfo(name=NAME, version=__version__, api_version=PLUGIN_API_VERSION,
                       priority=300, kinds=KINDS, example_arch="sm_90",
                       description="NVIDIA GPUs: CUDA C++ via NVRTC, run through pycuda")


@hookimpl
def gompute_probe(backend: str) -> Availability | None:
    """Devices found, or why not ("pycuda.driver cannot be imported: libcuda.so.1 ...")."""
    if backend != NAME:
        return None
    from .compiler import compiler_name
    from .driver import availability_reason, cuda

    try:
        compiler = compiler_name()
    except Exception as exc:  # a broken NVRTC must not break the probe
        compiler = f"unusable ({exc})"
    reason = availability_reason()
    if reason is not None:
        return Availability(backend=NAME, available=False, reason=reason, compiler=compiler)
    try:
        drv = cuda()
        devices = []
        for i in range(drv.Device.count()):
            dev = drv.Device(i)
            major, minor = dev.compute_capability()
            devices.append(DeviceInfo(ordinal=i, name=dev.name(), arch=f"sm_{major}{minor}",
                                      memory_bytes=dev.total_memory()))
    except Exception as exc:  # probe never raises
        return Availability(backend=NAME, available=False, reason=f"cuda: {exc}",
                            compiler=compiler)
    if not devices:
        return Availability(backend=NAME, available=False, reason="no CUDA device",
                            compiler=compiler)
    return Availability(backend=NAME, available=True, devices=tuple(devices), compiler=compiler)


@hookimpl
def gompute_compile(request: CompileRequest) -> Artifact | None:
    """Render and compile for ``request.arch`` (the core always names one)."""
    if request.backend != NAME:
        return None
    from .compiler import compile_kernel

    arch = request.arch
    if not isinstance(arch, str):
        raise InvalidArgument(f"arch: expected a string like 'sm_90', got {arch!r}")
    return compile_kernel(request.kernel, arch, request.options)


@hookimpl
def gompute_device(backend: str, ordinal: int) -> object | None:
    """The :class:`~gompute_cuda.device.CudaDevice` for ``ordinal``."""
    if backend != NAME:
        return None
    from .device import CudaDevice

    with _lock:
        return CudaDevice(ordinal)

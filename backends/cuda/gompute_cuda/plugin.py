"""The ``gompute.backends`` entry point ``cuda``: the four hooks of the backend SDK."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from gompute_core.backend import (
    Availability,
    BackendInfo,
    DeviceInfo,
    hookimpl,
)

from . import __version__

if TYPE_CHECKING:  # annotations only: discovery must stay light (no NumPy)
    from gompute_core.backend import Compiler, Device

NAME = "cuda"
FEATURES = ("entries", "raw", "barriers", "shared_memory", "atomics")
"""The kernel features this backend runs: every spec kind's entry point and raw kernels
with their builtins (the core derives the kinds from them)."""
"""The kinds this backend runs (named here: a kind the core adds later is not claimed)."""
_lock = threading.Lock()


@hookimpl
def gompute_backend_info() -> BackendInfo:
    """CUDA: priority 300 (probed first), every kind, every scalar type."""
    return BackendInfo(name=NAME, version=__version__, api_version=2,
                       priority=300, kinds=(), features=FEATURES, example_arch="sm_90",
                       description="NVIDIA GPUs: CUDA C++ via NVRTC, run through pycuda")


@hookimpl
def gompute_probe() -> Availability:
    """Devices found, or why not ("libcuda.so.1 not found (no NVIDIA driver)", ...)."""
    from .compiler import compiler_hazards, compiler_name
    from .driver import availability_reason, cuda

    try:
        compiler, hazards = compiler_name(), compiler_hazards()
    except Exception as exc:  # a broken NVRTC must not break the probe
        compiler, hazards = f"unusable ({exc})", ()
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
    return Availability(backend=NAME, available=True, devices=tuple(devices), compiler=compiler,
                        warnings=hazards)


@hookimpl
def gompute_compiler() -> Compiler:
    """NVRTC (nvcc as the fallback)."""
    from .compiler import CudaCompiler

    return CudaCompiler()


@hookimpl
def gompute_device(ordinal: int) -> Device:
    """The :class:`~gompute_cuda.device.CudaDevice` for ``ordinal``."""
    from .device import CudaDevice

    with _lock:
        return CudaDevice(ordinal)

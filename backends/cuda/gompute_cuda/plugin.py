"""The ``gompute.backends`` entry point ``cuda``: the four hooks of the backend SDK."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from gompute_core.backend import (
    Availability,
    BackendInfo,
    hookimpl,
)

from . import __version__

if TYPE_CHECKING:  # annotations only: discovery must stay light (no NumPy)
    from gompute_core.backend import Compiler, Device

NAME = "cuda"
FEATURES = ("entries", "raw", "barriers", "shared_memory", "atomics")
"""The kernel features this backend runs: every spec kind's entry point and raw kernels
with their builtins (the core derives the kinds from them)."""
_lock = threading.Lock()


@hookimpl
def gompute_backend_info() -> BackendInfo:
    """CUDA: priority 300 (probed first), every kind, every scalar type."""
    return BackendInfo(name=NAME, version=__version__, api_version=3,
                       priority=300, kinds=(), features=FEATURES, example_arch="sm_90",
                       description="NVIDIA GPUs: CUDA C++ via NVRTC, run through libcuda")


@hookimpl
def gompute_probe() -> Availability:
    """Devices found, or why not ("libcuda.so.1 not found (no NVIDIA driver)", ...)."""
    from gompute_core.backend.gpu import probe

    from .compiler import compiler_hazards, compiler_name
    from .driver import driver

    return probe(NAME, compiler_name, driver, "no CUDA device", compiler_hazards)


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

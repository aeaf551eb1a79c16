"""The pluggy hook implementations of the HIP backend (entry point ``gompute.backends``)."""

from __future__ import annotations

from gompute_core.ir.kernel import KINDS
from gompute_core.plugins.manager import hookimpl
from gompute_core.plugins.records import (
    PLUGIN_API_VERSION,
    Artifact,
    Availability,
    BackendInfo,
    CompileRequest,
)

from . import __version__

NAME = "hip"


@hookimpl
def gompute_backend_info() -> BackendInfo:
    """The HIP backend: every kind and scalar type, priority 200 (after CUDA, before the CPU)."""
    return BackendInfo(
        name=NAME, version=__version__, api_version=PLUGIN_API_VERSION, priority=200,
        kinds=KINDS, unsupported_types=(), example_arch="gfx90a",
        description="AMD GPUs through hip-python; hiprtc compiles gfx code objects",
    )


@hookimpl
def gompute_probe(backend: str) -> Availability | None:
    """HIP's availability: devices, or "no AMD GPU (hipInit: N)" / the missing library."""
    if backend != NAME:
        return None
    from .runtime.device import probe

    return probe()


@hookimpl
def gompute_compile(request: CompileRequest) -> Artifact | None:
    """Compile for ``request.arch`` (the core always names one)."""
    if request.backend != NAME:
        return None
    from .compiler import compile_kernel

    arch = request.arch
    return compile_kernel(request.kernel, arch, request.options)


@hookimpl
def gompute_device(backend: str, ordinal: int) -> object | None:
    """Open HIP device ``ordinal``."""
    if backend != NAME:
        return None
    from .runtime.device import HipDevice

    return HipDevice(ordinal)

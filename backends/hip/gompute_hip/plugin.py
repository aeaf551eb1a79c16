"""The pluggy hook implementations of the HIP backend (entry point ``gompute.backends``)."""

from __future__ import annotations

from gompute_core.errors import BackendUnavailable
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
        kinds=KINDS, unsupported_types=(),
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
    """Compile for ``request.arch``, or for device 0's arch when it is None."""
    if request.backend != NAME:
        return None
    from .compiler import compile_kernel

    arch = request.arch
    if arch is None:
        avail = gompute_probe(NAME)
        if avail is None or not avail.devices:
            reason = avail.reason if avail is not None else "no probe"
            raise BackendUnavailable(f"HIP: no arch given and no device to detect it from "
                                     f"({reason}); pass arch='gfx90a' or another gfx target")
        arch = avail.devices[0].arch
    return compile_kernel(request.kernel, arch, request.options)


@hookimpl
def gompute_device(backend: str, ordinal: int) -> object | None:
    """Open HIP device ``ordinal``."""
    if backend != NAME:
        return None
    from .runtime.device import HipDevice

    return HipDevice(ordinal)

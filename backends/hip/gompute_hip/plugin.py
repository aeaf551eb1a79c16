"""The ``gompute.backends`` entry point ``hip``: the four hooks of the backend SDK."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gompute_core.backend import (
    PLUGIN_API_VERSION,
    Availability,
    BackendInfo,
    hookimpl,
)

from . import __version__

if TYPE_CHECKING:  # annotations only: discovery must stay light (no NumPy)
    from gompute_core.backend import Compiler, Device

NAME = "hip"
KINDS = ("map", "map_to", "zip", "map_indexed", "reduce", "gather", "scatter", "raw")
"""The kinds this backend runs (named here: a kind the core adds later is not claimed)."""


@hookimpl
def gompute_backend_info() -> BackendInfo:
    """The HIP backend: every kind and scalar type, priority 200 (after CUDA, before the CPU)."""
    return BackendInfo(
        name=NAME, version=__version__, api_version=PLUGIN_API_VERSION, priority=200,
        kinds=KINDS, unsupported_types=(), example_arch="gfx90a",
        description="AMD GPUs through hip-python; hiprtc compiles gfx code objects",
    )


@hookimpl
def gompute_probe() -> Availability:
    """HIP's availability: devices, or "no AMD GPU (hipInit: N)" / the missing library."""
    from .driver import probe

    return probe()


@hookimpl
def gompute_compiler() -> Compiler:
    """hiprtc."""
    from .compiler import HipCompiler

    return HipCompiler()


@hookimpl
def gompute_device(ordinal: int) -> Device:
    """Open HIP device ``ordinal``."""
    from .device import HipDevice

    return HipDevice(ordinal)

"""The ``gompute.backends`` entry point ``hip``: the four hooks of the backend SDK."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gompute_core.backend import (
    Availability,
    BackendInfo,
    hookimpl,
)

from . import __version__

if TYPE_CHECKING:  # annotations only: discovery must stay light (no NumPy)
    from gompute_core.backend import Compiler, Device

NAME = "hip"
FEATURES = ("entries", "raw", "barriers", "shared_memory", "atomics")
"""The kernel features this backend runs: every spec kind's entry point and raw kernels
with their builtins (the core derives the kinds from them)."""
"""The kinds this backend runs (named here: a kind the core adds later is not claimed)."""


@hookimpl
def gompute_backend_info() -> BackendInfo:
    """The HIP backend: every kind and scalar type, priority 200 (after CUDA, before the CPU)."""
    return BackendInfo(
        name=NAME, version=__version__, api_version=3, priority=200,
        kinds=(), features=FEATURES, unsupported_types=(), example_arch="gfx90a",
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

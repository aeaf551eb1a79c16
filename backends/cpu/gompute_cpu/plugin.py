"""The ``gompute.backends`` entry point ``cpu``: the four hooks, answering only for "cpu"."""

from __future__ import annotations

import os
import threading

import pluggy

from gompute_core.errors import InvalidArgument, NoDevice
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

NAME = "cpu"
_device_lock = threading.Lock()
_devices: dict[int, object] = {}


def host_arch() -> str:
    """The host's LLVM CPU name (``znver4``, ``skylake-avx512``, ...): what numba targets."""
    import llvmlite.binding as llvm

    return str(llvm.get_host_cpu_name())


def compiler_version() -> str:
    """``"numba X (llvmlite Y)"``."""
    import llvmlite
    import numba

    return f"numba {numba.__version__} (llvmlite {llvmlite.__version__})"


@hookimpl
def gompute_backend_info() -> BackendInfo:
    """The CPU backend: every kind, every type but f16 (numba's CPU target has no f16 math)."""
    return BackendInfo(
        name=NAME, version=__version__, api_version=PLUGIN_API_VERSION, priority=100,
        kinds=KINDS, unsupported_types=("f16",),
        description="numba: vectorized loops, threaded (prange) above a size threshold",
    )


@hookimpl
def gompute_probe(backend: str) -> Availability | None:
    """Available when numba imports; one device, the host CPU."""
    if backend != NAME:
        return None
    try:
        arch = host_arch()
        compiler = compiler_version()
    except Exception as exc:  # a broken numba install must not take the registry down
        return Availability(NAME, False, reason=f"numba unusable: {type(exc).__name__}: {exc}")
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        memory = 0
    threads = os.cpu_count() or 1
    device = DeviceInfo(0, f"host CPU ({threads} threads)", arch, memory)
    return Availability(NAME, True, devices=(device,), compiler=compiler)


@hookimpl
def gompute_compile(request: CompileRequest) -> Artifact | None:
    """Render the kernel's Python module (numba compiles it when a program loads it)."""
    if request.backend != NAME:
        return None
    if request.options:
        raise InvalidArgument(f"the CPU backend takes no compiler options, got {request.options}")
    from .kernels import render_module

    kir = request.kernel
    source = render_module(kir)
    return Artifact(
        backend=NAME, image=source.encode(), format="python", entry=kir.name,
        target=request.arch or host_arch(), source=source, compiler=compiler_version(),
        digest=kir.digest(), kind=kir.kind,
    )


@hookimpl
def gompute_device(backend: str, ordinal: int) -> object | None:
    """The host CPU (ordinal 0 only)."""
    if backend != NAME:
        return None
    if ordinal != 0:
        raise NoDevice(f"the CPU backend has one device (ordinal 0), not {ordinal}")
    with _device_lock:
        dev = _devices.get(0)
        if dev is None:
            from .device import CpuDevice

            dev = _devices[0] = CpuDevice(host_arch())
        return dev

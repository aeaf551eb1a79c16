"""The ``gompute.backends`` entry point ``cpu``: the four hooks of the backend SDK."""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

from gompute_core.backend import (
    Availability,
    BackendInfo,
    Built,
    Compiler,
    DeviceInfo,
    hookimpl,
)
from gompute_core.errors import InvalidArgument, NoDevice

from . import __version__

if TYPE_CHECKING:  # annotations only: discovery must stay light (no NumPy)
    from gompute_core.ir.kernel import KernelIR

NAME = "cpu"
FEATURES = ("entries", "raw", "barriers", "shared_memory", "atomics")
"""The kernel features this backend runs: every spec kind's entry point and raw kernels
with their builtins (the core derives the kinds from them)."""

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


class CpuCompiler(Compiler):
    """Renders the kernel's Python module; numba compiles it when a program loads it (and
    keeps its own disk cache of machine code), so the artifact is the source itself."""

    backend = NAME
    disk_cache = False  # rendering is cheaper than reading a file back

    def identity(self) -> str:
        """``"numba X (llvmlite Y)"``."""
        return compiler_version()

    def check_arch(self, arch: str) -> str:
        """This host's CPU name only: numba compiles the module for the machine that loads
        it, so an artifact "for" another CPU would be a promise nothing keeps."""
        host = host_arch()
        if arch != host:
            raise InvalidArgument(f"arch: the CPU backend compiles for this host ({host!r}), "
                                  f"not {arch!r}")
        return arch

    def render(self, kernel: KernelIR, arch: str) -> str:
        """The complete Python module (``Unsupported`` for f16)."""
        if kernel.kind == "raw":
            from .raw_flat import render_raw_module

            return render_raw_module(kernel)
        from .kernels import render_module

        return render_module(kernel)

    def build(self, source: str, kernel: KernelIR, arch: str,
              options: tuple[str, ...]) -> Built:
        """The module's source as the image (format ``"python"``)."""
        if options:
            raise InvalidArgument(f"the CPU backend takes no compiler options, got {options}")
        return Built(source.encode(), "python")


@hookimpl
def gompute_backend_info() -> BackendInfo:
    """The CPU backend: every kind, every type but f16 (numba's CPU target has no f16 math)."""
    return BackendInfo(
        name=NAME, version=__version__, api_version=3, priority=100,
        kinds=(), features=FEATURES, unsupported_types=("f16",),
        description="numba: vectorized loops, threaded (prange) above a size threshold",
    )


@hookimpl
def gompute_probe() -> Availability:
    """Available when numba imports; one device, the host CPU."""
    try:
        arch = host_arch()
        compiler = compiler_version()
    except Exception as exc:  # a broken numba install must not take the registry down
        return Availability(NAME, False, reason=f"numba unusable: {type(exc).__name__}: {exc}")
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        memory = 0
    device = DeviceInfo(0, _device_name(), arch, memory)
    return Availability(NAME, True, devices=(device,), compiler=compiler)


def _device_name() -> str:
    return f"host CPU ({os.cpu_count() or 1} threads)"


@hookimpl
def gompute_compiler() -> Compiler:
    """The renderer to numba-ready Python."""
    return CpuCompiler()


@hookimpl
def gompute_device(ordinal: int) -> object:
    """The host CPU (ordinal 0 only)."""
    if ordinal != 0:
        raise NoDevice(f"the CPU backend has one device (ordinal 0), not {ordinal}")
    with _device_lock:
        dev = _devices.get(0)
        if dev is None:
            from .device import CpuDevice

            dev = _devices[0] = CpuDevice(host_arch(), _device_name())
        return dev

"""The ``gompute.backends`` entry point ``opencl``: the four hooks of the plugin API.

Priority 50, below the CPU backend's 100: on a machine with both, ``AutoKernel``
prefers the CPU backend (an OpenCL CPU device does the same work through one
more layer); ask for ``"opencl"`` by name, or order ``GOMPUTE_BACKENDS``.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from gompute_core.backend import (
    Availability,
    BackendInfo,
    Built,
    Compiler,
    DeviceInfo,
    hookimpl,
)
from gompute_core.errors import BackendUnavailable, CompileFailed, InvalidArgument, NoDevice

from . import __version__

if TYPE_CHECKING:  # annotations only: discovery must stay light (no NumPy)
    from gompute_core.ir.kernel import KernelIR

NAME = "opencl"
FEATURES = ("entries", "raw", "barriers", "shared_memory", "atomics")
"""The kernel features this backend runs: every spec kind's entry point and raw kernels
with their builtins (the core derives the kinds from them)."""
"""Every kind, named explicitly (a kind the core adds later is not claimed)."""

_lock = threading.Lock()
_devices: dict[int, Any] = {}


def cl_devices() -> list[Any]:
    """Every OpenCL device of every platform, in platform order (``[]`` without an ICD)."""
    import pyopencl as cl

    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return []
    found = []
    for platform in platforms:
        try:
            found.extend(platform.get_devices())
        except cl.Error:
            continue
    return found


def arch_of(device: Any) -> str:
    """The arch string of an OpenCL device: its name with spaces as ``_``."""
    return "_".join(device.name.split())


def _extensions(device: Any) -> set[str]:
    return set(device.extensions.split())


class OpenCLCompiler(Compiler):
    """Renders OpenCL C and builds a device binary for the device whose arch is named."""

    backend = NAME

    def identity(self) -> str:
        """``"pyopencl X; <platform> <version>"`` of the first platform."""
        import pyopencl as cl

        devices = cl_devices()
        if not devices:
            raise BackendUnavailable("opencl: no OpenCL platform (install "
                                     "pocl-binary-distribution or a vendor ICD)")
        platform = devices[0].platform
        return f"pyopencl {cl.VERSION_TEXT}; {platform.name} {platform.version}"

    def check_arch(self, arch: str) -> str:
        """One of the installed devices' arch strings."""
        known = [arch_of(d) for d in cl_devices()]
        if arch not in known:
            raise InvalidArgument(f"arch: {arch!r} is not an OpenCL device here; "
                                  f"known: {', '.join(known) or 'none'}")
        return arch

    def render(self, kernel: KernelIR, arch: str) -> str:
        """The kernel as OpenCL C."""
        from .renderer import OpenCLRenderer

        return OpenCLRenderer().render(kernel)

    def build(self, source: str, kernel: KernelIR, arch: str,
              options: tuple[str, ...]) -> Built:
        """A device binary of ``source`` (``CompileFailed`` with the build log)."""
        import pyopencl as cl

        from .renderer import OpenCLRenderer

        device = next(d for d in cl_devices() if arch_of(d) == arch)
        context = cl.Context([device])
        program = cl.Program(context, source)
        try:
            program.build(options=list(options))
        except cl.Error as exc:
            try:
                log = program.get_build_info(device, cl.program_build_info.LOG)
            except cl.Error:
                log = ""
            raise CompileFailed(f"opencl: {kernel.name} for {arch} rejected:\n{log or exc}"
                                ) from exc
        binary = program.get_info(cl.program_info.BINARIES)[0]
        entry = OpenCLRenderer().entry_symbol(kernel)
        return Built(bytes(binary), "opencl-binary", (("options", " ".join(options)),), entry)


@hookimpl
def gompute_backend_info() -> BackendInfo:
    """Every kind and type (f16 through ``vload_half``/``vstore_half``)."""
    return BackendInfo(name=NAME, version=__version__, api_version=3,
                       priority=50, kinds=(), features=FEATURES, unsupported_types=(),
                       description="OpenCL C through pyopencl (any ICD: PoCL, vendor drivers)")


@hookimpl
def gompute_probe() -> Availability:
    """The OpenCL devices found (never raises)."""
    try:
        import pyopencl  # noqa: F401
    except Exception as exc:
        return Availability(NAME, False, reason=f"pyopencl unusable: {exc}")
    devices = cl_devices()
    if not devices:
        return Availability(NAME, False, reason="no OpenCL device (no ICD found: install "
                            "pocl-binary-distribution or a vendor driver)")
    unusable = [arch_of(d) for d in devices if "cl_khr_fp64" not in _extensions(d)]
    if unusable:
        return Availability(NAME, False, reason=f"OpenCL device(s) without cl_khr_fp64 "
                            f"(f64 is a required type): {', '.join(unusable)}")
    return Availability(NAME, True, compiler=OpenCLCompiler().identity(), devices=tuple(
        DeviceInfo(i, d.name, arch_of(d), int(d.global_mem_size))
        for i, d in enumerate(devices)))


@hookimpl
def gompute_compiler() -> Compiler:
    """The OpenCL C compiler."""
    return OpenCLCompiler()


@hookimpl
def gompute_device(ordinal: int) -> Any:
    """OpenCL device ``ordinal`` (in platform order)."""
    devices = cl_devices()
    if not 0 <= ordinal < len(devices):
        raise NoDevice(f"opencl: {len(devices)} device(s); ordinal {ordinal} does not exist")
    with _lock:
        device = _devices.get(ordinal)
        if device is None:
            from .device import OpenCLDevice

            device = _devices[ordinal] = OpenCLDevice(ordinal, devices[ordinal],
                                                      arch_of(devices[ordinal]))
        return device

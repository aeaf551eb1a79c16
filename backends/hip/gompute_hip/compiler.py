"""hiprtc compilation of rendered HIP source to an AMDGPU code object (the core caches it).

``-ffp-contract=off`` keeps every multiply and add separately rounded, as on
the CPU and under CUDA's ``--fmad=false``; a kernel that opts in to contraction
(``KernelIR.contract``) is compiled with ``-ffp-contract=fast`` instead. The
target is validated against the compiler's own list first
(:mod:`gompute_hip.targets`): hiprtc aborts the process on a target it does not know.
"""

from __future__ import annotations

import functools
import threading

from gompute_core.backend import Built, Compiler
from gompute_core.errors import BackendUnavailable, CompileFailed, InvalidArgument
from gompute_core.ir.kernel import KernelIR

from . import libs
from .renderer import HIPRenderer, render
from .targets import comgr_version, validate_target

BASE_OPTIONS: tuple[str, ...] = ("-O3", "-ffp-contract=off", "-std=c++17")
"""Options every compilation uses (the ``--offload-arch`` option is added per target)."""

CONTRACT_OPTIONS: tuple[str, ...] = ("-O3", "-ffp-contract=fast", "-std=c++17")
"""The options of a kernel that opts in to contraction: clang may fuse ``a * b + c``."""


def base_options(kernel: KernelIR) -> tuple[str, ...]:
    """The options every compilation of ``kernel`` starts with (the user's follow)."""
    return CONTRACT_OPTIONS if kernel.contract else BASE_OPTIONS

FORMAT = "hsaco"

_LOCK = threading.Lock()  # hiprtc of ROCm 5.2 is not documented as thread-safe


@functools.lru_cache(maxsize=1)
def compiler_version() -> str:
    """``"hiprtc (HIP 5.2.21153, comgr 2.4)"``: what the cache key and artifacts record.

    The HIP runtime library's version identifies the hiprtc build (ROCm 5.2
    keeps hiprtc inside ``libamdhip64``; later ROCm ships them together);
    ``hiprtcVersion`` itself is no help (ROCm 5.2 answers a fixed 9.0), so it
    is used only when the runtime library is absent. Raises
    ``BackendUnavailable`` when hiprtc is absent.
    """
    rtc = libs.hiprtc()
    try:
        _, runtime = libs.hip().hipRuntimeGetVersion()
    except BackendUnavailable:
        _, major, minor = rtc.hiprtcVersion()
        return f"hiprtc {major}.{minor} (comgr {comgr_version()})"
    return (f"hiprtc (HIP {runtime // 10_000_000}.{runtime // 100_000 % 100}."
            f"{runtime % 100_000}, comgr {comgr_version()})")


def _log(rtc: object, prog: object) -> str:
    code, size = rtc.hiprtcGetProgramLogSize(prog)  # type: ignore[attr-defined]
    if int(code) != 0 or size <= 1:
        return ""
    buf = bytearray(size)
    rtc.hiprtcGetProgramLog(prog, buf)  # type: ignore[attr-defined]
    return buf.rstrip(b"\0").decode(errors="replace")


def compile_source(source: str, name: str, arch: str, options: tuple[str, ...] = (),
                   base: tuple[str, ...] = BASE_OPTIONS) -> bytes:
    """Compile ``source`` (file name ``name``.hip in messages) for ``arch``; return the ELF.

    Raises ``InvalidArgument`` for a target the compiler does not support
    (before calling hiprtc), ``CompileFailed`` with the log when hiprtc
    rejects the source, ``BackendUnavailable`` when hiprtc is absent. ``base`` are the
    options before ``options`` (:func:`base_options`).
    """
    validate_target(arch)
    rtc = libs.hiprtc()
    opts = [f"--offload-arch={arch}", *base, *options]
    with _LOCK:
        code, prog = rtc.hiprtcCreateProgram(source.encode(), f"{name}.hip".encode(), 0, [], [])
        if int(code) != 0:
            raise CompileFailed(f"hiprtcCreateProgram({name}) failed: {code!r}")
        try:
            (code,) = rtc.hiprtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
            if int(code) != 0:
                raise CompileFailed(
                    f"hiprtc rejected kernel {name!r} for {arch} ({code.name}); options "
                    f"{' '.join(opts)}\n{_log(rtc, prog)}")
            code, size = rtc.hiprtcGetCodeSize(prog)
            image = bytearray(size)
            (code,) = rtc.hiprtcGetCode(prog, image)
            if int(code) != 0 or size == 0:
                raise CompileFailed(f"hiprtcGetCode({name}) failed: {code!r}")
        finally:
            rtc.hiprtcDestroyProgram(prog.createRef())  # takes hiprtcProgram*
    return bytes(image)


class HipCompiler(Compiler):
    """hiprtc for ``gfx`` targets (validated first: hiprtc aborts on an unknown one)."""

    backend = "hip"

    def identity(self) -> str:
        """hiprtc's version (:func:`compiler_version`)."""
        return compiler_version()

    def check_arch(self, arch: str) -> str:
        """A gfx target the installed compiler supports (``InvalidArgument`` listing them)."""
        if not isinstance(arch, str) or not arch:
            raise InvalidArgument(f"arch must name a gfx target such as 'gfx90a', got {arch!r}")
        validate_target(arch)
        return arch

    def render(self, kernel: KernelIR, arch: str) -> str:
        """HIP C++ for hiprtc."""
        return render(kernel)

    def build(self, source: str, kernel: KernelIR, arch: str,
              options: tuple[str, ...]) -> Built:
        """An AMDGPU code object (``hsaco``)."""
        base = base_options(kernel)
        image = compile_source(source, kernel.name, arch, options, base)
        flags = " ".join((f"--offload-arch={arch}", *base, *options))
        return Built(image, FORMAT, (("options", flags),), HIPRenderer().entry_symbol(kernel))

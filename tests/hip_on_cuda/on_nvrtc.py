"""HIP source on an NVIDIA GPU: the HIP renderer's output compiled by NVRTC (a test
harness, not part of any package).

No AMD GPU is available to this project, so the semantics of the generated
HIP code (indexing, the reduce tree, the params layout, f16 conversions) are
executed on NVIDIA hardware instead: :data:`CUDA_HEADER` spells the few
HIP-only names the HIP renderer emits in CUDA, and :class:`HipOnNvrtcPlugin`
is an in-process backend (``hip_nvrtc``) whose compile hook renders with
:class:`~gompute_hip.renderer.HIPRenderer`, prepends the header and compiles
with the CUDA backend's NVRTC, and whose devices are the CUDA backend's. The
conformance suite then runs unchanged against it (``bench/hip_on_nvrtc.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gompute_hip import __version__
from gompute_hip.renderer import render

from gompute_core.errors import BackendUnavailable
from gompute_core.ir.kernel import KINDS, KernelIR
from gompute_core.plugins import manager
from gompute_core.plugins.manager import hookimpl
from gompute_core.plugins.records import (
    PLUGIN_API_VERSION,
    Artifact,
    Availability,
    BackendInfo,
    CompileRequest,
)

NAME = "hip_nvrtc"

CUDA_HEADER = (Path(__file__).resolve().parent / "hip_to_cuda.h").read_text()
"""Prepended to HIP source for NVRTC (also by the fixture's hiprtc, which embeds the same
file). threadIdx/blockIdx/blockDim/gridDim, __syncthreads, __shared__, __launch_bounds__
and the vector types are spelled alike in HIP and CUDA."""

NVRTC_OPTIONS: tuple[str, ...] = ("--fmad=false", "--std=c++17", "--diag-suppress=177")


def cuda_source(kernel: KernelIR) -> str:
    """The HIP source of ``kernel`` behind :data:`CUDA_HEADER`."""
    return CUDA_HEADER + render(kernel)


def compile_for_cuda(kernel: KernelIR, arch: str) -> Artifact:
    """NVRTC-compile the HIP source of ``kernel`` for ``arch`` (``"sm_90"``); no GPU needed.

    Raises ``BackendUnavailable`` when gompute-cuda or NVRTC is absent,
    ``CompileFailed`` with NVRTC's log when the source is rejected.
    """
    try:
        from gompute_cuda.nvrtc import load_nvrtc, parse_arch
    except ImportError as exc:
        raise BackendUnavailable(f"hip_nvrtc needs gompute-cuda's NVRTC binding: {exc}") from exc
    nvrtc = load_nvrtc()
    source = cuda_source(kernel)
    img = nvrtc.compile(source, kernel.name, parse_arch(arch), NVRTC_OPTIONS)
    return Artifact(backend=NAME, image=img.image, format=img.format, entry=kernel.name,
                    target=arch, source=source, compiler=nvrtc.name, digest=kernel.digest(),
                    kind=kernel.kind)


class HipOnNvrtcPlugin:
    """In-process backend ``hip_nvrtc``: HIP-rendered kernels on the CUDA backend's devices."""

    @hookimpl
    def gompute_backend_info(self) -> BackendInfo:
        """Every kind and type, lowest priority (never picked by ``AutoKernel`` first)."""
        return BackendInfo(name=NAME, version=__version__, api_version=PLUGIN_API_VERSION,
                           priority=1, kinds=KINDS,
                           description="HIP-rendered source compiled by NVRTC, run on CUDA")

    @hookimpl
    def gompute_probe(self, backend: str) -> Availability | None:
        """Available exactly when the CUDA backend is."""
        if backend != NAME:
            return None
        cuda = manager.probe("cuda")
        return Availability(NAME, cuda.available, cuda.reason, cuda.devices, cuda.compiler)

    @hookimpl
    def gompute_compile(self, request: CompileRequest) -> Artifact | None:
        """Compile the HIP source with NVRTC for the CUDA arch (device 0's when None)."""
        if request.backend != NAME:
            return None
        arch = request.arch or manager.open_device("cuda", 0).arch
        return compile_for_cuda(request.kernel, arch)

    @hookimpl
    def gompute_device(self, backend: str, ordinal: int) -> Any:
        """The CUDA backend's device ``ordinal``."""
        if backend != NAME:
            return None
        return manager.open_device("cuda", ordinal)


def register() -> None:
    """Register the ``hip_nvrtc`` backend in this process (idempotent)."""
    if NAME not in {r.name for r in manager.backends()}:
        manager.register(HipOnNvrtcPlugin(), NAME)

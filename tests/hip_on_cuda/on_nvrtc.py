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

from gompute_core.backend import (
    Availability,
    BackendInfo,
    Built,
    Compiler,
    Device,
    hookimpl,
)
from gompute_core.errors import BackendUnavailable
from gompute_core.ir.kernel import KernelIR
from gompute_core.plugins import manager

NAME = "hip_nvrtc"
FEATURES = ("entries", "raw", "barriers", "shared_memory", "atomics")
"""The kernel features this backend runs: every spec kind's entry point and raw kernels
with their builtins (the core derives the kinds from them)."""

CUDA_HEADER = (Path(__file__).resolve().parent / "hip_to_cuda.h").read_text()
"""Prepended to HIP source for NVRTC (also by the fixture's hiprtc, which embeds the same
file). threadIdx/blockIdx/blockDim/gridDim, __syncthreads, __shared__, __launch_bounds__
and the vector types are spelled alike in HIP and CUDA."""

NVRTC_OPTIONS: tuple[str, ...] = ("--fmad=false", "--std=c++17", "--diag-suppress=177")


def cuda_source(kernel: KernelIR) -> str:
    """The HIP source of ``kernel`` behind :data:`CUDA_HEADER`."""
    return CUDA_HEADER + render(kernel)


def _nvrtc() -> Any:
    try:
        from gompute_cuda.nvrtc import load_nvrtc
    except ImportError as exc:
        raise BackendUnavailable(f"hip_nvrtc needs gompute-cuda's NVRTC binding: {exc}") from exc
    return load_nvrtc()


class HipOnNvrtcCompiler(Compiler):
    """The HIP renderer's source behind :data:`CUDA_HEADER`, compiled by NVRTC (no GPU
    needed); ``BackendUnavailable`` without gompute-cuda's NVRTC."""

    backend = NAME

    def identity(self) -> str:
        return f"{_nvrtc().name} (HIP source)"

    def check_arch(self, arch: str) -> str:
        from gompute_cuda.nvrtc import parse_arch

        return f"sm_{parse_arch(arch)}"

    def render(self, kernel: KernelIR, arch: str) -> str:
        return cuda_source(kernel)

    def build(self, source: str, kernel: KernelIR, arch: str,
              options: tuple[str, ...]) -> Built:
        from gompute_cuda.nvrtc import parse_arch

        img = _nvrtc().compile(source, kernel.name, parse_arch(arch), NVRTC_OPTIONS + options)
        return Built(img.image, img.format)


def _device(ordinal: int) -> Device:
    from gompute_cuda.device import CudaDevice

    class HipOnNvrtcDevice(CudaDevice):
        """A CUDA device loading ``hip_nvrtc`` artifacts."""

        backend = NAME

    return HipOnNvrtcDevice(ordinal)


class HipOnNvrtcPlugin:
    """In-process backend ``hip_nvrtc``: HIP-rendered kernels on the CUDA backend's GPUs."""

    @hookimpl
    def gompute_backend_info(self) -> BackendInfo:
        """Every kind and type, lowest priority (never picked by ``AutoKernel`` first)."""
        return BackendInfo(name=NAME, version=__version__, api_version=3,
                           priority=1, kinds=(), features=FEATURES,
                           description="HIP-rendered source compiled by NVRTC, run on CUDA")

    @hookimpl
    def gompute_probe(self) -> Availability:
        """Available exactly when the CUDA backend is."""
        cuda = manager.probe("cuda")
        return Availability(NAME, cuda.available, cuda.reason, cuda.devices, cuda.compiler)

    @hookimpl
    def gompute_compiler(self) -> Compiler:
        """NVRTC on the HIP renderer's source."""
        return HipOnNvrtcCompiler()

    @hookimpl
    def gompute_device(self, ordinal: int) -> Device:
        """A CUDA device of this backend's name."""
        return _device(ordinal)


def compile_for_cuda(kernel: KernelIR, arch: str) -> Any:
    """NVRTC-compile the HIP source of ``kernel`` for ``arch`` (``"sm_90"``); no GPU needed."""
    from gompute_core.compilation import compile_kernel

    return compile_kernel(HipOnNvrtcCompiler(), kernel, arch)


def register() -> None:
    """Register the ``hip_nvrtc`` backend in this process (idempotent)."""
    if NAME not in {r.name for r in manager.backends()}:
        manager.register(HipOnNvrtcPlugin(), NAME)

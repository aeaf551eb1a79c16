"""The CUDA compiler: render with the CUDA dialect, compile with NVRTC (nvcc when NVRTC is
absent). The core keys and caches the artifacts (:mod:`gompute_core.backend.compiler`)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from gompute_core.backend import Built, Compiler, cache_root
from gompute_core.errors import BackendUnavailable, CompileFailed
from gompute_core.ir.kernel import KernelIR

from .nvrtc import identify, load_nvrtc, parse_arch
from .renderer import CUDARenderer

DEFAULT_OPTIONS: tuple[str, ...] = ("--fmad=false", "--diag-suppress=177")
"""``--fmad=false``: no fused multiply-add, so results match the CPU bit for bit."""

CONTRACT_OPTIONS: tuple[str, ...] = ("--fmad=true", "--diag-suppress=177")
"""The options of a kernel that opts in to contraction (``KernelIR.contract``): NVRTC may
fuse ``a * b + c`` into one ``fma``."""


def base_options(kernel: KernelIR) -> tuple[str, ...]:
    """The options every compilation of ``kernel`` starts with (the user's follow)."""
    return CONTRACT_OPTIONS if kernel.contract else DEFAULT_OPTIONS

_NVCC_CANDIDATES = ("nvcc", "/usr/local/cuda/bin/nvcc")


def find_nvcc() -> str | None:
    """Path of an ``nvcc`` (``$CUDA_HOME/bin`` first), or None."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    names = ([os.path.join(home, "bin", "nvcc")] if home else []) + list(_NVCC_CANDIDATES)
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    return None


NVRTC_HAZARDS: dict[tuple[int, int], str] = {
    (13, 0): ("NVRTC 13.0's ptxas miscompiles an i8/i16 negation NVRTC narrows to neg.s16 "
              "(the sign extension of -(-32768) is dropped) and an integer abs select it "
              "turns into abs.s32 (taken for non-negative); the renderer avoids the patterns "
              "it knows, but other arithmetic can still hit them. Install NVRTC 13.5 or "
              "later: pip install -U nvidia-cuda-nvrtc (found through $GOMPUTE_NVRTC or "
              "nvidia/*/lib)"),
}
"""NVRTC versions known to compile wrong code, with what to do (``gompute doctor``)."""


def nvrtc_hazards(version: tuple[int, int]) -> tuple[str, ...]:
    """The known hazards of NVRTC ``version`` (major, minor): none for a good one."""
    hazard = NVRTC_HAZARDS.get(tuple(version[:2]))  # type: ignore[arg-type]
    return (hazard,) if hazard else ()


def compiler_hazards() -> tuple[str, ...]:
    """The hazards of the NVRTC this process would load (none without one)."""
    try:
        return nvrtc_hazards(load_nvrtc().version)
    except BackendUnavailable:
        return ()


def compiler_name() -> str:
    """``"nvrtc 13.0"``, ``"nvcc 13.0"``, or "" when neither is present."""
    try:
        return load_nvrtc().name
    except BackendUnavailable:
        nvcc = find_nvcc()
        return _nvcc_version(nvcc) if nvcc else ""


def _nvcc_version(nvcc: str) -> str:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=False)
    m = re.search(r"release (\d+\.\d+)", out.stdout)
    return f"nvcc {m.group(1) if m else 'unknown'}"


def _nvcc_compile(nvcc: str, source: str, name: str, arch: int,
                  options: tuple[str, ...]) -> tuple[bytes, str]:
    with tempfile.TemporaryDirectory(prefix="gompute-nvcc-") as tmp:
        src, out = Path(tmp, f"{name}.cu"), Path(tmp, f"{name}.cubin")
        src.write_text(source)
        flags = [o.replace("--diag-suppress=", "-diag-suppress=") for o in options]
        cmd = [nvcc, "-cubin", f"-arch=sm_{arch}", *flags, "-o", str(out), str(src)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise CompileFailed(f"nvcc rejected kernel {name!r} for sm_{arch}:\n{proc.stderr}")
        return out.read_bytes(), f"sm_{arch}"


class CudaCompiler(Compiler):
    """NVRTC (or nvcc) for ``sm_XY`` targets; ``--fmad=false`` unless the kernel opts in to
    contraction."""

    backend = "cuda"

    def identity(self) -> str:
        """``"nvrtc 13.0"`` (from a memo, without loading NVRTC, when one exists) or
        ``"nvcc 13.0"``; ``BackendUnavailable`` when neither is installed."""
        try:
            return identify(str(cache_root() / "cuda"))
        except BackendUnavailable as exc:
            nvcc = find_nvcc()
            if nvcc is None:
                raise BackendUnavailable(f"no CUDA compiler: {exc}; no nvcc on PATH either"
                                         ) from None
            return _nvcc_version(nvcc)

    def check_arch(self, arch: str) -> str:
        """``"sm_90"``, ``"sm90"``, ``"compute_90"`` or ``"90"`` -> ``"sm_90"``."""
        return f"sm_{parse_arch(arch)}"

    def render(self, kernel: KernelIR, arch: str) -> str:
        """CUDA C++ for NVRTC."""
        return CUDARenderer().render(kernel)

    def build(self, source: str, kernel: KernelIR, arch: str,
              options: tuple[str, ...]) -> Built:
        """A cubin for ``arch`` (PTX when the NVRTC is older than the arch)."""
        arch_n = parse_arch(arch)
        opts = base_options(kernel) + tuple(options)
        try:
            nvrtc = load_nvrtc()
        except BackendUnavailable:
            nvcc = find_nvcc()
            if nvcc is None:
                raise
            image, target = _nvcc_compile(nvcc, source, kernel.name, arch_n, opts)
            return Built(image, "cubin", (("code", target), ("options", " ".join(opts))),
                         CUDARenderer().entry_symbol(kernel))
        img = nvrtc.compile(source, kernel.name, arch_n, opts)
        return Built(img.image, img.format, (("code", img.target), ("options", " ".join(opts))),
                     CUDARenderer().entry_symbol(kernel))

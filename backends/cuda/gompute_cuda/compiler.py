"""Compile a KernelIR to a CUDA artifact: render, then NVRTC (nvcc when NVRTC is absent).

Results are cached in memory (per process) and on disk
(:class:`gompute_core.runtime.diskcache.DiskCache` namespace ``"cuda"``), keyed
by the compiler and its version, the arch, the options, the renderer's
version and the IR digest, so a second process does not compile.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from gompute_core.errors import BackendUnavailable, CompileFailed
from gompute_core.ir.kernel import KernelIR
from gompute_core.plugins.records import Artifact
from gompute_core.runtime.diskcache import CompileCache

from .nvrtc import identify, load_nvrtc, parse_arch
from .renderer import CUDARenderer

RENDERER_VERSION = "cuda-renderer/1"
"""Bumped whenever generated code changes, so cached artifacts of older code miss."""

DEFAULT_OPTIONS: tuple[str, ...] = ("--fmad=false", "--diag-suppress=177")
"""``--fmad=false``: no fused multiply-add, so results match the CPU bit for bit."""

_NVCC_CANDIDATES = ("nvcc", "/usr/local/cuda/bin/nvcc")

_cache = CompileCache("cuda")


def find_nvcc() -> str | None:
    """Path of an ``nvcc`` (``$CUDA_HOME/bin`` first), or None."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    names = ([os.path.join(home, "bin", "nvcc")] if home else []) + list(_NVCC_CANDIDATES)
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    return None


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
                  options: tuple[str, ...]) -> tuple[bytes, str, str]:
    with tempfile.TemporaryDirectory(prefix="gompute-nvcc-") as tmp:
        src, out = Path(tmp, f"{name}.cu"), Path(tmp, f"{name}.cubin")
        src.write_text(source)
        flags = [o.replace("--diag-suppress=", "-diag-suppress=") for o in options]
        cmd = [nvcc, "-cubin", f"-arch=sm_{arch}", *flags, "-o", str(out), str(src)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise CompileFailed(f"nvcc rejected kernel {name!r} for sm_{arch}:\n{proc.stderr}")
        return out.read_bytes(), "cubin", f"sm_{arch}"


def compile_kernel(kir: KernelIR, arch: str, options: tuple[str, ...] = ()) -> Artifact:
    """Render and compile ``kir`` for ``arch`` (e.g. ``"sm_90"``), using both caches."""
    arch_n = parse_arch(arch)
    opts = DEFAULT_OPTIONS + tuple(options)
    nvcc = None
    try:
        compiler = identify(str(_cache.disk.directory))
    except BackendUnavailable as exc:
        nvcc = find_nvcc()
        if nvcc is None:
            raise BackendUnavailable(f"no CUDA compiler: {exc}; no nvcc on PATH either") from None
        compiler = _nvcc_version(nvcc)
    key = (compiler, f"sm_{arch_n}", " ".join(opts), RENDERER_VERSION, kir.digest())

    def build() -> Artifact:
        renderer = CUDARenderer()
        source = renderer.render(kir)
        if nvcc is None:
            img = load_nvrtc().compile(source, kir.name, arch_n, opts)
            image, fmt, target = img.image, img.format, img.target
        else:
            image, fmt, target = _nvcc_compile(nvcc, source, kir.name, arch_n, opts)
        return Artifact(backend="cuda", image=image, format=fmt, entry=renderer.entry_symbol(kir),
                        target=f"sm_{arch_n}", source=source, compiler=compiler,
                        digest=kir.digest(), kind=kir.kind,
                        extra=(("code", target), ("options", " ".join(opts))))

    return _cache.get_or_build(key, build)

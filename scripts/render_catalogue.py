"""Render every conformance kernel with every renderer into one folder, to diff a
renderer or lowering refactor.

Usage: ``python scripts/render_catalogue.py DIR`` (with the backends on ``PYTHONPATH``, as
``/work/wt/env.sh`` sets it) writes ``DIR/<renderer>__<key>[__contract].src`` for each
catalogue entry (``gompute_core.testing.catalogue``), also lowered with ``contract=True``,
rendered by CUDA, HIP, OpenCL, the test suite's C99 dialect and the CPU backend (a
renderer's refusal is written as ``ERROR ...``). IR digests are masked. Run it before and
after a change, then ``diff -r BEFORE AFTER``: byte-identical C means the GPU code cannot
have moved.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Callable
from pathlib import Path

from gompute_core.ir.kernel import KernelIR
from gompute_core.testing.catalogue import entries

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def renderers() -> dict[str, Callable[[KernelIR], str]]:
    """Every renderer by name: the C-family dialects and the CPU module."""
    from gompute_cpu.kernels import render_module
    from gompute_cuda.renderer import CUDARenderer
    from gompute_hip.renderer import HIPRenderer
    from gompute_opencl.renderer import OpenCLRenderer
    from test_codegen_c99 import C99Renderer

    dialects = {"cuda": CUDARenderer, "hip": HIPRenderer, "opencl": OpenCLRenderer,
                "c99": C99Renderer}
    found: dict[str, Callable[[KernelIR], str]] = {
        name: (lambda kir, cls=cls: cls().render(kir)) for name, cls in dialects.items()}
    found["cpu"] = render_module
    return found


def render_all(out: Path) -> int:
    """Write every rendering under ``out``; the number of files written."""
    out.mkdir(parents=True, exist_ok=True)
    kernels: list[tuple[str, KernelIR]] = []
    for key, e in entries().items():
        kir = e.spec().lower()
        kernels += [(key, kir), (f"{key}__contract", dataclasses.replace(kir, contract=True))]
    written = 0
    for name, render in renderers().items():
        for key, kir in kernels:
            try:
                source = render(kir)
            except Exception as exc:  # a renderer's refusal is part of what it does
                source = f"ERROR {type(exc).__name__}: {exc}\n"
            masked = re.sub(r"digest [0-9a-f]+", "digest <digest>", source)
            (out / f"{name}__{key}.src").write_text(masked)
            written += 1
    return written


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(f"{render_all(Path(sys.argv[1]))} files written")

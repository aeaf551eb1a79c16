"""The HIP renderer's output compiles with NVRTC behind ``hip_on_cuda.on_nvrtc``'s header,
for every conformance kernel: the compile half of ``bench/hip_on_nvrtc.py``, which runs
the same source on an NVIDIA GPU through the conformance suite. NVRTC needs no GPU.
"""

from __future__ import annotations

import pytest

pytest.importorskip("gompute_hip")
pytest.importorskip("gompute_cuda")

from gompute_hip.renderer import render  # noqa: E402
from hip_on_cuda.on_nvrtc import CUDA_HEADER, NAME, compile_for_cuda, register  # noqa: E402

import gompute_core as g  # noqa: E402
from gompute_core.errors import BackendUnavailable  # noqa: E402
from gompute_core.plugins import manager  # noqa: E402
from gompute_core.testing.catalogue import entries, entry  # noqa: E402


def _nvrtc_or_skip() -> None:
    from gompute_cuda.nvrtc import load_nvrtc

    try:
        load_nvrtc()
    except BackendUnavailable as exc:
        pytest.skip(f"NVRTC unavailable: {exc}")


@pytest.mark.parametrize("key", sorted(entries()))
def test_hip_source_compiles_with_nvrtc(key: str) -> None:
    _nvrtc_or_skip()
    kir = entry(key).spec().lower()
    art = compile_for_cuda(kir, "sm_90")
    assert art.format in ("cubin", "ptx") and art.image
    assert art.source == CUDA_HEADER + render(kir)
    assert art.entry == kir.name


def test_hip_nvrtc_backend_goes_through_the_registry() -> None:
    _nvrtc_or_skip()
    with manager.isolated(discover=True):
        register()
        register()  # idempotent
        rec = manager.record(NAME)
        assert rec.loaded, rec.error
        art = g.compile(entry("rsum_f16").spec(), NAME, arch="sm_80")
        assert art.backend == NAME and art.target == "sm_80"
        assert manager.probe(NAME).available == manager.probe("cuda").available

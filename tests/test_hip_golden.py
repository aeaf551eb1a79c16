"""Rendered HIP source of a few conformance kernels, compared with golden files.

Regenerate after an intended change to the renderer or lowering:

    GOMPUTE_UPDATE_GOLDEN=1 python -m pytest tests/test_hip_golden.py

then review ``git diff tests/golden/hip`` (every regenerated file must still compile:
tests/test_hip_compile.py checks all conformance kernels with hiprtc).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

pytest.importorskip("gompute_hip")

from gompute_hip.renderer import render  # noqa: E402

from gompute_core.testing.catalogue import entry  # noqa: E402

GOLDEN = Path(__file__).parent / "golden" / "hip"
KEYS = ("map_f32", "map_f16", "idx_i32", "zip_f64", "rsum_f32", "gather_f32_u32",
        "params_nested")
UPDATE = os.environ.get("GOMPUTE_UPDATE_GOLDEN") == "1"


def _normalized(source: str) -> str:
    """The source with the IR digest in its header comment masked: the golden files pin
    the generated code, not the digest (which changes with any lowering detail)."""
    return re.sub(r"IR digest [0-9a-f]+", "IR digest <digest>", source)


@pytest.mark.parametrize("key", KEYS)
def test_rendered_source_matches_golden(key: str) -> None:
    source = _normalized(render(entry(key).spec().lower()))
    path = GOLDEN / f"{key}.hip"
    if UPDATE:
        path.write_text(source)
    assert path.exists(), f"{path} missing: run GOMPUTE_UPDATE_GOLDEN=1 pytest {__file__}"
    assert source == path.read_text(), (
        f"rendered HIP for {key} differs from {path}; if intended, regenerate with "
        f"GOMPUTE_UPDATE_GOLDEN=1 python -m pytest tests/test_hip_golden.py")


def test_hip_specific_spellings() -> None:
    """The dialect's own pieces: _Float16 conversions for f16, launch bound = block size,
    thread indices read from blockDim/gridDim (never a block-size argument)."""
    half = render(entry("map_f16").spec().lower())
    assert "_Float16" in half and "gp_h2f" in half
    spec = entry("map_bs1024_f32").spec()
    src = render(spec.lower())
    assert f"__launch_bounds__({spec.block_size})" in src
    assert "blockDim.x" in src and "gridDim.x" in src
    assert "_Float16" not in render(entry("map_f32").spec().lower())

"""A kernel whose name the target reserves gets a deterministic entry symbol (``_``
appended), which the artifact records, so the loader finds what the compiler built."""

from __future__ import annotations

import io

import pytest

pytest.importorskip("gompute_cuda")
pytest.importorskip("elftools")

from elftools.elf.elffile import ELFFile  # noqa: E402

import gompute_core as g  # noqa: E402
from gompute_core.errors import BackendUnavailable  # noqa: E402


def twice(x):
    return x * 2


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GOMPUTE_CACHE_DIR", str(tmp_path))


def test_cuda_artifact_names_the_mangled_entry_symbol() -> None:
    from gompute_cuda.nvrtc import load_nvrtc

    try:
        load_nvrtc()
    except BackendUnavailable as exc:
        pytest.skip(f"NVRTC unavailable: {exc}")
    spec = g.map("nullptr", g.f32, None, twice)  # a C++ keyword, valid as a spec name
    art = g.compile(spec, "cuda", arch="sm_90")
    assert art.entry == "nullptr_"
    elf = ELFFile(io.BytesIO(art.image))
    funcs = {s.name for s in elf.get_section_by_name(".symtab").iter_symbols()
             if s["st_info"]["type"] == "STT_FUNC"}
    assert art.entry in funcs


def test_hip_artifact_entry_is_the_dialect_symbol() -> None:
    renderer = pytest.importorskip("gompute_hip.renderer")
    kir = g.map("constexpr", g.f32, None, twice).lower()
    src = renderer.render(kir)
    assert renderer.HIPRenderer().entry_symbol(kir) == "constexpr_"
    assert "constexpr_(float* __restrict__ data, gp_u64 n)" in src

"""Every conformance kernel renders and compiles with NVRTC for sm_80 and sm_90 (no GPU),
and each cubin says what the C ABI promises: the entry symbol, the target SM, and the
kernel parameter layout (pointers and counts, then the params struct at its alignment)
equal to the buffer the launch path packs. The params ``static_assert``s are real: a
layout that disagrees with the C struct fails to compile.
"""

from __future__ import annotations

import io
import struct
from dataclasses import replace

import pytest

pytest.importorskip("gompute_cuda")
pytest.importorskip("elftools")

from elftools.elf.elffile import ELFFile  # noqa: E402
from gompute_cuda.compiler import CudaCompiler  # noqa: E402

import gompute_core as g  # noqa: E402
from gompute_core.abi.layout import FieldLayout  # noqa: E402
from gompute_core.backend import arg_layout  # noqa: E402
from gompute_core.compilation import compile_kernel  # noqa: E402
from gompute_core.errors import BackendUnavailable, CompileFailed, InvalidArgument  # noqa: E402
from gompute_core.ir.nodes import StructType  # noqa: E402
from gompute_core.testing.catalogue import entries  # noqa: E402

ARCHS = ("sm_80", "sm_90")
KEYS = sorted(entries())
EIATTR_KPARAM_INFO = 0x17


def _nvrtc_or_skip() -> None:
    from gompute_cuda.nvrtc import load_nvrtc

    try:
        load_nvrtc()
    except BackendUnavailable as exc:
        pytest.skip(f"NVRTC unavailable: {exc}")


def kernel_params(image: bytes, name: str) -> list[tuple[int, int, int]]:
    """``(ordinal, offset, size)`` of each kernel parameter, from ``.nv.info.<name>``."""
    elf = ELFFile(io.BytesIO(image))
    data = elf.get_section_by_name(f".nv.info.{name}").data()
    out, i = [], 0
    while i + 4 <= len(data):
        fmt, attr, size = data[i], data[i + 1], struct.unpack_from("<H", data, i + 2)[0]
        if fmt != 0x04:  # only EIFMT_SVAL carries a length; the others are fixed
            i += 4 if fmt in (0x03, 0x02) else 2
            continue
        if attr == EIATTR_KPARAM_INFO:
            _, ordinal, offset, flags = struct.unpack_from("<IHHI", data, i + 4)
            out.append((ordinal, offset, (flags >> 18) & 0x3FFF))
        i += 4 + size
    return sorted(out)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GOMPUTE_CACHE_DIR", str(tmp_path))


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("key", KEYS)
def test_conformance_kernel_compiles_with_the_launch_abi(key: str, arch: str) -> None:
    _nvrtc_or_skip()
    spec = entries()[key].spec()
    kir = spec.lower()
    art = g.compile(spec, "cuda", arch=arch)
    assert (art.backend, art.format, art.entry, art.target) == ("cuda", "cubin", spec.name, arch)
    assert art.digest == kir.digest() and art.kind == kir.kind
    elf = ELFFile(io.BytesIO(art.image))
    assert (elf["e_flags"] >> 8) & 0xFF == int(arch[3:])
    funcs = {s.name for s in elf.get_section_by_name(".symtab").iter_symbols()
             if s["st_info"]["type"] == "STT_FUNC"}
    assert spec.name in funcs
    layout = arg_layout(kir)
    want = [(i, slot.offset, slot.size) for i, slot in enumerate(layout.slots)]
    assert kernel_params(art.image, spec.name) == want
    assert max(o + s for _, o, s in want) == layout.size
    if kir.params is not None and kir.params.layout.fields:
        assert "static_assert(" in art.source


def test_static_asserts_reject_a_layout_the_c_struct_disagrees_with() -> None:
    _nvrtc_or_skip()
    kir = entries()["map_affine_f32"].spec().lower() if "map_affine_f32" in entries() else \
        next(e.spec().lower() for e in entries().values()
             if e.spec().lower().params is not None
             and len(e.spec().lower().params.layout.fields) > 1)
    lay = kir.params.layout
    f1 = lay.fields[1]
    bad = replace(lay, fields=(lay.fields[0], FieldLayout(f1.name, f1.offset + 4, f1.type),
                               *lay.fields[2:]), size=lay.size + 8)
    bad_kir = replace(kir, params=StructType(kir.params.name, bad))
    with pytest.raises(CompileFailed, match="params ABI"):
        compile_kernel(CudaCompiler(), bad_kir, "sm_90")


@g.params
class CcEmpty:
    pass


def cc_inc(x, p: CcEmpty):
    return x + 1


def test_a_kernel_with_an_empty_params_class_compiles_without_a_params_argument() -> None:
    _nvrtc_or_skip()
    spec = g.map("cc_inc_empty_params", g.f32, CcEmpty, cc_inc)
    art = g.compile(spec, "cuda", arch="sm_90")
    layout = arg_layout(spec.lower())
    assert layout.params_offset == -1
    assert kernel_params(art.image, spec.name) == [(i, 8 * i, 8) for i in range(len(layout.slots))]


def test_compile_errors_are_typed() -> None:
    _nvrtc_or_skip()
    spec = entries()[KEYS[0]].spec()
    with pytest.raises(InvalidArgument):
        g.compile(spec, "cuda", arch="gfx90a")
    with pytest.raises(InvalidArgument):
        g.compile(spec, "cuda", arch="sm_20")


def test_disk_cache_serves_a_second_compile(tmp_path) -> None:
    _nvrtc_or_skip()
    kir = entries()[KEYS[0]].spec().lower()
    first = compile_kernel(CudaCompiler(), kir, "sm_90")  # a fresh memory level each call
    files = list((tmp_path / "cuda").glob("*.gca"))
    assert len(files) == 1
    again = compile_kernel(CudaCompiler(), kir, "sm_90")
    assert again == first


def test_nvcc_fallback_builds_the_same_kernel(tmp_path) -> None:
    from gompute_cuda.compiler import DEFAULT_OPTIONS, _nvcc_compile, find_nvcc
    from gompute_cuda.renderer import CUDARenderer

    nvcc = find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not found")
    spec = entries()[KEYS[0]].spec()
    image, target = _nvcc_compile(nvcc, CUDARenderer().render(spec.lower()), spec.name, 90,
                                  DEFAULT_OPTIONS)
    assert target == "sm_90" and image[:4] == b"\x7fELF"
    assert spec.name in {s.name for s in ELFFile(io.BytesIO(image))
                         .get_section_by_name(".symtab").iter_symbols()}


def test_compile_without_arch_takes_the_device_arch_or_says_why() -> None:
    from gompute_core.plugins import manager

    spec = entries()[KEYS[0]].spec()
    avail = manager.probe("cuda")
    if avail.devices:
        assert g.compile(spec, "cuda").target == avail.devices[0].arch
    else:
        with pytest.raises(g.BackendUnavailable, match="no arch given and no cuda device"):
            g.compile(spec, "cuda")

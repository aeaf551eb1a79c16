"""Every conformance kernel compiles with hiprtc for gfx90a and gfx1030, and the code
object says what the C ABI promises: the entry point in the symbol table and in
the kernel metadata, the kernarg layout (params ABI + pointers + counts) equal to
the one the launch packs, the block size as the launch bound, the right target.

Needs hiprtc (``backends/hip/install-rocm.sh``); no GPU.
"""

from __future__ import annotations

import pytest

pytest.importorskip("gompute_hip")
pytest.importorskip("elftools")

import gompute_core as g  # noqa: E402
from gompute_core.backend import arg_layout  # noqa: E402
from gompute_core.errors import BackendUnavailable  # noqa: E402
from gompute_core.testing.catalogue import entries  # noqa: E402

ARCHS = ("gfx90a", "gfx1030")
KEYS = sorted(entries())


def _hiprtc_or_skip() -> None:
    from gompute_hip import libs

    try:
        libs.hiprtc()
    except BackendUnavailable as exc:
        pytest.skip(f"hiprtc unavailable: {exc}")


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("key", KEYS)
def test_conformance_kernel_compiles_to_inspectable_code_object(key: str, arch: str) -> None:
    _hiprtc_or_skip()
    from amdgpu_codeobject import read_code_object

    spec = entries()[key].spec()
    kir = spec.lower()
    art = g.compile(spec, "hip", arch=arch)
    assert (art.backend, art.format, art.entry, art.target) == ("hip", "hsaco", spec.name, arch)
    assert art.digest == kir.digest()

    co = read_code_object(art.image)
    assert co.target == f"amdgcn-amd-amdhsa--{arch}"
    assert spec.name in co.functions
    assert f"{spec.name}.kd" in co.objects
    meta = co.kernel(spec.name)
    assert meta.symbol == f"{spec.name}.kd"
    assert meta.max_flat_workgroup_size == spec.block_size

    layout = arg_layout(kir)
    explicit = meta.explicit_args
    assert [(a.offset, a.size) for a in explicit] == [(s.offset, s.size) for s in layout.slots]
    for arg, slot in zip(explicit, layout.slots, strict=True):
        expected = "global_buffer" if slot.kind == "pointer" else "by_value"
        assert arg.value_kind == expected, (slot.name, arg)
    if kir.params is not None and kir.params.layout.size > 0:
        assert layout.slots[-1].size == kir.params.layout.size
    # hidden arguments (if this code-object version lists any) follow the explicit ones;
    # LLVM rounds the segment up to a dword
    end = max((a.offset + a.size for a in meta.args), default=0)
    assert meta.kernarg_segment_size == -(-end // 4) * 4
    assert all(a.offset >= layout.size for a in meta.args if a.hidden)
    if not any(a.hidden for a in meta.args):
        assert meta.kernarg_segment_size == layout.padded_size(4)

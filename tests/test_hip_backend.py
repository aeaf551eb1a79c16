"""The HIP backend without an AMD GPU: it imports, reports why it cannot run, validates
targets against the installed compiler before hiprtc can abort the process, compiles,
and ``AutoKernel`` falls through to the next backend silently.
"""

from __future__ import annotations

import struct
import subprocess
import sys
import warnings

import numpy as np
import pytest

pytest.importorskip("gompute_hip")

from amdgpu_codeobject import read_code_object  # noqa: E402
from gompute_hip import libs  # noqa: E402

import gompute_core as g  # noqa: E402
from gompute_core.errors import BackendUnavailable, InvalidArgument  # noqa: E402
from gompute_core.ir.kernel import RAW  # noqa: E402
from gompute_core.kinds import kind_names  # noqa: E402
from gompute_core.kinds.support import supported_kinds  # noqa: E402
from gompute_core.plugins import manager  # noqa: E402
from gompute_core.testing.catalogue import entry  # noqa: E402


def _need_hiprtc() -> None:
    try:
        libs.hiprtc()
    except BackendUnavailable as exc:
        pytest.skip(f"hiprtc unavailable: {exc}")


def _need_no_amd_gpu() -> None:
    if manager.probe("hip").available:
        pytest.skip("an AMD GPU is present: the no-GPU behaviour cannot be observed")


def test_package_imports_without_loading_hip() -> None:
    code = ("import sys, gompute_hip, gompute_hip.plugin; "
            "print(any(m.startswith('hip.') or m == 'hip' for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_backend_info() -> None:
    rec = manager.record("hip")
    assert rec.loaded, rec.error
    assert rec.info.priority == 200
    assert set(supported_kinds(rec.info)) == {*kind_names(), RAW} and \
        rec.info.unsupported_types == ()


def test_probe_says_why_unavailable() -> None:
    _need_no_amd_gpu()
    avail = manager.probe("hip")
    assert not avail.available
    assert avail.reason.startswith("no AMD GPU (hipInit: ") or "not found" in avail.reason \
        or "hip-python" in avail.reason
    if avail.reason.startswith("no AMD GPU"):
        assert avail.compiler.startswith("hiprtc")


def test_missing_library_is_named_with_every_place_searched() -> None:
    found = libs.find_library("libhiprtc_absent_for_test.so")
    assert found.path is None
    msg = found.describe_missing()
    assert msg.startswith("libhiprtc_absent_for_test.so not found (looked in ")
    assert "gompute-hip" in msg and "/opt/rocm/lib" in msg and "<system linker path>" in msg


def test_supported_targets_come_from_the_compiler() -> None:
    _need_hiprtc()
    from gompute_hip.targets import supported_targets, validate_target

    targets = supported_targets()
    assert {"gfx90a", "gfx1030"} <= set(targets)
    for arch in ("gfx90a", "gfx1030", "gfx90a:xnack-", "gfx90a:sramecc+:xnack-"):
        assert validate_target(arch) == arch


@pytest.mark.parametrize("arch", ["gfx1100", "gfx942", "gfx9999", "sm_90", "", "gfx90a:foo+"])
def test_unknown_target_is_invalid_argument_not_a_crash(arch: str) -> None:
    _need_hiprtc()
    from gompute_hip.targets import supported_targets

    # in a subprocess: were the check missing, ROCm 5.2's hiprtc would abort the process
    code = ("import gompute_core as g\n"
            "from gompute_core.testing.catalogue import entry\n"
            "try:\n"
            f"    g.compile(entry('map_f32').spec(), 'hip', arch={arch!r})\n"
            "except g.InvalidArgument as e:\n"
            "    print('InvalidArgument:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("InvalidArgument:")
    if arch in ("gfx1100", "gfx942") and arch not in supported_targets():
        assert "supported targets: " in out.stdout and "gfx90a" in out.stdout


def test_compile_without_arch_and_without_gpu_says_how_to_pin_it() -> None:
    _need_hiprtc()
    _need_no_amd_gpu()
    with pytest.raises(BackendUnavailable, match="arch='gfx90a'"):
        g.compile(entry("map_f32").spec(), "hip")


def test_compile_failure_carries_the_log() -> None:
    _need_hiprtc()
    from gompute_hip.compiler import compile_source

    with pytest.raises(g.CompileFailed, match="expected expression"):
        compile_source("int x = ;\n", "broken", "gfx90a")


def test_second_compile_is_a_cache_hit(tmp_path, monkeypatch) -> None:
    _need_hiprtc()
    monkeypatch.setenv("GOMPUTE_CACHE_DIR", str(tmp_path))
    code = ("import time, gompute_core as g\n"
            "from gompute_core.testing.catalogue import entry\n"
            "a = g.compile(entry('zip_f32').spec(), 'hip', arch='gfx1030')\n"
            "print(a.image.hex()[:64], len(a.image))\n")
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout
    files = list((tmp_path / "hip").glob("*.gca"))
    assert len(files) == 1
    mtime = files[0].stat().st_mtime_ns
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout
    assert first == second and files[0].stat().st_mtime_ns == mtime


def test_autokernel_falls_through_silently() -> None:
    _need_no_amd_gpu()
    if manager.probe("cuda").available or not manager.probe("cpu").available:
        pytest.skip("needs a machine where the CPU backend is the first available one")
    spec = entry("map_f32").spec()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        k = g.AutoKernel(spec)
    try:
        assert k.selected() == "cpu"
    finally:
        k.close()


# ---- the code-object reader ---------------------------------------------------------
def test_corrupt_metadata_note_is_invalid_argument() -> None:
    """The note's MessagePack is decoded by ``msgpack``; its errors become InvalidArgument."""
    _need_hiprtc()
    import io

    from elftools.elf.elffile import ELFFile

    image = bytearray(g.compile(entry("map_f32").spec(), "hip", arch="gfx90a").image)
    assert read_code_object(bytes(image)).kernels  # the intact note decodes
    elf = ELFFile(io.BytesIO(bytes(image)))
    note = next(n for s in elf.iter_sections() if s["sh_type"] == "SHT_NOTE"
                for n in s.iter_notes() if n["n_name"] == "AMDGPU" and n["n_type"] == 32)
    desc_at = note["n_offset"] + 12 + -(-note["n_namesz"] // 4) * 4  # header, padded name
    assert image[desc_at] == note["n_descdata"][0]
    image[desc_at] = 0xC1  # the one type byte MessagePack never uses
    with pytest.raises(InvalidArgument, match="not valid MessagePack"):
        read_code_object(bytes(image))


def test_reader_rejects_what_is_not_an_amdgpu_code_object() -> None:
    with pytest.raises(InvalidArgument, match="not an ELF"):
        read_code_object(b"definitely not an ELF file")
    with open(sys.executable, "rb") as f:
        host_elf = f.read()
    with pytest.raises(InvalidArgument, match="not an AMDGPU code object"):
        read_code_object(host_elf)


def test_argument_buffer_places_the_packed_params() -> None:
    from gompute_core.abi import pack
    from gompute_core.backend import ArgBuffer, arg_layout

    e = entry("map_f32")
    kir = e.spec().lower()
    layout = arg_layout(kir)
    assert [s.kind for s in layout.slots] == ["pointer", "scalar", "params"]
    p_slot = layout.slots[-1]
    assert p_slot.offset % kir.params.layout.align == 0
    assert p_slot.size == kir.params.layout.size
    p = e.params(a=np.float32(2.5), b=np.float32(-3))
    args = ArgBuffer(layout)
    args.pack(0x1122334455667788, 99)
    args.set_params(pack(p))
    packed = bytes(args.data[:layout.size])
    assert packed[:16] == struct.pack("<QQ", 0x1122334455667788, 99)
    assert packed[p_slot.offset:p_slot.offset + 8] == struct.pack("<ff", 2.5, -3.0)


def test_runtime_older_than_hip_python_is_reported_not_a_segfault() -> None:
    """hip-python 6.x resolves hipGetDevicePropertiesR0600; ROCm 5.2 lacks it, and calling
    through the NULL pointer would crash: the backend checks the export first."""
    try:
        libs.hip()
    except BackendUnavailable as exc:
        pytest.skip(str(exc))
    libs.require_hip_symbol("hipMalloc")
    from gompute_hip.compiler import compiler_version

    if not libs.hip_python_version().startswith("6.2.") or "HIP 5.2." not in compiler_version():
        pytest.skip("the mismatch is specific to hip-python 6.2 on ROCm 5.2")
    with pytest.raises(BackendUnavailable, match="hipGetDevicePropertiesR0600"):
        libs.require_hip_symbol("hipGetDevicePropertiesR0600")

"""The hip_on_cuda fixture without a GPU: it builds warning-free, exports every HIP,
hiprtc and comgr function ``gompute_hip`` calls (under hip-python's C symbols), lays out
``hipDeviceProp_tR0600`` and numbers its enums as hip-python 6.2 does, and its hiprtc
compiles every conformance kernel through ``gompute_hip``'s own compiler. The runtime
half runs on an NVIDIA GPU (``tests/hip_on_cuda/run.sh``).
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("gompute_hip")
pytest.importorskip("hip")

from hip_on_cuda import fixture  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEVICE_ARCH = "gfx942:sramecc+:xnack-"  # what the fixture's H100/H200 reports


@pytest.fixture(scope="module")
def libdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture, built once for this module (skip where it cannot be built)."""
    reason = fixture.build_prerequisites_missing()
    if reason:
        pytest.skip(f"cannot build the hip_on_cuda fixture: {reason}")
    return fixture.build(tmp_path_factory.mktemp("hip_on_cuda"))


def _run_selected(libdir: Path, code: str, tmp_path: Path) -> str:
    """Run ``code`` in a fresh interpreter with the fixture selected; its stdout."""
    env = dict(os.environ, GOMPUTE_HIP_LIBDIR=str(libdir), GOMPUTE_CACHE_DIR=str(tmp_path))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests"), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_exports_exactly_what_gompute_hip_calls_plus_the_error_strings(libdir: Path) -> None:
    assert fixture.missing_functions(libdir) == []
    required = fixture.required_symbols(fixture.gompute_hip_sources())
    assert "hipGetDevicePropertiesR0600" in required[fixture.HIP_LIB]  # hip-python 6.2's name
    for lib in (fixture.HIP_LIB, fixture.HIPRTC_LIB):
        assert fixture.exported_functions(libdir / lib) == \
            set(required[lib]) | fixture.EXTRAS[lib], lib
    assert fixture.exported_functions(libdir / fixture.COMGR_LIB) == fixture.COMGR_FUNCTIONS


def test_a_new_hip_call_in_gompute_hip_is_named_as_missing(libdir: Path) -> None:
    sources = dict(fixture.gompute_hip_sources())
    sources["runtime/peer.py"] = "def copy(hip):\n    return hip.hipMemcpyPeer(1, 0, 2, 1, 8)\n"
    assert fixture.missing_functions(libdir, sources) == \
        ["libamdhip64.so lacks hipMemcpyPeer (called at runtime/peer.py:2)"]
    with pytest.raises(fixture.FixtureError, match="does not exist"):
        fixture.select(libdir / "absent")


def test_abi_tables_match_hip_python(libdir: Path) -> None:
    from hip import hip

    tables = json.loads(subprocess.run([str(libdir / "hipf_layout")], capture_output=True,
                                       text=True, check=True).stdout)
    props = hip.hipDeviceProp_t()
    layout = tables["hipDeviceProp_tR0600"]
    assert layout["size"] == props.c_sizeof()
    assert list(layout["fields"]) == props.PROPERTIES()
    # hip-python reads each field where the fixture writes it: a marker put at the
    # fixture's offset is what hip-python's getter returns
    base, marker = int(props), 0x01234567
    ctypes.memset(base, 0, layout["size"])
    for name, offset in layout["fields"].items():
        ctypes.c_uint32.from_address(base + offset).value = marker
        value = getattr(props, name)
        ctypes.c_uint32.from_address(base + offset).value = 0
        if isinstance(value, bytes):
            assert value == marker.to_bytes(4, "little"), name
        elif isinstance(value, list):
            assert value[0] == marker, name
        elif isinstance(value, int):
            assert value == marker, name
        # nested structs (uuid, arch) and pointers: the fields after them pin them down
    for enum in ("hipError_t", "hipDeviceAttribute_t"):
        assert tables[enum] == {n: getattr(hip, enum)[n].value for n in tables[enum]}, enum
    assert {gfx for gfx, *_ in tables["archs"]} >= {"gfx90a", "gfx1030", "gfx942"}


def test_without_a_gpu_the_backend_reports_no_device_and_hip_6_2(libdir: Path,
                                                                 tmp_path: Path) -> None:
    if fixture.cuda_driver_present():
        pytest.skip("a CUDA driver is present: the no-GPU answer cannot be observed")
    out = _run_selected(libdir, """
import ctypes, os
from gompute_core.plugins import manager
from gompute_hip import libs
from gompute_hip.targets import supported_targets
from hip_on_cuda.fixture import check_selected
check_selected(os.environ["GOMPUTE_HIP_LIBDIR"])
avail = manager.probe("hip")
print(avail.available, avail.reason, avail.compiler, sep="|")
print(",".join(supported_targets()))
name = ctypes.CDLL(libs.find_library(libs.HIP_LIB).path).hipGetErrorName
name.restype = ctypes.c_char_p
print(name(101).decode(), name(12345).decode())
""", tmp_path)
    probe, targets, names = out.splitlines()
    assert probe == "False|no AMD GPU (hipInit: 100)|hiprtc (HIP 6.2.0, comgr 2.8)"
    assert targets.split(",") == [gfx for gfx, *_ in json.loads(subprocess.run(
        [str(libdir / "hipf_layout")], capture_output=True, text=True).stdout)["archs"]]
    assert names == "hipErrorInvalidDevice hipErrorUnknown"


def test_every_conformance_kernel_compiles_through_the_fixture_hiprtc(libdir: Path,
                                                                      tmp_path: Path) -> None:
    """gompute_hip's own compiler (target check, options, hiprtc calls, cache) on the
    fixture: a code object naming the gfx target, around a cubin holding the entry point."""
    out = _run_selected(libdir, f"""
import io
import gompute_core as g
from elftools.elf.elffile import ELFFile
from amdgpu_codeobject import read_code_object
from gompute_core.testing.catalogue import entries
for key, e in sorted(entries().items()):
    for arch in ({DEVICE_ARCH!r}, "gfx1030") if key.startswith("rsum") else ({DEVICE_ARCH!r},):
        art = g.compile(e.spec(), "hip", arch=arch)
        assert read_code_object(art.image).target == "amdgcn-amd-amdhsa--" + arch, key
        section = ELFFile(io.BytesIO(art.image)).get_section_by_name(".hip_on_cuda.cubin")
        cubin = ELFFile(io.BytesIO(section.data()))
        assert cubin.header.e_machine == "EM_CUDA", key
        symbols = {{s.name for s in cubin.get_section_by_name(".symtab").iter_symbols()}}
        assert art.entry in symbols, (key, art.entry)
        print(key, arch, cubin.header.e_flags >> 8 & 0xFF)
""", tmp_path)
    lines = out.splitlines()
    from gompute_core.testing.catalogue import entries

    assert len({line.split()[0] for line in lines}) == len(entries())
    # the cubin's e_flags carry the SM (bits 8-15 in CUDA 13's ELF ABI): sm_90 for gfx942,
    # sm_86 for gfx1030
    assert {line.split(" ", 1)[1] for line in lines} == {f"{DEVICE_ARCH} 90", "gfx1030 86"}


def test_hiprtc_log_names_the_untranslated_option_and_user_lines(libdir: Path,
                                                                tmp_path: Path) -> None:
    out = _run_selected(libdir, f"""
from gompute_core.errors import CompileFailed
from gompute_hip.compiler import compile_source
for source, options in (("extern \\"C\\" __global__ void k() {{}}\\n", ("-mcumode",)),
                        ("\\nextern \\"C\\" __global__ void k() {{ nope; }}\\n", ())):
    try:
        compile_source(source, "probe", {DEVICE_ARCH!r}, options)
    except CompileFailed as exc:
        print(repr(str(exc)))
""", tmp_path)
    bad_option, bad_source = out.splitlines()
    assert "HIPRTC_ERROR_INVALID_OPTION" in bad_option and "'-mcumode'" in bad_option
    assert "HIPRTC_ERROR_COMPILATION" in bad_source and "probe.hip(2)" in bad_source


def test_module_load_refuses_what_its_hiprtc_did_not_make(libdir: Path) -> None:
    """hipModuleLoadData: any other ELF is hipErrorInvalidImage, before the driver."""
    hip = ctypes.CDLL(str(libdir / fixture.HIP_LIB))
    module = ctypes.c_void_p()
    assert hip.hipModuleLoadData(ctypes.byref(module), Path(sys.executable).read_bytes()) == 200

"""The ``gompute`` command against an empty registry and the in-process test backend."""

from __future__ import annotations

import importlib.metadata as metadata
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pybackend import PyBackend

from gompute_core.cli import main
from gompute_core.plugins import manager
from gompute_core.plugins.records import PLUGIN_API_VERSION


@pytest.fixture()
def empty(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(manager.ENV_BACKENDS, raising=False)
    with manager.isolated():
        yield


def test_info_without_backends(empty: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert f"plugin API {PLUGIN_API_VERSION}" in out
    assert "no backends installed" in out
    assert "pip install gompute-cpu" in out


def test_info_lists_backends(empty: None, capsys: pytest.CaptureFixture[str]) -> None:
    manager.register(PyBackend("pytest", priority=100))
    manager.register(PyBackend("gpuish", priority=300, available=False,
                               reason="libcuda.so.1 not found"))
    manager.load_entry_point(metadata.EntryPoint(
        name="broken", value="gompute_missing_backend_xyz:plugin",
        group=manager.ENTRY_POINT_GROUP))
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert out.index("gpuish:") < out.index("pytest:")
    assert f"pytest: version 0.0.test, plugin API {PLUGIN_API_VERSION}, priority 100" in out
    assert "available: yes" in out and "device 0: python (arch py1)" in out
    assert "compiler: python" in out
    assert "available: no (libcuda.so.1 not found)" in out
    assert "broken: FAILED TO LOAD" in out
    assert "ModuleNotFoundError: No module named 'gompute_missing_backend_xyz'" in out


def test_doctor_passes_on_a_correct_backend(empty: None,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    manager.register(PyBackend("pytest"))
    manager.register(PyBackend("gpuish", available=False, reason="no driver"))
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "gpuish: SKIP (unavailable: no driver)" in out
    assert "PASS  map 2x+1" in out and "PASS  sum" in out
    assert "all checks passed" in out


def test_doctor_fails_on_a_broken_compiler(empty: None,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    manager.register(PyBackend("pytest", compile_error="compiler crashed"))
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  CompileFailed: compiler crashed" in out


def test_doctor_prints_a_backends_warnings(empty: None,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A backend's known hazards (its probe's ``warnings``) are printed under its name; the
    checks still run and decide the verdict."""
    manager.register(PyBackend("pytest", warnings=("this compiler drops signs",)))
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "pytest:\n  WARN  python: this compiler drops signs\n" in out
    assert "PASS  sum" in out


def test_doctor_warns_about_nvrtc_13_0_only() -> None:
    """The CUDA backend's NVRTC version logic (no GPU needed): 13.0 has the neg.s16 and
    abs.s32 hazards and names the fix; 12.x, 13.1 and 13.5 have none."""
    compiler = pytest.importorskip("gompute_cuda.compiler")
    (hazard,) = compiler.nvrtc_hazards((13, 0))
    assert "neg.s16" in hazard and "abs.s32" in hazard and "nvidia-cuda-nvrtc" in hazard
    for good in ((12, 8), (13, 1), (13, 5)):
        assert compiler.nvrtc_hazards(good) == ()


def test_doctor_without_backends(empty: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor"]) == 1
    assert "no available backend" in capsys.readouterr().out


def test_demo_runs_on_the_default_backend(empty: None,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    manager.register(PyBackend("pytest"))
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "backend: pytest (AutoKernel)" in out
    assert out.count("PASS") == 5
    assert "[40., 10., -1., -1., 30.]" in out


def test_build_writes_artifacts(empty: None, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    manager.register(PyBackend("pytest", available=False, reason="no device"))
    kernels = tmp_path / "kernels.py"
    kernels.write_text(
        "import gompute_core as g\n"
        "def inc(x):\n    return x + 1\n"
        "inc_k = g.map('cli_build_inc', g.i32, None, inc)\n"
        "total = g.sum('cli_build_total', g.f32)\n"
        "alias = total\n")
    out_dir = tmp_path / "artifacts"
    assert main(["build", str(kernels), "--backend", "pytest", "--arch", "py7",
                 "-o", str(out_dir)]) == 0
    assert "wrote 2 artifact(s)" in capsys.readouterr().out
    manifest = json.loads((out_dir / "cli_build_inc.pytest.py7.json").read_text())
    assert manifest["entry"] == "cli_build_inc" and manifest["target"] == "py7"
    assert manifest["kind"] == "map" and manifest["format"] == "py"
    assert (out_dir / manifest["image"]).is_file()


def test_build_errors(empty: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", str(tmp_path / "none.py"), "--backend", "x", "-o", "o"]) == 2
    empty_file = tmp_path / "nothing.py"
    empty_file.write_text("x = 1\n")
    assert main(["build", str(empty_file), "--backend", "x", "-o", str(tmp_path)]) == 1
    assert "defines no spec" in capsys.readouterr().err


def test_bench_runs_the_repository_script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capfd: pytest.CaptureFixture[str]) -> None:
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "hip.py").write_text("import sys\nprint('bench args', sys.argv[1:])\n"
                                  "sys.exit(3)\n")
    monkeypatch.chdir(tmp_path)
    assert main(["bench", "hip", "--size", "10"]) == 3
    out = capfd.readouterr().out
    assert f"running {bench / 'hip.py'}" in out
    assert "bench args ['--size', '10']" in out


def test_build_raw_kernels_plain_and_checked(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """``gompute build`` on a file with a raw kernel and a spec (the CPU backend, for real):
    plain, both are built; ``--checked``, the raw kernel is built checked beside the plain
    one (its manifest says so and lists its fault sites) and the spec is skipped."""
    pytest.importorskip("gompute_cpu")
    kernels = tmp_path / "raw_kernels.py"
    kernels.write_text(
        "import gompute_core as g\n"
        "@g.raw_kernel(block=64)\n"
        "def cli_build_raw_inc(a: g.GlobalPtr[g.f32], n: g.u64):\n"
        "    i = g.builtins.global_id(0)\n"
        "    if i < n:\n"
        "        a[i] += 1\n"
        "def inc(x):\n    return x + 1\n"
        "spec = g.map('cli_build_raw_spec', g.f32, None, inc)\n")
    out_dir = tmp_path / "artifacts"
    assert main(["build", str(kernels), "--backend", "cpu", "-o", str(out_dir)]) == 0
    assert "wrote 2 artifact(s)" in capsys.readouterr().out
    assert main(["build", str(kernels), "--backend", "cpu", "--checked", "-o",
                 str(out_dir)]) == 0
    out = capsys.readouterr().out
    assert "cli_build_raw_spec: skipped (--checked" in out and "wrote 1 artifact(s)" in out
    plain = [json.loads(p.read_text()) for p in out_dir.glob("cli_build_raw_inc.cpu.*.json")]
    checked = [json.loads(p.read_text())
               for p in out_dir.glob("cli_build_raw_inc.checked.cpu.*.json")]
    assert len(plain) == 1 and len(checked) == 1
    assert plain[0]["checked"] is None
    sites = checked[0]["checked"]["sites"]
    # each site: [access, array, where, shape]
    assert {s[1] for s in sites} == {"a"} and all(s[2].endswith(":6") for s in sites)

"""Checked mode ahead of time: ``g.compile(..., checked=True)``, its artifact and manifest,
and the loaders that pick (or refuse) it by name, on the CPU backend.

A kernel loaded by name must not be defined in the loading process, so the launches by
name run in a subprocess (:func:`load_by_name`); the oracle is NumPy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import gompute_core as g
from gompute_core.errors import InvalidArgument, Unsupported
from gompute_core.runtime.compile import build, find_prebuilt_raw, write_artifact
from gompute_core.testing._support import marked_line

B = g.builtins
HERE = Path(__file__).resolve()
N = 8


@g.raw_kernel
def aot_shift_read(src: g.GlobalPtr[g.f32], dst: g.GlobalPtr[g.f32], n: g.u64, shift: g.i64):
    i = B.global_id(0)
    if i < n:
        dst[i] = src[i + shift]  # aot read


def line_of(marker: str) -> str:
    """``file:line`` of the line of this file that ends with ``# <marker>``."""
    return marked_line(HERE, marker)


def oracle(shift: int) -> np.ndarray:
    """``dst`` after one launch of N threads: ``src[i + shift]``, 0 where out of bounds."""
    src = np.arange(N, dtype=np.float32)
    return np.array([src[i + shift] if 0 <= i + shift < N else 0 for i in range(N)],
                    np.float32)


LOADER = """
import json, sys
import numpy as np
import gompute_core as g
directory, checked, shift = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
result = {}
try:
    k = g.raw_kernel_by_name("cpu", "aot_shift_read", artifact_dir=directory, checked=checked)
    result["checked"] = k.checked
    src = k.alloc(8, g.f32); src.upload(np.arange(8, dtype=np.float32))
    dst = k.alloc(8, g.f32); dst.fill(0)
    k.launch(1, 8, [src, dst, np.uint64(8), np.int64(shift)])
    try:
        k.synchronize()
    except g.errors.OutOfBounds as exc:
        result["fault"] = [exc.array, exc.index, exc.extent, exc.where, exc.access]
    out = np.zeros(8, np.float32); dst.download(out); result["out"] = out.tolist()
except g.errors.GomputeError as exc:
    result["error"] = [type(exc).__name__, str(exc)]
print(json.dumps(result))
"""


def load_by_name(directory: Path, checked: bool | None, shift: int) -> dict[str, object]:
    """Load ``aot_shift_read`` by name from ``directory`` in a fresh process (where it is
    not defined), launch it once with ``shift``, and return what happened."""
    env = {k: v for k, v in os.environ.items() if k != "GOMPUTE_CHECKED"}
    run = subprocess.run([sys.executable, "-c", LOADER, str(directory), json.dumps(checked),
                          str(shift)], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def write(directory: Path, checked: bool) -> Path:
    """Compile ``aot_shift_read`` for the CPU (checked or not) and write it to
    ``directory``; the manifest's path."""
    arch = g.RawKernel(aot_shift_read, "cpu").device.arch
    built = build(aot_shift_read, "cpu", arch, checked=checked)
    return write_artifact(directory, built.artifact, aot_shift_read.lower(), (),
                          built.checked)


def test_checked_artifact_round_trip_reports_the_fault(tmp_path: Path) -> None:
    unchecked, checked = write(tmp_path, False), write(tmp_path, True)
    assert unchecked != checked  # both coexist
    manifest = json.loads(checked.read_text())
    assert [s[:3] for s in manifest["checked"]["sites"]] == [
        ["read", "src", line_of("aot read")], ["write", "dst", line_of("aot read")]]
    assert json.loads(unchecked.read_text())["checked"] is None
    got = load_by_name(tmp_path, True, 3)
    assert got["checked"] is True
    assert got["fault"] == ["src", N, N, line_of("aot read"), "read"]
    np.testing.assert_array_equal(np.array(got["out"], np.float32), oracle(3))
    got = load_by_name(tmp_path, True, 0)  # in bounds: no fault, the copy itself
    assert "fault" not in got
    np.testing.assert_array_equal(np.array(got["out"], np.float32), oracle(0))


def test_an_unchecked_load_never_takes_the_checked_artifact(tmp_path: Path) -> None:
    write(tmp_path, True)
    assert load_by_name(tmp_path, False, 0)["error"][0] == "KernelNotFound"
    assert find_prebuilt_raw("aot_shift_read", "cpu", g.RawKernel(
        aot_shift_read, "cpu").device.arch, tmp_path) is None
    write(tmp_path, False)
    got = load_by_name(tmp_path, False, 0)
    assert got["checked"] is False and "fault" not in got
    np.testing.assert_array_equal(np.array(got["out"], np.float32), oracle(0))


def test_checked_load_of_an_unchecked_build_is_refused(tmp_path: Path) -> None:
    write(tmp_path, False)
    kind, message = load_by_name(tmp_path, True, 0)["error"]  # type: ignore[misc]
    assert kind == "Unsupported" and "built unchecked" in message


def test_a_manifest_contradicting_its_name_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, True)
    manifest = json.loads(path.read_text())
    manifest["checked"] = None  # an unchecked-looking entry holding checked code
    path.write_text(json.dumps(manifest))
    arch = g.RawKernel(aot_shift_read, "cpu").device.arch
    with pytest.raises(InvalidArgument, match=str(path.name)):
        find_prebuilt_raw("aot_shift_read", "cpu", arch, tmp_path, checked=True)


def test_a_definition_loaded_checked_uses_the_checked_artifact(tmp_path: Path) -> None:
    write(tmp_path, True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no stale-artifact warning: the digest matches
        k = g.RawKernel(aot_shift_read, "cpu", checked=True, artifact_dir=str(tmp_path))
    assert k.artifact.digest == json.loads(
        (tmp_path / f"aot_shift_read.checked.cpu.{k.device.arch}.json").read_text())["digest"]
    src, dst = k.alloc(N, g.f32), k.alloc(N, g.f32)
    src.upload(np.arange(N, dtype=np.float32))
    k.launch(1, N, [src, dst, np.uint64(N), np.int64(-1)])
    with pytest.raises(g.errors.OutOfBounds) as info:
        k.synchronize()
    assert (info.value.array, info.value.index) == ("src", -1)


def test_compile_checked_refuses_what_it_cannot_instrument() -> None:
    with pytest.raises(InvalidArgument, match="checked must be True or False"):
        g.compile(aot_shift_read, "cpu", arch="host", checked="yes")  # type: ignore[arg-type]
    spec = g.map("aot_double", g.f32, None, lambda x: x * 2)
    with pytest.raises(Unsupported, match="aot_double"):
        g.compile(spec, "cpu", arch="host", checked=True)

"""The CPU backend's on-disk cache heals and protects (real numba, real files, new processes).

Each "later process" is a fresh Python running a map kernel at a serial and a
threaded size; its results are checked against the kernel function run on
NumPy scalars, here in the test process.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gompute_core as g

THRESHOLD = 500
SMALL = np.linspace(-3, 3, 100, dtype=np.float32)
LARGE = np.linspace(-7, 5, 1000, dtype=np.float32)

_CHILD = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    import gompute_core as g

    def affine(x):
        return x * 2.5 + 1.0

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with g.Kernel(g.map("cache_heal", g.f32, None, affine), "cpu") as k:
                small = np.linspace(-3, 3, 100, dtype=np.float32)
                large = np.linspace(-7, 5, 1000, dtype=np.float32)
                k.run(small)
                k.run(large)
                mod = k.program.entry.module
        except g.GomputeError as exc:
            print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
            sys.exit(0)
    stats = {name: [sum(getattr(mod, name).stats.cache_hits.values()),
                    sum(getattr(mod, name).stats.cache_misses.values())]
             for name in ("k_serial", "k_parallel")}
    print(json.dumps({
        "small": small.tolist(), "large": large.tolist(), "stats": stats, "file": mod.__file__,
        "warnings": [str(w.message) for w in caught if issubclass(w.category, g.GomputeWarning)],
    }))
""")


def affine(x: Any) -> Any:
    """The kernel function, run here on NumPy scalars as the oracle."""
    return x * 2.5 + 1.0


def _oracle(data: np.ndarray) -> np.ndarray:
    return np.array([affine(v) for v in data], np.float32)


class Plant:
    """Unpickling this creates a directory: proof that a cache file's code ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return os.mkdir, (self.marker,)


def run_child(tmp_path: Path, cache: Path, refused: bool = False, **env: str) -> dict[str, Any]:
    """Run the kernel in a new process with ``GOMPUTE_CACHE_DIR=cache``; its JSON report,
    results checked against the oracle (or, when ``refused``, the error it reported)."""
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    full_env = dict(os.environ, GOMPUTE_CACHE_DIR=str(cache),
                    GOMPUTE_CPU_PARALLEL_THRESHOLD=str(THRESHOLD), **env)
    proc = subprocess.run([sys.executable, str(script)], env=full_env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    if refused:
        assert "error" in report, report
    else:
        assert "error" not in report, report
        np.testing.assert_array_equal(np.array(report["small"], np.float32), _oracle(SMALL))
        np.testing.assert_array_equal(np.array(report["large"], np.float32), _oracle(LARGE))
    return report


def numba_files(cache: Path, function: str, suffix: str) -> list[Path]:
    """numba's cache files of ``function`` (``k_serial``, ``k_parallel``) with ``suffix``."""
    return sorted((cache / "cpu" / "__pycache__").glob(f"k*.{function}-*{suffix}"))


def warmed(tmp_path: Path) -> Path:
    """A cache after one process compiled and stored both entry points (nothing to warn)."""
    cache = tmp_path / "cache"
    first = run_child(tmp_path, cache)
    assert first["warnings"] == []
    assert first["stats"] == {"k_serial": [0, 1], "k_parallel": [0, 1]}
    assert numba_files(cache, "k_serial", ".nbi") and numba_files(cache, "k_parallel", ".nbc")
    return cache


def assert_healed(tmp_path: Path, cache: Path, damaged: str, report: dict[str, Any]) -> None:
    """``report`` warned once, naming ``damaged``, and recompiled; the next process loads
    everything from disk without a warning."""
    assert len(report["warnings"]) == 1, report["warnings"]
    assert damaged in report["warnings"][0] and "dropped" in report["warnings"][0]
    assert report["stats"]["k_serial"][1] == 1  # recompiled
    again = run_child(tmp_path, cache)
    assert again["warnings"] == []
    assert again["stats"] == {"k_serial": [1, 0], "k_parallel": [1, 0]}


# ------------------------------------------------------------------------------- healing

def test_a_later_process_loads_verified_machine_code(tmp_path: Path) -> None:
    cache = warmed(tmp_path)
    second = run_child(tmp_path, cache)
    assert second["warnings"] == []
    assert second["stats"] == {"k_serial": [1, 0], "k_parallel": [1, 0]}
    manifest = json.loads(next((cache / "cpu" / "__pycache__").glob("k*.manifest")).read_text())
    listed = set(manifest["files"])
    on_disk = {p.name for p in (cache / "cpu" / "__pycache__").iterdir()
               if p.suffix in (".nbi", ".nbc")}
    assert listed == on_disk and len(on_disk) >= 4


def test_truncated_index_is_dropped_and_rebuilt(tmp_path: Path) -> None:
    cache = warmed(tmp_path)
    (index,) = numba_files(cache, "k_serial", ".nbi")
    index.write_bytes(index.read_bytes()[:40])
    assert_healed(tmp_path, cache, index.name, run_child(tmp_path, cache))


def test_garbage_data_file_is_dropped_and_rebuilt(tmp_path: Path) -> None:
    cache = warmed(tmp_path)
    (data,) = numba_files(cache, "k_serial", ".nbc")
    data.write_bytes(np.random.default_rng(1).bytes(data.stat().st_size))
    assert_healed(tmp_path, cache, data.name, run_child(tmp_path, cache))


def test_crafted_pickle_in_the_index_never_runs(tmp_path: Path) -> None:
    cache = warmed(tmp_path)
    marker = tmp_path / "pwned"
    (index,) = numba_files(cache, "k_serial", ".nbi")
    index.write_bytes(pickle.dumps(Plant(marker)))
    report = run_child(tmp_path, cache)
    assert not marker.exists(), "the crafted cache file ran code"
    assert_healed(tmp_path, cache, index.name, report)
    assert not marker.exists()


def test_a_file_the_manifest_does_not_list_is_dropped_unread(tmp_path: Path) -> None:
    cache = warmed(tmp_path)
    marker = tmp_path / "pwned"
    (data,) = numba_files(cache, "k_parallel", ".nbc")
    stray = data.with_name(data.name.replace(".1.nbc", ".2.nbc"))
    stray.write_bytes(pickle.dumps(Plant(marker)))
    report = run_child(tmp_path, cache)
    assert not marker.exists() and not stray.exists()
    assert len(report["warnings"]) == 1 and stray.name in report["warnings"][0]
    assert report["stats"] == {"k_serial": [1, 0], "k_parallel": [1, 0]}  # the rest still loads


def test_garbage_manifest_drops_every_file_once(tmp_path: Path) -> None:
    cache = warmed(tmp_path)
    (manifest,) = (cache / "cpu" / "__pycache__").glob("k*.manifest")
    manifest.write_text("{not json")
    report = run_child(tmp_path, cache)
    assert len(report["warnings"]) == 1
    assert report["stats"] == {"k_serial": [0, 1], "k_parallel": [0, 1]}
    again = run_child(tmp_path, cache)
    assert again["warnings"] == [] and again["stats"] == {"k_serial": [1, 0],
                                                          "k_parallel": [1, 0]}


@pytest.mark.parametrize("suffix", [".lock", ".manifest"])
@pytest.mark.parametrize("squatter", ["directory", "dangling symlink"])
def test_a_directory_or_symlink_in_place_of_the_lock_or_manifest_heals(
        tmp_path: Path, suffix: str, squatter: str) -> None:
    """``k<sha>.lock`` or ``.manifest`` replaced by a directory (with a file in it) or a
    symlink to nowhere: the next process removes it with a warning naming it and runs
    (results against the oracle): with the lock gone it still loads the verified files;
    with the manifest gone nothing can be verified, so the files are dropped (a second
    warning) and compiled again. The process after that warns about nothing and loads
    everything from disk."""
    cache = warmed(tmp_path)
    (path,) = (cache / "cpu" / "__pycache__").glob(f"k*{suffix}")
    path.unlink()
    if squatter == "directory":
        path.mkdir()
        (path / "inside").write_text("x")
    else:
        path.symlink_to(tmp_path / "missing" / "target")
    report = run_child(tmp_path, cache)
    named = [w for w in report["warnings"] if f"{path.name} (a " in w and "dropped" in w]
    assert len(named) == 1, report["warnings"]
    if suffix == ".lock":
        assert report["warnings"] == named
        assert report["stats"] == {"k_serial": [1, 0], "k_parallel": [1, 0]}
    else:
        assert len(report["warnings"]) == 2
        assert report["stats"] == {"k_serial": [0, 1], "k_parallel": [0, 1]}
    assert path.is_file() and not path.is_symlink()
    assert not (tmp_path / "missing").exists()
    again = run_child(tmp_path, cache)
    assert again["warnings"] == []
    assert again["stats"] == {"k_serial": [1, 0], "k_parallel": [1, 0]}


def test_processes_compiling_at_once_leave_a_verified_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    env = dict(os.environ, GOMPUTE_CACHE_DIR=str(cache),
               GOMPUTE_CPU_PARALLEL_THRESHOLD=str(THRESHOLD))
    procs = [subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        report = json.loads(out.strip().splitlines()[-1])
        assert report["warnings"] == []
        np.testing.assert_array_equal(np.array(report["large"], np.float32), _oracle(LARGE))
    later = run_child(tmp_path, cache)
    assert later["warnings"] == []
    assert later["stats"] == {"k_serial": [1, 0], "k_parallel": [1, 0]}


def test_numba_cache_dir_does_not_move_the_files_out(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    elsewhere = tmp_path / "numba-cache"
    run_child(tmp_path, cache, NUMBA_CACHE_DIR=str(elsewhere))
    assert not elsewhere.exists() or not any(elsewhere.rglob("*.nb*"))
    assert numba_files(cache, "k_serial", ".nbi")


# ------------------------------------------------------------------------ the location

def test_cache_folders_are_private(tmp_path: Path) -> None:
    cache = warmed(tmp_path)
    for folder in (cache, cache / "cpu", cache / "cpu" / "__pycache__"):
        assert folder.stat().st_mode & 0o777 == 0o700, folder
    for path in (cache / "cpu").rglob("*"):
        if path.is_file():
            assert path.stat().st_mode & 0o077 == 0, path


def test_unwritable_location_compiles_in_memory_with_one_warning(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("the cache root's parent is a regular file: even root cannot mkdir")
    for _ in range(2):  # no process reuses anything; each says so once
        report = run_child(tmp_path, blocker / "cache")
        assert len(report["warnings"]) == 1
        assert "compiling in memory" in report["warnings"][0]
        assert str(blocker) in report["warnings"][0]
        assert report["stats"] == {"k_serial": [0, 1], "k_parallel": [0, 1]}
        assert report["file"].startswith("<gompute-cpu ")


@pytest.mark.parametrize("where", ["root", "cpu", "__pycache__"])
def test_group_writable_cache_is_refused_and_never_read(tmp_path: Path, where: str) -> None:
    cache = warmed(tmp_path)
    marker = tmp_path / "pwned"
    (index,) = numba_files(cache, "k_serial", ".nbi")
    index.write_bytes(pickle.dumps(Plant(marker)))
    folder = {"root": cache, "cpu": cache / "cpu", "__pycache__": cache / "cpu" / "__pycache__"}
    os.chmod(folder[where], 0o770)
    report = run_child(tmp_path, cache, refused=True)
    assert report["error"] == "CacheUnsafe"
    assert str(folder[where]) in report["message"]
    assert f"chmod 700 {folder[where]}" in report["message"]
    assert not marker.exists()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="handing a folder to another user needs root")
def test_cache_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    cache = warmed(tmp_path)
    os.chown(cache / "cpu", 65534, 65534)
    report = run_child(tmp_path, cache, refused=True)
    assert report["error"] == "CacheUnsafe"
    assert "belongs to uid 65534" in report["message"] and str(cache / "cpu") in report["message"]


def test_one_warning_per_process_for_every_kernel_compiled_in_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("GOMPUTE_CACHE_DIR", str(blocker / "cache"))

    def plus_seven(x: Any) -> Any:
        return x + 7

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name, fn in (("mem_affine", affine), ("mem_plus_seven", plus_seven)):
            with g.Kernel(g.map(name, g.f32, None, fn), "cpu") as k:
                data = SMALL.copy()
                k.run(data)
                np.testing.assert_array_equal(data, [fn(v) for v in SMALL])
    messages = [str(w.message) for w in caught if issubclass(w.category, g.GomputeWarning)]
    assert len(messages) == 1 and "compiling in memory" in messages[0]
    assert not (blocker / "cache").exists()

"""The on-disk compile cache: round trip, key sensitivity, atomic writes, checksum on load."""

from __future__ import annotations

from pathlib import Path

import pytest

from gompute_core.plugins.records import Artifact
from gompute_core.runtime.diskcache import CompileCache, DiskCache, cache_root

ART = Artifact(backend="cuda", image=b"\x7fELF" + bytes(range(256)) * 4, format="cubin",
               entry="k", target="sm_90", source="extern \"C\" __global__ void k() {}\n",
               compiler="nvrtc 13.0", digest="ab" * 32, kind="map",
               extra=(("code", "sm_90"), ("options", "--fmad=false")))
KEY = ("nvrtc 13.0", "sm_90", "--fmad=false", "cuda-renderer/1", "ab" * 32)


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> DiskCache:
    monkeypatch.setenv("GOMPUTE_CACHE_DIR", str(tmp_path))
    return DiskCache("cuda")


def test_round_trip(cache: DiskCache, tmp_path: Path) -> None:
    assert cache.get(KEY) is None
    path = cache.put(KEY, ART)
    assert path is not None and path.parent == tmp_path / "cuda"
    assert cache.get(KEY) == ART
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary left


def test_every_key_part_matters(cache: DiskCache) -> None:
    cache.put(KEY, ART)
    for i in range(len(KEY)):
        other = list(KEY)
        other[i] += "x"
        assert cache.get(other) is None


def test_corrupt_entries_miss_and_are_removed(cache: DiskCache) -> None:
    path = cache.put(KEY, ART)
    data = bytearray(path.read_bytes())
    data[-10] ^= 0xFF
    path.write_bytes(bytes(data))
    assert cache.get(KEY) is None
    assert not path.exists()
    path = cache.put(KEY, ART)
    path.write_bytes(path.read_bytes()[:40])
    assert cache.get(KEY) is None


def test_unwritable_directory_is_not_an_error(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("GOMPUTE_CACHE_DIR", str(blocker))
    assert DiskCache("cuda").put(KEY, ART) is None
    assert DiskCache("cuda").get(KEY) is None


def test_default_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOMPUTE_CACHE_DIR", raising=False)
    assert cache_root() == Path.home() / ".cache" / "gompute"


def test_namespaces_are_separate(cache: DiskCache) -> None:
    cache.put(KEY, ART)
    assert DiskCache("hip").get(KEY) is None


def test_compile_cache_builds_once_then_serves_memory_and_disk(cache: DiskCache) -> None:
    builds: list[int] = []

    def build() -> Artifact:
        builds.append(1)
        return ART

    first = CompileCache("cuda")
    assert first.get_or_build(KEY, build) == ART
    assert first.get_or_build(KEY, build) == ART  # memory
    first.forget_memory()
    assert first.get_or_build(KEY, build) == ART  # disk
    assert CompileCache("cuda").get_or_build(KEY, build) == ART  # a new process's view
    assert len(builds) == 1

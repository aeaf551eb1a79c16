"""The on-disk compile cache: round trip, key sensitivity, atomic writes, checksum on load,
private folders, one warning for a dropped entry or an unusable location."""

from __future__ import annotations

import dataclasses
import os
import re
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from gompute_core.compilation import diskcache
from gompute_core.compilation.diskcache import CompileCache, DiskCache, cache_root
from gompute_core.errors import CacheUnsafe, GomputeWarning
from gompute_core.plugins.records import Artifact

ART = Artifact(backend="cuda", image=b"\x7fELF" + bytes(range(256)) * 4, format="cubin",
               entry="k", target="sm_90", source="extern \"C\" __global__ void k() {}\n",
               compiler="nvrtc 13.0", digest="ab" * 32, kind="map",
               extra=(("code", "sm_90"), ("options", "--fmad=false")))
KEY = ("nvrtc 13.0", "sm_90", "--fmad=false", "cuda-renderer/1", "ab" * 32)


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> DiskCache:
    monkeypatch.setenv("GOMPUTE_CACHE_DIR", str(tmp_path))
    return DiskCache("cuda")


@contextmanager
def gompute_warnings() -> Iterator[list[str]]:
    """The messages of the GomputeWarnings issued inside the block (every one, no dedup)."""
    messages: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield messages
    messages.extend(str(w.message) for w in caught if issubclass(w.category, GomputeWarning))


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


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage"])
def test_corrupt_entry_is_dropped_with_one_warning(cache: DiskCache, damage: str) -> None:
    path = cache.put(KEY, ART)
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[-10] ^= 0xFF
    elif damage == "truncate":
        data = data[:40]
    else:
        data = bytearray(os.urandom(len(data)))
    path.write_bytes(bytes(data))
    with gompute_warnings() as caught:
        assert cache.get(KEY) is None
        assert cache.get(KEY) is None  # gone: a plain miss, no second warning
    assert not path.exists()
    assert len(caught) == 1 and str(path) in caught[0] and "dropped" in caught[0]


def test_compile_cache_rebuilds_a_corrupt_entry_once(cache: DiskCache) -> None:
    builds: list[int] = []

    def build() -> Artifact:
        builds.append(1)
        return ART

    CompileCache("cuda").get_or_build(KEY, build)
    path = cache.path_for(KEY)
    path.write_bytes(path.read_bytes()[:-1] + b"!")
    with gompute_warnings() as caught:
        assert CompileCache("cuda").get_or_build(KEY, build) == ART  # a later process
        assert CompileCache("cuda").get_or_build(KEY, build) == ART  # healed: from disk
    assert len(builds) == 2 and len(caught) == 1
    assert cache.get(KEY) == ART


def test_unwritable_location_builds_in_memory_with_one_warning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a regular file: no one, root included, can create a folder under it")
    monkeypatch.setenv("GOMPUTE_CACHE_DIR", str(blocker / "cache"))
    builds: list[int] = []

    def build() -> Artifact:
        builds.append(1)
        return ART

    with gompute_warnings() as caught:
        assert DiskCache("cuda").put(KEY, ART) is None
        assert DiskCache("cuda").get(KEY) is None
        compiler = CompileCache("cuda")
        assert compiler.get_or_build(KEY, build) == ART
        assert compiler.get_or_build(KEY, build) == ART  # memory
        assert CompileCache("cuda").get_or_build(KEY, build) == ART
    assert len(builds) == 2
    assert len(caught) == 1, caught
    assert "compiling in memory" in caught[0] and str(blocker) in caught[0]


def test_created_folders_and_files_are_private(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "new" / "root"
    monkeypatch.setenv("GOMPUTE_CACHE_DIR", str(root))
    path = DiskCache("cuda").put(KEY, ART)
    assert path is not None
    assert root.stat().st_mode & 0o777 == 0o700
    assert (root / "cuda").stat().st_mode & 0o777 == 0o700
    assert path.stat().st_mode & 0o077 == 0


@pytest.mark.parametrize("where", ["root", "namespace"])
@pytest.mark.parametrize("mode", [0o770, 0o757], ids=["group", "others"])
def test_folder_writable_by_others_is_refused(cache: DiskCache, tmp_path: Path, where: str,
                                              mode: int) -> None:
    cache.put(KEY, ART)
    folder = tmp_path if where == "root" else tmp_path / "cuda"
    os.chmod(folder, mode)
    for attempt in (lambda: cache.get(KEY), lambda: cache.put(KEY, ART),
                    lambda: CompileCache("cuda").get_or_build(KEY, lambda: ART)):
        with pytest.raises(CacheUnsafe, match=re.escape(f"chmod 700 {folder}") + "$"):
            attempt()


def test_shared_folder_advice_is_a_private_subfolder(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``GOMPUTE_CACHE_DIR`` at a shared sticky folder (mode 1777, as ``/tmp``) is refused,
    advising a private folder inside it, never ``chmod`` of the shared one; following the
    advice works."""
    shared = tmp_path / "tmp"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    monkeypatch.setenv("GOMPUTE_CACHE_DIR", str(shared))
    with pytest.raises(CacheUnsafe) as info:
        DiskCache("cuda").put(KEY, ART)
    message = str(info.value)
    assert "chmod" not in message and "chown" not in message
    advised = re.search(r"GOMPUTE_CACHE_DIR=(\S+) ", message)
    assert advised is not None and Path(advised[1]).parent == shared, message
    assert shared.stat().st_mode & 0o7777 == 0o1777
    monkeypatch.setenv("GOMPUTE_CACHE_DIR", advised[1])
    cache = DiskCache("cuda")
    assert cache.put(KEY, ART) is not None and cache.get(KEY) == ART
    assert Path(advised[1]).stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("squatter", ["directory", "symlink"])
def test_a_directory_or_symlink_in_place_of_an_entry_heals(cache: DiskCache,
                                                           squatter: str) -> None:
    """A directory (holding a file) or a dangling symlink where an entry belongs: a miss,
    then the next ``put`` replaces it (a directory with one warning naming it; the symlink
    itself, never its target, with none), and the entry reads back."""
    path = cache.path_for(KEY)
    path.parent.mkdir(mode=0o700, parents=True)
    if squatter == "directory":
        path.mkdir()
        (path / "inside").write_bytes(b"x")
    else:
        path.symlink_to(path.parent / "missing" / "target")
    assert cache.get(KEY) is None
    with gompute_warnings() as messages:
        assert cache.put(KEY, ART) == path
    if squatter == "directory":
        assert len(messages) == 1 and path.name in messages[0] and "dropped" in messages[0]
    else:
        assert messages == [] and not (path.parent / "missing").exists()
    assert path.is_file() and not path.is_symlink() and cache.get(KEY) == ART


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="handing a folder to another user needs root")
def test_folder_owned_by_someone_else_is_refused(cache: DiskCache, tmp_path: Path) -> None:
    cache.put(KEY, ART)
    os.chown(tmp_path / "cuda", 65534, 65534)
    with pytest.raises(CacheUnsafe, match=re.escape(f"{tmp_path / 'cuda'} belongs to uid 65534")):
        cache.get(KEY)


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


def test_memory_level_keeps_the_most_recently_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """The memory level holds at most ``MEMORY_ENTRIES`` artifacts: a key used again stays,
    the least recently used goes and is built again when asked for (``disk=False``: the
    CPU backend's way, nothing to read back)."""
    monkeypatch.setattr(diskcache, "MEMORY_ENTRIES", 3)
    builds: list[str] = []

    def build(name: str) -> Callable[[], Artifact]:
        def make() -> Artifact:
            builds.append(name)
            return dataclasses.replace(ART, image=name.encode())
        return make

    cache = CompileCache("cpu")
    for name in ("a", "b", "c"):
        cache.get_or_build((name,), build(name), disk=False)
    assert cache.get_or_build(("a",), build("a"), disk=False).image == b"a"  # a: used again
    cache.get_or_build(("d",), build("d"), disk=False)  # 4 > 3: b, the least recent, goes
    for name in ("a", "c", "d"):
        assert cache.get_or_build((name,), build(name), disk=False).image == name.encode()
    assert builds == ["a", "b", "c", "d"]
    assert cache.get_or_build(("b",), build("b"), disk=False).image == b"b"
    assert builds == ["a", "b", "c", "d", "b"]

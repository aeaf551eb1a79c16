"""The compile cache's location, its safety checks, and the GPU backends' artifact cache.

Everything lives under ``$GOMPUTE_CACHE_DIR`` (default ``~/.cache/gompute``),
in a folder per backend. Every folder Gompute creates there is mode 0700, and
every folder it reads from must belong to this user and be writable by no one
else (as ssh and pip require of their own files): anyone who can write a
compile cache can make its users run their code. A folder that fails the check
raises :class:`~gompute_core.errors.CacheUnsafe` naming it and the fix; nothing
is read from it. A location that cannot be created or written (a read-only
disk, a path under a regular file) is not an error: the backend compiles in
memory and says so once per process with a :class:`GomputeWarning`.

:class:`DiskCache` (CUDA, HIP) keeps one file per key. The key is the sha256 of
its parts, which name the backend, the compiler and its version, the target
arch, the options, the sha256 of the rendered source and the KernelIR digest
(:func:`gompute_core.backend.compiler.cache_key`), so a change in any of them
misses. A file is a one-line JSON header (the artifact's fields, the
payload's sha256 and the lengths of the image and source) followed by the image
and the source bytes. Writes go to a temporary file in the same folder, then
``os.replace``: readers never see half a file. Reads check the sha256 before
returning; a file that fails the check or does not parse is deleted with one
``GomputeWarning`` and counts as a miss, so the caller rebuilds it.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import stat
import tempfile
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path

from ..errors import CacheUnsafe, GomputeWarning
from ..plugins.records import Artifact

ENV_CACHE_DIR = "GOMPUTE_CACHE_DIR"
FORMAT_VERSION = 1

_warned: set[str] = set()
_warned_lock = threading.Lock()


def cache_root() -> Path:
    """``$GOMPUTE_CACHE_DIR`` or ``~/.cache/gompute``."""
    env = os.environ.get(ENV_CACHE_DIR)
    return Path(env) if env else Path.home() / ".cache" / "gompute"


def warn_once(key: str, message: str) -> None:
    """Issue ``message`` as a :class:`GomputeWarning` the first time ``key`` is seen in
    this process."""
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(message, GomputeWarning, stacklevel=3)


def warn_dropped(path: Path, reason: str) -> None:
    """The one warning for a cache entry that failed its check and was deleted."""
    warnings.warn(f"dropped the corrupt compile cache entry {path} ({reason}); "
                  f"it is rebuilt", GomputeWarning, stacklevel=3)


def check_private(path: Path) -> None:
    """Raise :class:`CacheUnsafe` unless the directory ``path`` belongs to this user and
    no one else can write it (``OSError`` if it is missing or not a directory)."""
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", str(path))
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    shared = st.st_mode & stat.S_ISVTX
    """A sticky folder (``/tmp``, ``/var/tmp``) is shared by design: never advise changing
    it, only using a private folder inside it."""
    inside = (f"Point {ENV_CACHE_DIR} at a private folder inside it, e.g. "
              f"{ENV_CACHE_DIR}={path / f'gompute-{uid if uid is not None else os.getpid()}'} "
              f"(Gompute creates it with mode 0700); never change the mode or owner of a "
              f"shared folder")
    if uid is not None and st.st_uid != uid:
        fix = inside if shared else (f"Point {ENV_CACHE_DIR} at a directory of your own, or "
                                     f"take it over: chown -R {uid} {path} && chmod 700 {path}")
        raise CacheUnsafe(
            f"the compile cache directory {path} belongs to uid {st.st_uid}, not to you "
            f"(uid {uid}): Gompute loads no code from it. {fix}")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        if shared:
            raise CacheUnsafe(
                f"the compile cache directory {path} is a shared folder (mode "
                f"{stat.S_IMODE(st.st_mode):o}, sticky, like /tmp): whoever can write it "
                f"could run code in your processes, so Gompute loads nothing from it. {inside}")
        raise CacheUnsafe(
            f"the compile cache directory {path} is writable by group or others "
            f"(mode {stat.S_IMODE(st.st_mode):o}): whoever can write it could run code in "
            f"your processes, so Gompute loads nothing from it. Fix: chmod 700 {path}")


def _private_dir(path: Path) -> None:
    """Create ``path`` with mode 0700 if it is missing, then :func:`check_private` it."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    check_private(path)


def private_cache_dir(*parts: str) -> Path | None:
    """``cache_root()/parts...``, each level created 0700 and checked, the last one
    writable; None, with one :class:`GomputeWarning` per location and process, when it
    cannot be created or written. Raises :class:`CacheUnsafe` for a level that is not
    private."""
    root = cache_root()
    path = root
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
        _private_dir(path)
        for part in parts:
            path = path / part
            _private_dir(path)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        target = root.joinpath(*parts)
        warn_once(f"unwritable\0{target}",
                  f"the compile cache {target} cannot be used ({exc}); compiling in memory, "
                  f"nothing is reused by the next process. Set {ENV_CACHE_DIR} to a "
                  f"writable directory to cache compiled kernels.")
        return None
    return path


class DiskCache:
    """Artifacts of one backend (``namespace``) keyed by a sequence of strings."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace

    @property
    def directory(self) -> Path:
        """The namespace's folder (read from the environment on each use)."""
        return cache_root() / self.namespace

    def path_for(self, key_parts: Sequence[str]) -> Path:
        """The file that holds (or would hold) the artifact of ``key_parts``."""
        text = "\0".join([f"gompute-cache/{FORMAT_VERSION}", *map(str, key_parts)])
        return self.directory / (hashlib.sha256(text.encode()).hexdigest() + ".gca")

    def get(self, key_parts: Sequence[str]) -> Artifact | None:
        """The cached artifact, or None: missing, or failing its checksum (then deleted, with
        one warning), or the location is unusable (one warning per process)."""
        if private_cache_dir(self.namespace) is None:
            return None
        path = self.path_for(key_parts)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        try:
            newline = data.index(b"\n")
            head = json.loads(data[:newline])
            payload = data[newline + 1:]
            if hashlib.sha256(payload).hexdigest() != head["sha256"]:
                raise ValueError("checksum mismatch")
            n_image = head["image_len"]
            if len(payload) != n_image + head["source_len"]:
                raise ValueError("length mismatch")
            return Artifact(
                backend=head["backend"], image=payload[:n_image], format=head["format"],
                entry=head["entry"], target=head["target"],
                source=payload[n_image:].decode(), compiler=head["compiler"],
                digest=head["digest"], kind=head["kind"],
                extra=tuple((str(k), str(v)) for k, v in head["extra"]),
            )
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
            path.unlink(missing_ok=True)
            warn_dropped(path, f"{type(exc).__name__}: {exc}")
            return None

    def put(self, key_parts: Sequence[str], artifact: Artifact) -> Path | None:
        """Store ``artifact`` atomically (mode 0600); returns its path, or None when the
        location is unusable (the cache is an optimisation: failing to write is not an
        error)."""
        source = artifact.source.encode()
        payload = artifact.image + source
        head = {
            "backend": artifact.backend, "format": artifact.format, "entry": artifact.entry,
            "target": artifact.target, "compiler": artifact.compiler,
            "digest": artifact.digest, "kind": artifact.kind,
            "extra": [list(p) for p in artifact.extra],
            "image_len": len(artifact.image), "source_len": len(source),
            "sha256": hashlib.sha256(payload).hexdigest(),
        }
        if private_cache_dir(self.namespace) is None:
            return None
        path = self.path_for(key_parts)
        try:
            write_atomically(path, json.dumps(head).encode() + b"\n" + payload)
        except OSError:
            return None
        return path


def clear_squatter(path: Path) -> bool:
    """Remove what sits at ``path``, in a private cache folder, where a regular file of ours
    belongs: a directory (and what it holds), a symlink (dangling or not: nothing in the
    cache is followed out of it), a FIFO...; one warning naming it. True when something was
    removed (try again), False when ``path`` is free or a regular file."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISREG(mode):
        return False
    if stat.S_ISDIR(mode):
        shutil.rmtree(path)
        what = "a directory"
    else:
        path.unlink()
        what = "a symlink" if stat.S_ISLNK(mode) else "not a regular file"
    warn_dropped(path, f"{what} where a cache file belongs")
    return True


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file (mode 0600) in the same folder and
    ``os.replace``: a reader sees the old file or the whole new one, never half of it. A
    directory in the way is removed first (:func:`clear_squatter`)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        try:
            os.replace(tmp, path)
        except OSError:
            if not clear_squatter(path):
                raise
            os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


MEMORY_ENTRIES = 256
"""Artifacts a :class:`CompileCache` keeps in memory, the least recently used dropped
first (a live kernel holds its own program; a dropped artifact is read from disk, or
rebuilt, when it is asked for again)."""


class CompileCache:
    """Two levels for a compiler: this process's memory (the :data:`MEMORY_ENTRIES` most
    recently used artifacts), then a :class:`DiskCache`.

    The core's :func:`~gompute_core.backend.compiler.compile_kernel` calls
    :meth:`get_or_build` with the key and a function that compiles; the
    function runs only when neither level has the artifact.
    """

    def __init__(self, namespace: str) -> None:
        self.disk = DiskCache(namespace)
        self._memory: OrderedDict[tuple[str, ...], Artifact] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_build(self, key_parts: Sequence[str], build: Callable[[], Artifact],
                     disk: bool = True) -> Artifact:
        """The artifact of ``key_parts``, from memory, disk (unless ``disk`` is False), or
        ``build()`` (then stored)."""
        key = tuple(map(str, key_parts))
        with self._lock:
            hit = self._memory.get(key)
            if hit is not None:
                self._memory.move_to_end(key)
                return hit
        artifact = self.disk.get(key) if disk else None
        if artifact is None:
            artifact = build()
            if disk:
                self.disk.put(key, artifact)
        with self._lock:
            self._memory[key] = artifact
            while len(self._memory) > MEMORY_ENTRIES:
                self._memory.popitem(last=False)
        return artifact

    def forget_memory(self) -> None:
        """Drop the in-memory level (the next lookup reads the disk)."""
        with self._lock:
            self._memory.clear()

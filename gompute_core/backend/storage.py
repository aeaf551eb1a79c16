"""A backend's files on disk: the cache root, private folders, atomic writes, warnings.

Everything Gompute keeps on disk lives under ``$GOMPUTE_CACHE_DIR`` (default
``~/.cache/gompute``). :func:`private_cache_dir` is the folder a backend keeps
its own loadable artifacts in (the CPU's numba object code, say): created
mode 0700, checked to belong to this user and to be writable by no one else
(:class:`~gompute_core.errors.CacheUnsafe` naming it and the fix otherwise:
whoever can write it could run code in your processes), or None with one
warning when the location cannot be written (compile in memory then).
:func:`write_atomically` never leaves half a file for a reader.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
import threading
import warnings
from pathlib import Path

from ..errors import CacheUnsafe, GomputeWarning

ENV_CACHE_DIR = "GOMPUTE_CACHE_DIR"

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

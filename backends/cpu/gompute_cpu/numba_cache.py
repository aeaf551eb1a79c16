"""numba's on-disk cache for the rendered modules, every file verified before it is unpickled.

numba keeps a compiled function as pickles: an index
``<stem>.<function>-<line>.pyXY.nbi`` (signature -> data file) and one data
file ``...pyXY.<n>.nbc`` per signature. Unpickling runs code: a truncated
or garbage file breaks the kernel in every later process, a crafted one runs
whatever it names. So the CPU backend does not use numba's own locator and
file handling (which also follow ``NUMBA_CACHE_DIR`` out of the private
cache directory); it gives each of its functions a :class:`VerifiedFunctionCache`:

* the files live in ``<cache>/cpu/__pycache__`` (private, checked by
  :func:`gompute_core.backend.private_cache_dir`);
* every file is written by us (temporary file + ``os.replace``, mode 0600)
  and its sha256 recorded in the module's manifest ``<stem>.manifest``
  (JSON, written the same way);
* a file is unpickled only when the bytes just read match the manifest's
  digest for its name. Anything else (truncated, garbage, crafted, or a name
  the manifest does not list) is deleted with one ``GomputeWarning``; numba
  then compiles and writes it again.

Concurrency: every read and write of a module's files and manifest holds an
exclusive ``flock`` on ``<stem>.lock`` (and a lock per process), and a
writer updates the manifest before it lets go. So a file written by another
process is either absent or listed with its digest; one that is present but
not listed can only come from a writer that died between the two steps, or
from something other than Gompute, and is dropped as unknown. Two processes
compiling the same kernel both compile; the second to save replaces the
first's files (same key, same code). Needs POSIX ``fcntl``.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import io
import json
import os
import pickle
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from numba.core.caching import CompileResultCacheImpl, FunctionCache, IndexDataCacheFile
from numba.core.dispatcher import Dispatcher

from gompute_core.backend import clear_squatter, warn_dropped, warn_once, write_atomically

MANIFEST_FORMAT = 1
_SUFFIXES = (".nbi", ".nbc")
_NUMBA_INTERNALS = {
    IndexDataCacheFile: ("_load_index", "_save_index", "_save_data", "_dump", "save", "load"),
    CompileResultCacheImpl: ("get_filename_base", "reduce", "rebuild", "check_cachable"),
    FunctionCache: ("load_overload", "save_overload", "_index_key"),
}


def unsupported() -> str | None:
    """Why this numba's cache classes cannot be wrapped (a method this module relies on is
    missing), or None when they can."""
    for cls, names in _NUMBA_INTERNALS.items():
        missing = [n for n in names if not hasattr(cls, n)]
        if missing:
            return f"numba.core.caching.{cls.__name__} has no {', '.join(missing)}"
    return None


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ModuleStore:
    """The numba cache files of one rendered module (``stem``) and their manifest."""

    def __init__(self, directory: Path, stem: str) -> None:
        self.directory = directory
        self.stem = stem
        self.manifest_path = directory / f"{stem}.manifest"
        self._lock_path = directory / f"{stem}.lock"
        self._thread_lock = threading.RLock()
        self._held = False

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the module's lock (re-entrant within a thread; exclusive across threads and
        processes)."""
        with self._thread_lock:
            if self._held:
                yield
                return
            fd = self._open_lock()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                self._held = True
                try:
                    yield
                finally:
                    self._held = False
            finally:
                os.close(fd)

    def _open_lock(self) -> int:
        """The lock file's descriptor (never through a symlink); a directory or symlink in
        its place is removed first (:func:`clear_squatter`)."""
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        try:
            return os.open(self._lock_path, flags, 0o600)
        except OSError:
            if not clear_squatter(self._lock_path):
                raise
            return os.open(self._lock_path, flags, 0o600)

    def manifest(self) -> dict[str, str]:
        """File name -> sha256 of every file we wrote (empty if the manifest is missing or
        unreadable: every file is then unknown; a directory or symlink in its place is
        removed)."""
        try:
            data = json.loads(self.manifest_path.read_bytes())
        except OSError:
            clear_squatter(self.manifest_path)
            return {}
        except ValueError:
            return {}
        if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
            return {}
        files = data.get("files")
        if not isinstance(files, dict):
            return {}
        return {k: v for k, v in files.items() if isinstance(k, str) and isinstance(v, str)}

    def _save_manifest(self, files: dict[str, str]) -> None:
        text = json.dumps({"format": MANIFEST_FORMAT, "files": files}, sort_keys=True, indent=1)
        write_atomically(self.manifest_path, text.encode())

    def read(self, name: str) -> bytes | None:
        """The bytes of ``name`` when they match the manifest; None when it is missing, or
        failed the check (then it is deleted, with one warning)."""
        with self.locked():
            try:
                data = (self.directory / name).read_bytes()
            except FileNotFoundError:
                return None
            except IsADirectoryError:
                clear_squatter(self.directory / name)
                return None
            want = self.manifest().get(name)
            if want == _sha256(data):
                return data
            self.drop({name: "not in the manifest" if want is None
                       else "its sha256 differs from the manifest's"})
            return None

    def write(self, name: str, data: bytes) -> None:
        """Write ``name`` atomically and record its digest."""
        with self.locked():
            write_atomically(self.directory / name, data)
            files = self.manifest()
            files[name] = _sha256(data)
            self._save_manifest(files)

    def drop(self, reasons: dict[str, str]) -> None:
        """Delete the files named in ``reasons`` (name -> why) with one warning."""
        with self.locked():
            files = self.manifest()
            for name in reasons:
                (self.directory / name).unlink(missing_ok=True)
                files.pop(name, None)
            self._save_manifest(files)
        why = "; ".join(f"{name}: {reason}" for name, reason in sorted(reasons.items()))
        warn_dropped(self.directory / f"{self.stem}.*", why)

    def sweep(self) -> None:
        """Check every cache file of the module now; drop the failures (one warning) and
        forget manifest entries whose file is gone."""
        with self.locked():
            files = self.manifest()
            present: set[str] = set()
            bad: dict[str, str] = {}
            for path in self.directory.glob(f"{glob.escape(self.stem)}.*"):
                if path.suffix not in _SUFFIXES or not path.is_file():
                    continue
                present.add(path.name)
                want = files.get(path.name)
                if want is None:
                    bad[path.name] = "not in the manifest"
                elif _sha256(path.read_bytes()) != want:
                    bad[path.name] = "its sha256 differs from the manifest's"
            if bad:
                self.drop(bad)
            elif set(files) - present:
                self._save_manifest({k: v for k, v in files.items() if k in present})


class _Locator:
    """numba's view of where one function's files go: the module's store."""

    def __init__(self, py_func: Any, store: ModuleStore, filename: str) -> None:
        self._py_file = filename  # numba names it in its "cannot cache" warning
        self._lineno = py_func.__code__.co_firstlineno
        self._store = store

    def ensure_cache_path(self) -> None:
        """Nothing to do: the directory was checked when the module was loaded."""

    def get_cache_path(self) -> str:
        """The store's directory."""
        return str(self._store.directory)

    def get_source_stamp(self) -> str:
        """The module's name, which is the hash of its source."""
        return self._store.stem

    def get_disambiguator(self) -> str:
        """The function's first line (as numba's own locators)."""
        return str(self._lineno)


class _CompileResultImpl(CompileResultCacheImpl):
    """numba's (de)serialization of compile results, with our locator instead of its search
    (``NUMBA_CACHE_DIR``, ``__pycache__`` beside the file, the user-wide folder)."""

    def __init__(self, py_func: Any, locator: _Locator, stem: str) -> None:
        self._lineno = py_func.__code__.co_firstlineno
        self._locator = locator
        self._filename_base = self.get_filename_base(f"{stem}.{py_func.__qualname__}",
                                                     getattr(sys, "abiflags", ""))


class _VerifiedFile(IndexDataCacheFile):
    """numba's index/data file logic, reading and writing only through the store."""

    def __init__(self, store: ModuleStore, filename_base: str) -> None:
        super().__init__(cache_path=str(store.directory), filename_base=filename_base,
                         source_stamp=store.stem)
        self._store = store

    def save(self, key: Any, data: Any) -> None:
        """numba's save (index, then data) as one step under the lock; an unwritable
        directory skips it with one warning."""
        try:
            with self._store.locked():
                super().save(key, data)
        except OSError as exc:
            warn_once(f"unwritable\0{self._store.directory}",
                      f"cannot write the compile cache {self._store.directory} ({exc}); "
                      f"this kernel stays compiled in memory only")

    def load(self, key: Any) -> Any:
        """The verified data of ``key``, or None (missing, or dropped as bad)."""
        try:
            with self._store.locked():
                name = self._load_index().get(key)
                if name is None:
                    return None
                raw = self._store.read(name)
                if raw is None:
                    return None
                try:
                    return pickle.loads(raw)
                except Exception as exc:  # verified bytes numba cannot read: drop, recompile
                    self._store.drop({name: f"unreadable: {type(exc).__name__}: {exc}"})
                    return None
        except OSError as exc:
            warn_once(f"unwritable\0{self._store.directory}",
                      f"cannot use the compile cache {self._store.directory} ({exc}); "
                      f"compiling in memory")
            return None

    def _load_index(self) -> dict[Any, str]:
        raw = self._store.read(self._index_name)
        if raw is None:
            return {}
        try:
            stream = io.BytesIO(raw)
            version = pickle.load(stream)
            if version != self._version:  # another numba: its files are simply replaced
                return {}
            stamp, overloads = pickle.loads(stream.read())
        except Exception as exc:
            self._store.drop({self._index_name: f"unreadable: {type(exc).__name__}: {exc}"})
            return {}
        return overloads if stamp == self._source_stamp else {}

    def _save_index(self, overloads: dict[Any, str]) -> None:
        data = self._dump((self._source_stamp, overloads))
        self._store.write(self._index_name, pickle.dumps(self._version, protocol=-1) + data)

    def _save_data(self, name: str, data: Any) -> None:
        self._store.write(name, self._dump(data))


class VerifiedFunctionCache(FunctionCache):
    """A numba function cache whose files are the store's, verified on every read."""

    def __init__(self, py_func: Any, store: ModuleStore, filename: str) -> None:
        # FunctionCache.__init__ would search numba's locators; this sets the same fields
        self._name = repr(py_func)
        self._py_func = py_func
        self._impl = _CompileResultImpl(py_func, _Locator(py_func, store, filename), store.stem)
        self._cache_path = str(store.directory)
        self._cache_file = _VerifiedFile(store, self._impl.filename_base)
        self.enable()


def attach(module: ModuleType, store: ModuleStore, filename: str) -> int:
    """Give every numba function ``module`` defines a :class:`VerifiedFunctionCache` in
    ``store``; returns how many. Call before anything compiles (nothing is loaded yet)."""
    count = 0
    for value in vars(module).values():
        if isinstance(value, Dispatcher) and value.py_func.__module__ == module.__name__:
            value._cache = VerifiedFunctionCache(value.py_func, store, filename)
            count += 1
    return count

"""Rendered modules: run from their text, their machine code cached on disk and verified.

:func:`load_module` executes the rendered text it is given (never a file
read back, never a ``.pyc``), once per process. When the cache location is
usable (``<cache>/cpu`` private to the user: see
:func:`gompute_core.backend.private_cache_dir`) it also writes the text to
``<cache>/cpu/k<sha256 of source>.py`` (for tracebacks and readers; the name
is the hash of the text, so a renderer change never meets a stale entry),
checks the numba cache files already there for that module, and gives each of
its numba functions a verified on-disk cache (:mod:`.numba_cache`): a second
process loads machine code instead of compiling, and a bad file is dropped
and rebuilt with one warning. When the location cannot be created or written
the module is compiled in memory, with one warning per process; a location
owned by someone else or writable by others raises ``CacheUnsafe``.
Before the first module runs it installs :mod:`.numba_passes` (numba's
function passes without the per-declaration pipelines, and llvmlite's pass
managers freed after their run).

A module lives while an *owner* (the loaded entry of a kernel) does. numba
never frees a compiled function by itself: each dispatcher's finalizer holds
its compile results, which reach the module's globals and so the dispatcher
again, from the process-wide ``weakref.finalize`` registry. When a module's
last owner is collected, :func:`load_module`'s bookkeeping does what numba's
finalizer would (the compiled functions leave numba's target context), drops
the compile results and the module's ``sys.modules`` and ``linecache`` entries
(numba's too, under the path relative to the working folder),
so the module, its dispatchers and their Python-side state can be freed. The
release runs at once when the finalizer can take this module's lock without
waiting, else at the next load (never inside another lock). The released
libraries' IR modules then leave numba's MCJIT engine (numba never removes
one), under numba's compiler lock. What stays per compiled module is what MCJIT
never frees: its machine code and loaded object, and llvmlite's pass builders.
"""

from __future__ import annotations

import hashlib
import linecache
import os
import sys
import threading
import weakref
from pathlib import Path
from types import ModuleType
from typing import Any

from gompute_core.backend import (
    cache_root,
    private_cache_dir,
    warn_once,
    write_atomically,
)
from gompute_core.errors import CompileFailed

from . import numba_cache, numba_passes

_lock = threading.Lock()
_modules: dict[str, ModuleType] = {}
_owners: dict[str, int] = {}
"""Per loaded module (by stem): how many live owners hold it."""
_released: list[str] = []
"""Stems whose last owner died, waiting for :func:`_release_pending`."""
_unlinked: list[Any] = []
"""numba code libraries of released modules whose IR is still in numba's engine."""
_NAMESPACE = "cpu"
_NUMBA_DIR = "__pycache__"


def cache_dir() -> Path:
    """The directory rendered CPU modules live in (``cpu`` under the core's cache root)."""
    return cache_root() / _NAMESPACE


def source_path(source: str) -> Path:
    """Where ``source`` is (or will be) stored."""
    return cache_dir() / f"k{hashlib.sha256(source.encode()).hexdigest()[:40]}.py"


def _write_once(path: Path, source: str) -> None:
    data = source.encode()
    try:
        if path.read_bytes() == data:
            return
    except (FileNotFoundError, IsADirectoryError):  # a directory is replaced by the file
        pass
    write_atomically(path, data)


def _disk_store(path: Path, source: str) -> numba_cache.ModuleStore | None:
    """The verified numba store of the module at ``path`` (its text written there), or None
    when the cache location cannot be used (compile in memory; one warning)."""
    numba_dir = private_cache_dir(_NAMESPACE, _NUMBA_DIR)
    if numba_dir is None:
        return None
    reason = numba_cache.unsupported()
    if reason is not None:
        warn_once(f"numba-cache\0{reason}",
                  f"this numba's cache internals are not the ones Gompute verifies ({reason}); "
                  f"CPU kernels are compiled in memory, not cached on disk")
        return None
    try:
        _write_once(path, source)
    except OSError as exc:
        warn_once(f"unwritable\0{path.parent}",
                  f"cannot write {path} ({exc}); compiling in memory")
        return None
    return numba_cache.ModuleStore(numba_dir, path.stem)


def _execute(source: str, name: str, filename: str) -> ModuleType:
    """A new module ``name`` holding the result of running ``source`` (as ``filename``)."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    mod = ModuleType(name)
    mod.__file__ = filename
    sys.modules[name] = mod
    try:
        exec(compile(source, filename, "exec"), mod.__dict__)
    except Exception as exc:
        del sys.modules[name]
        raise CompileFailed(f"{filename}: {type(exc).__name__}: {exc}") from exc
    return mod


def _owner_died(stem: str) -> None:
    """``weakref.finalize`` callback of a module's owner: queue the release, and do it now
    when nothing holds this module's lock (a finalizer may run inside any code)."""
    _released.append(stem)
    if _lock.acquire(blocking=False):
        try:
            _release_pending()
        finally:
            _lock.release()


def _release_pending() -> None:
    """Release each queued module whose owners are all gone, then take their numba
    libraries' IR out of numba's engine when that can be done now (``_lock`` held)."""
    while _released:
        stem = _released.pop()
        owners = _owners.get(stem, 0) - 1
        if owners > 0:
            _owners[stem] = owners
            continue
        _owners.pop(stem, None)
        mod = _modules.pop(stem, None)
        if mod is not None:
            _release(mod)
    if _unlinked:
        _unlink_pending()


def _unlink_pending() -> None:
    """Take the IR modules of released numba libraries out of numba's MCJIT engine, so
    that each is freed with its library (MCJIT keeps their machine code mapped and their
    symbols resolvable: it frees neither). The engine is not thread-safe, so this runs
    only when this thread can take numba's compiler lock without already holding it (a
    finalizer may run in the middle of numba's own compile); otherwise the modules wait
    for the next release or load."""
    from numba.core.compiler_lock import global_compiler_lock

    lock = getattr(global_compiler_lock, "_lock", None)
    if lock is None or global_compiler_lock.is_locked() or not lock.acquire(blocking=False):
        return
    try:
        while _unlinked:
            _remove_from_engine(_unlinked.pop())
    finally:
        lock.release()


def _remove_from_engine(library: Any) -> None:
    """``library``'s final IR module out of the engine it was added to (numba's own
    ``remove_module`` call is commented out: numba keeps every module for the process's
    life). Nothing happens for a library of another shape or loaded as object code."""
    module = getattr(library, "_final_module", None)
    engine = getattr(getattr(getattr(library, "_codegen", None), "_engine", None), "_ee", None)
    if module is not None and module in getattr(engine, "_modules", ()):
        engine.remove_module(module)


def _release(mod: ModuleType) -> None:
    """Let ``mod`` and its numba functions be freed: what numba's dispatcher finalizer
    does (its compiled functions leave the target context), then the compile results go,
    which breaks the cycle through the finalizer registry that kept them all alive."""
    from numba.core.dispatcher import Dispatcher

    if not hasattr(Dispatcher, "_reset_overloads"):  # another numba: keep it all, as numba
        return
    for value in vars(mod).values():
        if isinstance(value, Dispatcher) and value.py_func.__module__ == mod.__name__:
            for cres in value.overloads.values():
                try:
                    value.targetctx.remove_user_function(cres.entry_point)
                except KeyError:
                    pass
                _unlinked.append(cres.library)
            value._reset_overloads()
    sys.modules.pop(mod.__name__, None)
    linecache.cache.pop(mod.__file__, None)
    try:  # numba's error locations read the file's lines under a path relative to the cwd
        linecache.cache.pop(os.path.relpath(mod.__file__), None)
    except ValueError:  # another drive (Windows): numba used the absolute path
        pass


def load_module(source: str, owner: object) -> ModuleType:
    """Run the rendered module ``source`` (once per process while an owner holds it;
    ``CompileFailed`` if it fails), its numba functions cached on disk when the location
    allows. The module stays loaded while ``owner`` (weakly referenceable) or another
    owner of the same source lives, and is released after."""
    path = source_path(source)
    numba_passes.install()
    with _lock:
        _release_pending()
        mod = _modules.get(path.stem)
        if mod is None:
            mod = _load(source, path)
        weakref.finalize(owner, _owner_died, path.stem)
        _owners[path.stem] = _owners.get(path.stem, 0) + 1
        return mod


def _load(source: str, path: Path) -> ModuleType:
    """Execute ``source`` as a new module (``_lock`` held)."""
    store = _disk_store(path, source)
    if store is not None:
        try:
            store.sweep()
        except OSError as exc:  # what healing cannot fix (a folder it may not change)
            warn_once(f"unwritable\0{store.directory}",
                      f"cannot use the compile cache {store.directory} ({exc}); compiling in "
                      f"memory")
            store = None
    filename = str(path) if store is not None else f"<gompute-cpu {path.stem}>"
    mod = _execute(source, f"_gompute_cpu_{path.stem}", filename)
    if store is not None:
        numba_cache.attach(mod, store, filename)
    _modules[path.stem] = mod
    return mod

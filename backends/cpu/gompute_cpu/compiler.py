"""Rendered modules on disk and in memory, so numba's ``cache=True`` works across processes.

The source of a kernel is written once to ``<cache>/cpu/<sha256 of source>.py``
(``$GOMPUTE_CACHE_DIR`` or ``~/.cache/gompute``; tmp file + ``os.replace``),
then imported from there. numba keys its on-disk cache (``__pycache__``
next to the file) on that file's path and stamp, so a second process that
renders the same kernel imports the same file and loads machine code instead
of compiling. The name is the hash of the text, so a file is never rewritten
and a renderer change can never hit a stale cache entry.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading
from pathlib import Path
from types import ModuleType

from gompute_core.errors import CompileFailed
from gompute_core.runtime.diskcache import cache_root

_lock = threading.Lock()
_modules: dict[str, ModuleType] = {}


def cache_dir() -> Path:
    """The directory rendered CPU modules live in (``cpu`` under the core's cache root)."""
    return cache_root() / "cpu"


def source_path(source: str) -> Path:
    """Where ``source`` is (or will be) stored."""
    return cache_dir() / f"k{hashlib.sha256(source.encode()).hexdigest()[:40]}.py"


def _write_once(path: Path, source: str) -> None:
    data = source.encode()
    if path.exists() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def load_module(source: str) -> ModuleType:
    """Import the rendered module ``source`` (once per process; ``CompileFailed`` if it fails)."""
    path = source_path(source)
    with _lock:
        mod = _modules.get(path.stem)
        if mod is not None:
            return mod
        try:
            _write_once(path, source)
        except OSError as exc:
            raise CompileFailed(f"cannot write the rendered kernel to {path}: {exc}") from exc
        name = f"_gompute_cpu_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise CompileFailed(f"cannot import the rendered kernel {path}")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        except Exception as exc:
            del sys.modules[name]
            raise CompileFailed(f"{path}: {type(exc).__name__}: {exc}") from exc
        _modules[path.stem] = mod
        return mod

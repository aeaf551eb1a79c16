"""Finding the HIP libraries and importing hip-python with them.

hip-python ``dlopen``s its libraries by bare name (``libhiprtc.so``,
``libamdhip64.so``) on first use, which only finds what the system linker
path holds. ROCm 5.2 as packaged by Debian has no ``libhiprtc.so``: hiprtc
lives inside ``libamdhip64.so.5``, and ``install-rocm.sh`` links
``libhiprtc.so`` to it in a directory of ours. So before hip-python first
loads a library we point its loader (the ``DLL`` global of ``hip.chiprtc`` /
``hip.chip``) at the absolute path found here. Search order for each library:

1. ``$GOMPUTE_HIP_LIBDIR`` (where ``install-rocm.sh`` puts the symlink when set),
2. ``<sys.prefix>/lib/gompute-hip`` (its default: inside the virtual environment),
3. the system linker path (a real ROCm registered with ``ldconfig`` or on ``LD_LIBRARY_PATH``),
4. ``$ROCM_PATH/lib`` and ``/opt/rocm/lib``.
"""

from __future__ import annotations

import ctypes
import functools
import importlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from gompute_core.errors import BackendUnavailable

HIPRTC_LIB = "libhiprtc.so"
HIP_LIB = "libamdhip64.so"
INSTALL_HINT = "run backends/hip/install-rocm.sh, or install ROCm and hip-python"


@dataclass(frozen=True)
class Found:
    """Where a library was found, or every place it was looked for."""

    name: str
    path: str | None
    searched: tuple[str, ...]

    def describe_missing(self) -> str:
        """``"libhiprtc.so not found (looked in ...)"``."""
        return f"{self.name} not found (looked in {', '.join(self.searched)})"


def search_dirs() -> tuple[str, ...]:
    """The directories searched before and after the system linker path, in order."""
    dirs: list[str] = []
    env_dir = os.environ.get("GOMPUTE_HIP_LIBDIR")
    if env_dir:
        dirs.append(env_dir)
    dirs.append(str(Path(sys.prefix) / "lib" / "gompute-hip"))
    dirs.append("<system linker path>")
    rocm = os.environ.get("ROCM_PATH")
    if rocm:
        dirs.append(str(Path(rocm) / "lib"))
    dirs.append("/opt/rocm/lib")
    return tuple(dirs)


def _loadable(path: str) -> bool:
    try:
        ctypes.CDLL(path)
    except OSError:
        return False
    return True


@functools.cache
def find_library(name: str) -> Found:
    """Locate ``name`` along :func:`search_dirs`.

    ``path`` is absolute when found in one of our directories, the bare name
    when the system linker finds it (``dlopen`` by that name then loads it).
    """
    searched = search_dirs()
    for d in searched:
        if d == "<system linker path>":
            if _loadable(name):
                return Found(name, name, searched)  # dlopen by name finds it the same way
            continue
        candidate = Path(d) / name
        if candidate.exists() and _loadable(str(candidate)):
            return Found(name, str(candidate), searched)
    return Found(name, None, searched)


def _bind(library: str, what: str, binding: str, module: str) -> ModuleType:
    """hip-python's ``hip.<module>``, its loader (``hip.<binding>.DLL``) pointed at the
    located ``library`` first; ``BackendUnavailable`` naming what is missing."""
    try:
        loader = importlib.import_module(f"hip.{binding}")
    except ImportError as exc:
        raise BackendUnavailable(f"hip-python not installed ({exc}); {INSTALL_HINT}") from None
    found = find_library(library)
    if found.path is None:
        raise BackendUnavailable(f"{what} unavailable: {found.describe_missing()}; "
                                 f"{INSTALL_HINT}")
    loader.DLL = found.path.encode()
    return importlib.import_module(f"hip.{module}")


@functools.cache
def hiprtc() -> ModuleType:
    """hip-python's ``hip.hiprtc`` bound to the located hiprtc library."""
    return _bind(HIPRTC_LIB, "hiprtc", "chiprtc", "hiprtc")


@functools.cache
def hip() -> ModuleType:
    """hip-python's ``hip.hip`` bound to the located HIP runtime library."""
    return _bind(HIP_LIB, "HIP runtime", "chip", "hip")


def hip_python_version() -> str:
    """The installed hip-python's version (``"6.2.0.499.16"``), or ``""`` when absent."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hip-python")
    except PackageNotFoundError:
        return ""


def require_hip_symbol(symbol: str) -> None:
    """Raise ``BackendUnavailable`` unless the HIP runtime library exports ``symbol``.

    hip-python resolves each function on first call and calls through a NULL
    pointer when the symbol is absent (a segfault), e.g. hip-python 6.x's
    ``hipGetDevicePropertiesR0600`` against ROCm 5.2's ``libamdhip64``; this
    check turns that into a message naming both versions.
    """
    found = find_library(HIP_LIB)
    if found.path is None:
        raise BackendUnavailable(f"HIP runtime unavailable: {found.describe_missing()}")
    if not hasattr(ctypes.CDLL(found.path), symbol):
        raise BackendUnavailable(
            f"hip-python {hip_python_version()} calls {symbol}, which {found.path} does not "
            f"export: the HIP runtime is older than hip-python expects; install ROCm and "
            f"hip-python of the same version (pip install 'hip-python==<ROCm major.minor>.*')")


def require_properties_symbol() -> None:
    """Raise ``BackendUnavailable`` unless the HIP runtime exports ``hipGetDeviceProperties``
    under the name the installed hip-python calls (``...R0600`` from hip-python 6)."""
    major = int(hip_python_version().split(".")[0] or 0)
    require_hip_symbol("hipGetDevicePropertiesR0600" if major >= 6 else "hipGetDeviceProperties")

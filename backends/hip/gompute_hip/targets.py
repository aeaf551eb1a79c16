"""Which ``gfx`` targets the installed compiler supports, asked of the compiler itself.

hiprtc aborts the whole process when asked for a target its LLVM does not
know (ROCm 5.2's hiprtc on ``gfx1100`` or ``gfx942``), so every arch is
checked here first. The list comes from the Code Object Manager (comgr),
the library hiprtc compiles through: ``amd_comgr_get_isa_count`` /
``amd_comgr_get_isa_name`` enumerate exactly the ISAs it can target. A
target is ``gfxNNN`` optionally followed by feature settings
(``gfx90a:sramecc+:xnack-``), as devices report it.
"""

from __future__ import annotations

import ctypes
import functools
import re

from gompute_core.errors import BackendUnavailable, InvalidArgument

from .libs import INSTALL_HINT, find_library

COMGR_LIBS = ("libamd_comgr.so.3", "libamd_comgr.so.2")
"""Sonames hiprtc loads comgr by (ROCm 6.4+ ships major 3, ROCm 5.x-6.3 major 2)."""

_FEATURES = ("sramecc", "xnack")
_TARGET_RE = re.compile(r"^(gfx[0-9a-f]+)((?::[a-z]+[+-])*)$")


def _comgr() -> ctypes.CDLL:
    looked: list[str] = []
    for name in COMGR_LIBS:
        found = find_library(name)
        if found.path is not None:
            return ctypes.CDLL(found.path)
        looked.append(found.describe_missing())
    raise BackendUnavailable(f"hiprtc's code object manager unavailable: {'; '.join(looked)}; "
                             f"{INSTALL_HINT}")


@functools.lru_cache(maxsize=1)
def supported_targets() -> tuple[str, ...]:
    """Base ``gfx`` names the installed compiler can generate code for, in comgr's order.

    Raises ``BackendUnavailable`` when comgr is absent (hiprtc cannot compile then).
    """
    lib = _comgr()
    count = ctypes.c_size_t()
    status = lib.amd_comgr_get_isa_count(ctypes.byref(count))
    if status != 0:
        raise BackendUnavailable(f"amd_comgr_get_isa_count failed (status {status})")
    names: list[str] = []
    for index in range(count.value):
        name = ctypes.c_char_p()
        status = lib.amd_comgr_get_isa_name(ctypes.c_size_t(index), ctypes.byref(name))
        if status != 0 or name.value is None:
            raise BackendUnavailable(f"amd_comgr_get_isa_name({index}) failed (status {status})")
        base = name.value.decode().rpartition("--")[2].split(":")[0]
        if base not in names:
            names.append(base)
    return tuple(names)


def comgr_version() -> str:
    """``"2.4"``: the code object manager's version (part of the compiler identity)."""
    lib = _comgr()
    major, minor = ctypes.c_size_t(), ctypes.c_size_t()
    lib.amd_comgr_get_version(ctypes.byref(major), ctypes.byref(minor))
    return f"{major.value}.{minor.value}"


def validate_target(arch: str) -> str:
    """Return ``arch`` when the installed compiler supports it, else raise ``InvalidArgument``.

    Checked before any hiprtc call: an unknown target would abort the process.
    The message lists the supported targets.
    """
    if not isinstance(arch, str):
        raise InvalidArgument(f"arch must be a string like 'gfx90a', got {arch!r}")
    match = _TARGET_RE.match(arch)
    supported = supported_targets()
    if match is None or match.group(1) not in supported:
        raise InvalidArgument(
            f"arch {arch!r} is not supported by the installed hiprtc; supported targets: "
            f"{', '.join(supported)} (optionally with :sramecc+/- and :xnack+/- features)")
    for feature in match.group(2).split(":")[1:]:
        if feature[:-1] not in _FEATURES:
            raise InvalidArgument(f"arch {arch!r}: unknown target feature {feature!r}; "
                                  f"known: sramecc+/-, xnack+/-")
    return arch

"""NVRTC through ctypes: find the library, compile CUDA C++ to a cubin (or PTX).

Search order: ``$GOMPUTE_NVRTC`` (a file), then the ``nvidia-cuda-nvrtc`` wheel's
``nvidia/*/lib`` directories on ``sys.path`` (which also covers torch's and
CuPy's ``nvidia`` packages), ``$CUDA_HOME``/``$CUDA_PATH``/``/usr/local/cuda``
``lib64``, then the loader's own path, for ``libnvrtc.so.13``, ``.12`` and
``libnvrtc.so``.
"""

from __future__ import annotations

import ctypes
import glob
import hashlib
import os
import re
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from gompute_core.backend import write_atomically
from gompute_core.errors import BackendUnavailable, CompileFailed, InvalidArgument

ENV_NVRTC = "GOMPUTE_NVRTC"
_SONAMES = ("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so")


def candidate_paths() -> list[str]:
    """Every path (or bare soname for the loader) tried, in order."""
    out: list[str] = []
    env = os.environ.get(ENV_NVRTC)
    if env:
        out.append(env)
    for entry in sys.path:
        for lib in sorted(glob.glob(os.path.join(entry, "nvidia", "*", "lib")), reverse=True):
            out += [os.path.join(lib, s) for s in _SONAMES]
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    for root in filter(None, roots):
        out += [os.path.join(root, "lib64", s) for s in _SONAMES]
    return out + list(_SONAMES)


@dataclass(frozen=True)
class CompiledImage:
    """What one NVRTC compilation produced."""

    image: bytes
    format: str  # "cubin" or "ptx"
    target: str  # "sm_90" (cubin) or "compute_90" (ptx)
    log: str


class NVRTC:
    """A loaded libnvrtc: version, supported archs, and :meth:`compile`."""

    def __init__(self, lib: ctypes.CDLL, path: str) -> None:
        self.lib, self.path = lib, path
        major, minor = ctypes.c_int(), ctypes.c_int()
        lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
        self.version = (major.value, minor.value)
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        count = ctypes.c_int()
        self.archs: tuple[int, ...] = ()
        if hasattr(lib, "nvrtcGetNumSupportedArchs") and \
                lib.nvrtcGetNumSupportedArchs(ctypes.byref(count)) == 0:
            arr = (ctypes.c_int * count.value)()
            lib.nvrtcGetSupportedArchs(arr)
            self.archs = tuple(arr)

    @property
    def name(self) -> str:
        """``"nvrtc 13.0"``: the compiler and version, as recorded in artifacts."""
        return f"nvrtc {self.version[0]}.{self.version[1]}"

    def _check(self, code: int, what: str, log: str = "") -> None:
        if code != 0:
            msg = self.lib.nvrtcGetErrorString(code).decode()
            raise CompileFailed(f"{what}: {msg} (nvrtcResult {code})" + (f"\n{log}" if log else ""))

    def target_for(self, arch: int) -> tuple[str, str]:
        """``("cubin", "sm_90")`` when NVRTC knows ``arch``, else PTX for the newest virtual
        arch at or below it (the driver finishes it); InvalidArgument when none is."""
        if not self.archs or arch in self.archs:
            return "cubin", f"sm_{arch}"
        lower = [a for a in self.archs if a <= arch]
        if not lower:
            raise InvalidArgument(
                f"arch: sm_{arch} is older than anything {self.name} supports "
                f"(sm_{min(self.archs)}..sm_{max(self.archs)})")
        return "ptx", f"compute_{max(lower)}"

    def compile(self, source: str, name: str, arch: int,
                options: tuple[str, ...]) -> CompiledImage:
        """Compile ``source`` for ``sm_<arch>``; CompileFailed carries the log."""
        fmt, target = self.target_for(arch)
        lib = self.lib
        prog = ctypes.c_void_p()
        self._check(lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(),
                                           f"{name}.cu".encode(), 0, None, None),
                    "nvrtcCreateProgram")
        try:
            opts = [f"--gpu-architecture={target}", *options]
            arr = (ctypes.c_char_p * len(opts))(*(o.encode() for o in opts))
            code = lib.nvrtcCompileProgram(prog, len(opts), arr)
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            buf = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, buf)
            log = buf.value.decode(errors="replace")
            self._check(code, f"NVRTC rejected kernel {name!r} for {target}", log)
            get_size, get = (("nvrtcGetCUBINSize", "nvrtcGetCUBIN") if fmt == "cubin"
                             else ("nvrtcGetPTXSize", "nvrtcGetPTX"))
            self._check(getattr(lib, get_size)(prog, ctypes.byref(size)), get_size)
            out = ctypes.create_string_buffer(size.value)
            self._check(getattr(lib, get)(prog, out), get)
            image = out.raw if fmt == "cubin" else out.raw.rstrip(b"\0") + b"\0"
            return CompiledImage(image=image, format=fmt, target=target, log=log)
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(prog))


_lock = threading.Lock()
_loaded: NVRTC | None = None
_failure: str | None = None


def load_nvrtc() -> NVRTC:
    """The process's NVRTC (loaded once); BackendUnavailable naming every place looked at."""
    global _loaded, _failure
    with _lock:
        if _loaded is not None:
            return _loaded
        if _failure is None:
            tried = []
            for path in candidate_paths():
                if os.sep in path and not os.path.exists(path):
                    continue
                try:
                    _preload_builtins(path)
                    _loaded = NVRTC(ctypes.CDLL(path), path)
                    return _loaded
                except OSError as exc:
                    tried.append(f"{path} ({exc})")
            _failure = ("libnvrtc not found (set $GOMPUTE_NVRTC, pip install "
                        "nvidia-cuda-nvrtc, or install the CUDA toolkit); tried: "
                        + "; ".join(tried or _SONAMES))
        raise BackendUnavailable(_failure)


def identify(memo_dir: str) -> str:
    """``"nvrtc X.Y"`` of the library :func:`load_nvrtc` would load, without loading it when
    a memo in ``memo_dir`` (keyed by the file's path, size and mtime) already says; so a
    disk-cache hit in a new process costs a ``stat``, not a ``dlopen``."""
    path = next((p for p in candidate_paths() if os.sep in p and os.path.exists(p)), None)
    if path is None:
        return load_nvrtc().name
    st = os.stat(path)
    key = f"{os.path.realpath(path)}|{st.st_size}|{st.st_mtime_ns}"
    memo = os.path.join(memo_dir, "nvrtc-" + hashlib.sha256(key.encode()).hexdigest()[:32])
    if os.path.exists(memo):
        try:
            with open(memo) as f:
                return f.read().strip()
        except OSError:
            pass
    name = load_nvrtc().name
    try:
        os.makedirs(memo_dir, exist_ok=True)
        write_atomically(Path(memo), name.encode())
    except OSError:
        pass
    return name


def _preload_builtins(path: str) -> None:
    """Load ``libnvrtc-builtins`` from NVRTC's own folder first: NVRTC opens it by name at
    compile time, which fails when that folder is not on the loader's path (wheels)."""
    if os.sep not in path:
        return
    for lib in sorted(glob.glob(os.path.join(os.path.dirname(path), "libnvrtc-builtins.so*"))):
        if ".alt." not in lib:
            try:
                ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                continue


def parse_arch(arch: str) -> int:
    """``"sm_90"``, ``"sm90"``, ``"compute_90"`` or ``"90"`` -> 90; InvalidArgument otherwise."""
    m = re.fullmatch(r"(?:sm_?|compute_?)?(\d{2,3})a?", str(arch).strip())
    if not m:
        raise InvalidArgument(f"arch: {arch!r} is not a CUDA arch (expected e.g. 'sm_90')")
    return int(m.group(1))

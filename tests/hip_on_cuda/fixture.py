"""Building, checking and selecting the hip_on_cuda fixture (a test double, never shipped).

The fixture is a ``libamdhip64.so``, ``libhiprtc.so`` and ``libamd_comgr.so.2`` that
implement, over CUDA and NVRTC, exactly the HIP, hiprtc and comgr functions
``gompute_hip`` calls, under the C symbols hip-python resolves for them. It is selected
for one process tree by ``GOMPUTE_HIP_LIBDIR`` (the directory ``gompute_hip.libs``
searches first); :func:`select` sets it after checking that the fixture covers what
``gompute_hip`` calls, so a missing function fails before any test, by name.

Command line (what ``run.sh`` uses): ``python tests/hip_on_cuda/fixture.py check DIR``.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUILD_SCRIPT = HERE / "build.sh"
ENV_LIBDIR = "GOMPUTE_HIP_LIBDIR"

HIP_LIB = "libamdhip64.so"
HIPRTC_LIB = "libhiprtc.so"
COMGR_LIB = "libamd_comgr.so.2"

BINDINGS = {HIP_LIB: "chip.pyx", HIPRTC_LIB: "chiprtc.pyx"}
"""The hip-python source naming, for each Python function, the C symbol it resolves."""

COMGR_FUNCTIONS = frozenset({"amd_comgr_get_isa_count", "amd_comgr_get_isa_name",
                             "amd_comgr_get_version"})
"""What ``gompute_hip.targets`` calls through ctypes."""

EXTRAS = {HIP_LIB: frozenset({"hipGetErrorName", "hipGetErrorString", "hipDriverGetVersion"}),
          HIPRTC_LIB: frozenset({"hiprtcGetErrorString"})}
"""Exported beyond what ``gompute_hip`` calls: the error strings and the driver version
the issue asks for (handy when reading a failure by hand)."""

_SYMBOL_RE = re.compile(r'__init_symbol\(&_(\w+)__funptr,\s*"(\w+)"\)')
_NAME_RE = re.compile(r"\b(?:hip|hiprtc)[A-Z]\w*\b")


class FixtureError(RuntimeError):
    """The fixture is missing, incomplete, or not what ``gompute_hip`` would load."""


def _hip_python_dir() -> Path:
    spec = importlib.util.find_spec("hip")
    if spec is None or not spec.submodule_search_locations:
        raise FixtureError("hip-python is not installed (pip install 'hip-python==6.2.*')")
    return Path(next(iter(spec.submodule_search_locations)))


def binding_symbols(library: str) -> dict[str, str]:
    """``{python function: C symbol}`` of hip-python's binding of ``library``.

    ``hipGetDeviceProperties`` -> ``hipGetDevicePropertiesR0600`` in hip-python 6.2.
    """
    source = _hip_python_dir() / BINDINGS[library]
    if not source.is_file():
        raise FixtureError(f"{source} is missing: the hip-python wheel ships its .pyx sources")
    return dict(_SYMBOL_RE.findall(source.read_text()))


def gompute_hip_sources() -> dict[str, str]:
    """``{path: text}`` of every module of the ``gompute_hip`` package on ``sys.path``."""
    spec = importlib.util.find_spec("gompute_hip")
    if spec is None or not spec.submodule_search_locations:
        raise FixtureError("gompute_hip is not importable (put backends/hip on PYTHONPATH)")
    root = Path(next(iter(spec.submodule_search_locations)))
    return {str(p): p.read_text() for p in sorted(root.rglob("*.py"))}


def required_symbols(sources: dict[str, str]) -> dict[str, dict[str, str]]:
    """``{library: {C symbol: where it is called}}`` for every HIP/hiprtc function named in
    ``sources`` (attribute calls and the names given to ``getattr`` alike)."""
    required: dict[str, dict[str, str]] = {lib: {} for lib in BINDINGS}
    bindings = {lib: binding_symbols(lib) for lib in BINDINGS}
    for path, text in sources.items():
        for number, line in enumerate(text.splitlines(), 1):
            for name in _NAME_RE.findall(line):
                for lib, symbols in bindings.items():
                    if name in symbols:
                        required[lib].setdefault(symbols[name], f"{path}:{number}")
    return required


def exported_functions(path: Path) -> frozenset[str]:
    """The functions ``path`` defines in its dynamic symbol table."""
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as f:
        dynsym = ELFFile(f).get_section_by_name(".dynsym")
        return frozenset(s.name for s in dynsym.iter_symbols()
                         if s["st_info"]["type"] == "STT_FUNC" and s["st_shndx"] != "SHN_UNDEF"
                         and s["st_info"]["bind"] == "STB_GLOBAL")


def missing_functions(libdir: Path, sources: dict[str, str] | None = None) -> list[str]:
    """``"libamdhip64.so lacks hipFoo (called at path:line)"`` for each function that
    ``sources`` (default: ``gompute_hip``'s) call and the fixture in ``libdir`` lacks."""
    required = required_symbols(gompute_hip_sources() if sources is None else sources)
    required[COMGR_LIB] = {name: "gompute_hip/targets.py" for name in COMGR_FUNCTIONS}
    problems = []
    for lib, symbols in required.items():
        path = Path(libdir) / lib
        if not path.is_file():
            problems.append(f"{path} does not exist (build it: bash {BUILD_SCRIPT} {libdir})")
            continue
        exported = exported_functions(path)
        problems += [f"{lib} lacks {symbol} (called at {where})"
                     for symbol, where in sorted(symbols.items()) if symbol not in exported]
    return problems


def build(out_dir: Path, python: str = sys.executable) -> Path:
    """Run ``build.sh`` into ``out_dir`` with NVRTC found by ``python``'s gompute_cuda.

    ``FixtureError`` with the script's message when it fails.
    """
    env = dict(os.environ, PYTHON=python)
    proc = subprocess.run(["bash", str(BUILD_SCRIPT), str(out_dir)], capture_output=True,
                          text=True, env=env)
    if proc.returncode != 0:
        raise FixtureError(f"building the fixture failed:\n{proc.stdout}{proc.stderr}")
    return Path(out_dir)


def build_prerequisites_missing() -> str | None:
    """Why the fixture cannot be built here (no compiler, CUDA headers or NVRTC), or None."""
    if shutil.which(os.environ.get("CC", "cc")) is None:
        return "no C compiler (cc)"
    cuda_root = Path(os.environ.get("CUDA_ROOT", "/usr/local/cuda"))
    if not (cuda_root / "include" / "cuda.h").is_file():
        return f"no CUDA headers ({cuda_root}/include/cuda.h)"
    try:
        from gompute_cuda.nvrtc import load_nvrtc

        load_nvrtc()
    except Exception as exc:  # noqa: BLE001 - any reason NVRTC cannot load is a skip reason
        return f"NVRTC unavailable: {exc}"
    return None


def cuda_driver_present() -> bool:
    """True when the NVIDIA driver library the fixture opens (``libcuda.so.1``) loads."""
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def select(libdir: str | Path) -> Path:
    """Make this process and its children load the fixture in ``libdir``.

    Checks first that it exports every function ``gompute_hip`` calls; raises
    ``FixtureError`` naming each one missing. Must run before ``gompute_hip`` first
    looks for a library (``gompute_hip.libs`` caches what it found).
    """
    libdir = Path(libdir).resolve()
    problems = missing_functions(libdir)
    if problems:
        raise FixtureError("the hip_on_cuda fixture is incomplete:\n  " + "\n  ".join(problems))
    os.environ[ENV_LIBDIR] = str(libdir)
    return libdir


def check_selected(libdir: Path) -> None:
    """Raise ``FixtureError`` unless ``gompute_hip`` resolves every library to ``libdir``."""
    from gompute_hip import libs, targets

    found = {name: libs.find_library(name).path for name in (HIP_LIB, HIPRTC_LIB)}
    found["comgr"] = next((libs.find_library(n).path for n in targets.COMGR_LIBS
                           if libs.find_library(n).path), None)
    wrong = {name: path for name, path in found.items()
             if path is None or Path(path).resolve().parent != Path(libdir).resolve()}
    if wrong:
        raise FixtureError(f"gompute_hip does not load the fixture in {libdir}: {wrong}")


def main(argv: list[str]) -> int:
    """``fixture.py check DIR``: exit 1 naming what is missing or mis-resolved."""
    if len(argv) != 2 or argv[0] != "check":
        print("usage: fixture.py check DIR", file=sys.stderr)
        return 2
    try:
        libdir = select(argv[1])
        check_selected(libdir)
    except FixtureError as exc:
        print(f"hip_on_cuda: {exc}", file=sys.stderr)
        return 1
    print(f"hip_on_cuda: {libdir} covers every HIP, hiprtc and comgr function gompute_hip calls")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

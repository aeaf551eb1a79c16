"""The backend SDK as an enforced contract.

Capabilities are derived from what a device class implements and a half-implemented one
fails when the class is created; every device object has ``close``; the compile cache's
key carries the backend's own identity, so editing ``build()`` misses the disk cache in
the next process; the bundled backends import only the public SDK.
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gompute_core.backend import (
    Buffer,
    Compiler,
    Device,
    Event,
    Graph,
    GraphExec,
    ImmediateStream,
    Stream,
    backend_identity,
)
from gompute_core.errors import UnsupportedBackend

ROOT = Path(__file__).resolve().parent.parent


class _Base(Device):
    """A minimal device: the four required primitives, nothing optional."""

    backend, ordinal, arch = "contract", 0, "host"

    def _alloc(self, nbytes: int) -> Buffer:
        raise NotImplementedError

    def _load(self, artifact: Any, kernel: Any, args: Any) -> Any:
        raise NotImplementedError

    def synchronize(self) -> None:
        pass

    @property
    def stream(self) -> Stream:
        return ImmediateStream(self)


def test_the_minimal_device_has_no_capabilities() -> None:
    assert _Base.capabilities == frozenset()


def test_capabilities_are_derived_from_the_methods_implemented() -> None:
    class Streams(_Base):
        def create_stream(self) -> Stream:
            return ImmediateStream(self)

        def pinned(self, shape: Any, dtype: Any = np.uint8) -> np.ndarray:
            return np.empty(shape, dtype)

        def pin(self, host: np.ndarray) -> bool:
            return True

    assert Streams.capabilities == {"streams", "pinned_memory"}

    class Host(_Base):
        packs_arguments = False

        def host_array(self, buf: Buffer, dtype: np.dtype) -> np.ndarray:
            raise NotImplementedError

    assert Host.capabilities == {"host_memory"}


@pytest.mark.parametrize(("body", "missing"), [
    ("capabilities = frozenset({'events'})", "'events' only in part: create_event"),
    ("def pin(self, host):\n    return True", "'pinned_memory' only in part: pinned"),
    ("packs_arguments = False", "'host_memory' only in part: host_array"),
])
def test_a_half_implemented_capability_fails_naming_the_missing_method(
        body: str, missing: str) -> None:
    namespace: dict[str, Any] = {"_Base": _Base}
    source = "class Half(_Base):\n" + textwrap.indent(body, "    ") + "\n"
    with pytest.raises(UnsupportedBackend, match="Half implements capability " + missing):
        exec(source, namespace)  # noqa: S102 - a class statement, so the check runs as written


def test_a_packing_device_declares_host_memory_and_borrows() -> None:
    """Packed arguments on host memory: declared, with ``host_array`` and ``borrow`` (run
    packs the borrowed arrays' addresses); ``host_array`` alone declares nothing."""
    class Packing(_Base):
        def host_array(self, buf: Buffer, dtype: np.dtype) -> np.ndarray:
            raise NotImplementedError

    assert Packing.capabilities == frozenset()

    class Declared(Packing):
        capabilities = frozenset({"host_memory"})

        def borrow(self, host: np.ndarray) -> Buffer:
            raise NotImplementedError

    assert Declared.capabilities == {"host_memory"}
    with pytest.raises(UnsupportedBackend, match="'host_memory' only in part: borrow"):
        class NoBorrow(Packing):  # noqa: F841 - defining it is what fails
            capabilities = frozenset({"host_memory"})


def test_an_unknown_capability_is_refused() -> None:
    with pytest.raises(UnsupportedBackend, match="unknown capabilities \\['warp_speed'\\]"):
        class Unknown(_Base):  # noqa: F841 - defining it is what fails
            capabilities = frozenset({"warp_speed"})


@pytest.mark.parametrize("base", [Compiler, Device, Buffer, Stream, Event, Graph, GraphExec])
def test_every_sdk_object_has_close(base: type) -> None:
    assert callable(getattr(base, "close", None)), base


def test_backend_identity_names_the_package_version_and_the_module() -> None:
    import gompute_cpu
    import gompute_cpu.compiler

    ident = backend_identity("gompute_cpu.compiler")
    assert gompute_cpu.__version__ == metadata.version("gompute-cpu")
    assert ident.startswith(f"gompute_cpu {gompute_cpu.__version__}; "
                            "gompute_cpu.compiler sha256:"), ident
    assert gompute_cpu.compiler.__file__  # the module was hashed from its file


STALE_PLUGIN = '''
import pathlib

from gompute_core.backend import Availability, BackendInfo, Built, Compiler, hookimpl

IMAGE = {image!r}


class StaleCompiler(Compiler):
    backend = "stale"

    def identity(self):
        return "stalecc 1.0"  # unchanged: only build() changes

    def render(self, kernel, arch):
        return f"// {{kernel.name}}\\n"

    def build(self, source, kernel, arch, options):
        with open(pathlib.Path(__file__).with_name("builds.log"), "a") as log:
            log.write(IMAGE + "\\n")
        return Built(IMAGE.encode(), "bytes")


@hookimpl
def gompute_backend_info():
    return BackendInfo("stale", "0.1", 3, 1, ("map",))


@hookimpl
def gompute_probe():
    return Availability("stale", True)


@hookimpl
def gompute_compiler():
    return StaleCompiler()


@hookimpl
def gompute_device(ordinal):
    raise RuntimeError("compile only")
'''

STALE_SCRIPT = '''
import gompute_core as g
import stale
from gompute_core.plugins import manager


def inc(x):
    return x + g.f32(1)


with manager.isolated():
    assert manager.register(stale, "stale").loaded
    print(g.compile(g.map("stale_inc", g.f32, None, inc), "stale", arch="any").image.decode())
'''


def test_editing_build_misses_the_disk_cache(tmp_path: Path) -> None:
    """Three processes share one disk cache: the second, with the backend unchanged, is
    served from disk (no build); the third, after ``build()`` changed, builds again and gets
    the new image instead of the stale one."""
    env = dict(os.environ, GOMPUTE_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]))
    (tmp_path / "script.py").write_text(STALE_SCRIPT)

    def run(image: str) -> str:
        (tmp_path / "stale.py").write_text(STALE_PLUGIN.format(image=image))
        done = subprocess.run([sys.executable, "script.py"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout.strip()

    assert run("one") == "one"
    assert run("one") == "one"
    assert (tmp_path / "builds.log").read_text().split() == ["one"]  # the disk served it
    assert run("two") == "two"
    assert (tmp_path / "builds.log").read_text().split() == ["one", "two"]


PUBLIC_MODULES = {
    "gompute_core.backend", "gompute_core.codegen", "gompute_core.errors", "gompute_core.types",
    "gompute_core.ir", "gompute_core.ir.kernel", "gompute_core.ir.nodes", "gompute_core.ir.entry",
    "gompute_core.ir.visitor", "gompute_core.ir.uniformity", "gompute_core.ir.intrinsics",
    "gompute_core.ir.walk", "gompute_core.backend.gpu", "gompute_core.workgroup",
}
"""The modules plugins.md names as importable by a backend (section 9; the GPU layer,
section 6.4)."""


def _core_imports(path: Path) -> list[tuple[int, str, str]]:
    """``(line, module, name)`` of every ``from gompute_core... import name`` in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gompute_core"):
            found += [(node.lineno, node.module or "", a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name, "") for a in node.names
                      if a.name.startswith("gompute_core.")]
    return found


def test_bundled_backends_import_only_the_public_sdk() -> None:
    import importlib

    offences = []
    sources = [*(ROOT / "backends").glob("*/gompute_*/**/*.py"),
               *(ROOT / "examples").glob("*/gompute_*/**/*.py")]
    assert len(sources) > 20
    for path in sources:
        for line, module, name in _core_imports(path):
            where = f"{path.relative_to(ROOT)}:{line}"
            if module not in PUBLIC_MODULES:
                offences.append(f"{where}: {module} is not public")
            elif name.startswith("_"):
                offences.append(f"{where}: {module}.{name} is private")
            else:
                exported = getattr(importlib.import_module(module), "__all__", None)
                if exported is not None and name not in exported and name != "nodes":
                    offences.append(f"{where}: {name} is not in {module}.__all__")
    assert not offences, "\n".join(offences)

"""The OpenCL example backend: public imports only, and it runs when an OpenCL device exists.

``examples/gompute-opencl`` is written from ``plugins.md`` alone; every import it makes
from ``gompute_core`` must be one the guide lists as public (section 9). The full
conformance run is ``gompute certify opencl`` (``scripts/test.sh``).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import numpy as np
import pytest

import gompute_core as g
from gompute_core import backend, codegen, errors
from gompute_core.plugins import manager

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "gompute-opencl"

PUBLIC: dict[str, set[str]] = {
    "gompute_core.backend": set(backend.__all__),
    "gompute_core.codegen": set(codegen.__all__),
    "gompute_core.errors": {n for n in vars(errors) if not n.startswith("_")},
    "gompute_core.ir.kernel": {"KernelIR", "KINDS", "ENTRY_ARGS"},
}
"""What plugins.md section 9 lets a backend import, by module."""


def core_imports() -> list[tuple[str, str, str]]:
    """``(file:line, module, name)`` of every import from gompute_core in the example."""
    found = []
    for path in sorted(EXAMPLE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gompute_core"):
                found += [(where, node.module or "", a.name) for a in node.names]
            elif isinstance(node, ast.Import):
                found += [(where, a.name, "") for a in node.names
                          if a.name.startswith("gompute_core")]
    return found


def test_only_public_imports() -> None:
    """Every core name the example imports is public, and the guide names each module."""
    imports = core_imports()
    assert imports, "the example imports nothing from the core?"
    private = [f"{where}: {module}.{name}" for where, module, name in imports
               if name not in PUBLIC.get(module, set())]
    assert not private, "the OpenCL example uses what plugins.md does not document:\n" + \
        "\n".join(private)
    guide = (ROOT / "plugins.md").read_text()
    for module in {m for _, m, _ in imports}:
        assert f"`{module}`" in guide, f"plugins.md does not document {module}"


def test_entry_point_and_priority() -> None:
    """The entry point names the plugin module; the priority is below the CPU backend's."""
    import tomllib

    meta = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())
    assert meta["project"]["entry-points"]["gompute.backends"] == {
        "opencl": "gompute_opencl.plugin"}
    sys.path.insert(0, str(EXAMPLE))
    try:
        from gompute_opencl import plugin
    finally:
        sys.path.remove(str(EXAMPLE))
    assert plugin.gompute_backend_info().priority < 100


def test_runs_on_an_opencl_device() -> None:
    """Registered in-process: a map and a sum against NumPy (skipped without a device)."""
    pytest.importorskip("pyopencl")
    sys.path.insert(0, str(EXAMPLE))
    try:
        from gompute_opencl import plugin
    finally:
        sys.path.remove(str(EXAMPLE))
    with manager.isolated():
        manager.register(plugin, "opencl")
        avail = manager.probe("opencl")
        if not avail.available:
            pytest.skip(avail.reason)
        spec = g.map("ocl_example_scale", g.f64, None, scale)
        with g.Kernel(spec, "opencl") as k:
            x = np.linspace(-1, 1, 10_000)
            np.testing.assert_array_equal(k.run(x.copy()), x * 3.0 - 0.5)
        with g.Kernel(g.sum("ocl_example_total", g.i64), "opencl") as k:
            assert k.run(np.arange(1 << 20, dtype=np.int64)) == (1 << 20) * ((1 << 20) - 1) // 2


def scale(x):
    """``3x - 0.5``."""
    return x * 3.0 - 0.5

"""A pytest plugin registering the "mutant" backend for the conformance self-test.

The mutant is the CPU backend under another name whose programs corrupt what
``run`` produces (the lowest bit of the last output element; the last element
is dropped from reductions), and which declares ``f16``/``f64`` unsupported
and no ``scatter`` kind. Loaded with ``pytest -p conformance_mutant``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from gompute_core.plugins import manager
from gompute_core.plugins.records import Availability, BackendInfo, CompileRequest


class MutantProgram:
    """Delegates to a CPU program, then corrupts what ``run`` produced."""

    def __init__(self, inner: Any, kind: str) -> None:
        self._inner = inner
        self.kind = kind
        self.stream = inner.stream
        self.launch = inner.launch

    def run(self, *args: Any) -> Any:
        """The CPU program's ``run``, corrupted."""
        if self.kind == "reduce":
            data = args[0]
            return self._inner.run(data[:-1] if data.size > 1 else data, *args[1:])
        self._inner.run(*args)
        out = {"map": 0, "map_indexed": 0, "gather": 2, "scatter": 2}.get(self.kind)
        arr = args[out] if out is not None else args[-2]
        if arr.size:
            raw = arr.view(np.uint8)
            raw[-arr.dtype.itemsize] ^= 1
        return None


class MutantDevice:
    """The CPU device whose programs are mutants."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.backend = "mutant"
        self.ordinal = 0
        self.arch = inner.arch

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def program(self, artifact: Any, kernel: Any) -> MutantProgram:
        """A mutant around the CPU program."""
        return MutantProgram(self._inner.program(artifact, kernel), kernel.kind)


class MutantPlugin:
    """The CPU backend under another name, with corrupting programs and fewer capabilities."""

    @manager.hookimpl
    def gompute_backend_info(self) -> BackendInfo:
        """Everything but scatter, f16 and f64."""
        return BackendInfo(name="mutant", version="0", api_version=1, priority=1,
                           kinds=("map", "map_to", "zip", "map_indexed", "reduce", "gather"),
                           unsupported_types=("f16", "f64"))

    @manager.hookimpl
    def gompute_probe(self, backend: str) -> Availability | None:
        """Always available."""
        return Availability("mutant", True) if backend == "mutant" else None

    @manager.hookimpl
    def gompute_compile(self, request: CompileRequest) -> Any:
        """The CPU backend's artifact."""
        if request.backend != "mutant":
            return None
        return manager.compile_artifact(dataclasses.replace(request, backend="cpu"))

    @manager.hookimpl
    def gompute_device(self, backend: str, ordinal: int) -> Any:
        """The CPU device, wrapped."""
        if backend != "mutant":
            return None
        return MutantDevice(manager.open_device("cpu", ordinal))


manager.register(MutantPlugin(), "mutant")

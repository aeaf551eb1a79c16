"""A pytest plugin registering the "mutant" backend for the conformance self-test.

The mutant is the CPU backend under another name whose launches corrupt what
they produce (the lowest bit of the last output element; the last element
is dropped from reductions), and which declares ``f16``/``f64`` unsupported
and no ``scatter`` kind. Loaded with ``pytest -p conformance_mutant``.
"""

from __future__ import annotations

from typing import Any

from gompute_cpu.device import CpuDevice
from gompute_cpu.plugin import CpuCompiler, host_arch

from gompute_core.backend import ArgBuffer, Artifact, Availability, BackendInfo, hookimpl
from gompute_core.backend.device import Stream
from gompute_core.ir.kernel import KernelIR
from gompute_core.plugins import manager
from gompute_core.plugins.records import PLUGIN_API_VERSION

_OUT = {"map": 0, "map_indexed": 0, "map_to": 1, "zip": 2, "gather": 2, "scatter": 2}
"""Which value of a launch is the array it writes."""


class MutantEntry:
    """Runs the CPU launcher, then corrupts its output."""

    def __init__(self, inner: Any, kind: str, args: ArgBuffer) -> None:
        self.inner, self.kind, self.args = inner, kind, args

    def __call__(self, grid: int, stream: Stream) -> None:
        values = self.args.values
        if self.kind == "reduce":
            data, n, partials = values
            self.args.values = (data, max(n - 1, 1), partials)
            self.inner(grid, stream)
            return
        self.inner(grid, stream)
        out = values[_OUT[self.kind]]
        written = {"gather": values[3], "scatter": values[4]}.get(self.kind, values[-1])
        if written:
            out[written - 1:written].view("u1")[0] ^= 1


class MutantDevice(CpuDevice):
    """The CPU device whose launches are mutants."""

    backend = "mutant"

    def _load(self, artifact: Artifact, kernel: KernelIR, args: ArgBuffer) -> MutantEntry:
        return MutantEntry(super()._load(artifact, kernel, args), kernel.kind, args)


class MutantCompiler(CpuCompiler):
    """The CPU compiler under the mutant's name."""

    backend = "mutant"


class MutantPlugin:
    """The CPU backend under another name, with corrupting launches and fewer capabilities."""

    @hookimpl
    def gompute_backend_info(self) -> BackendInfo:
        """Everything but scatter, f16 and f64."""
        return BackendInfo(name="mutant", version="0", api_version=PLUGIN_API_VERSION,
                           priority=1,
                           kinds=("map", "map_to", "zip", "map_indexed", "reduce", "gather"),
                           unsupported_types=("f16", "f64"))

    @hookimpl
    def gompute_probe(self) -> Availability:
        """Always available."""
        return Availability("mutant", True)

    @hookimpl
    def gompute_compiler(self) -> MutantCompiler:
        """The CPU backend's compiler."""
        return MutantCompiler()

    @hookimpl
    def gompute_device(self, ordinal: int) -> MutantDevice:
        """The CPU device, mutated."""
        return MutantDevice(host_arch(), "mutant CPU")


manager.register(MutantPlugin(), "mutant")

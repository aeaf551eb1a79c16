"""The CUDA device: the core's generic GPU device over the ``libcuda`` driver table.

Interop (:mod:`gompute_core.interop`): buffers are ``kDLCUDA`` memory, foreign streams
are ordered through an event, and the legacy default stream needs no ordering (our
streams are blocking streams).
"""

from __future__ import annotations

from gompute_core.backend import Artifact
from gompute_core.backend.gpu import GpuDevice

from .driver import driver
from .nvrtc import parse_arch

CU_STREAM_LEGACY = 1
"""The legacy default stream's handle (what CuPy, torch and numba report for their default
stream): our blocking streams are ordered with it both ways, for free."""


class CudaDevice(GpuDevice):
    """One NVIDIA GPU, in its primary context."""

    backend = "cuda"
    dlpack_device_type = 2  # kDLCUDA
    ordered_streams = frozenset({CU_STREAM_LEGACY})

    def __init__(self, ordinal: int) -> None:
        super().__init__(driver(), ordinal)

    def compatible(self, artifact: Artifact) -> bool:
        """PTX loads anywhere (the driver finishes it); a cubin on its own major
        architecture at the same or a later minor."""
        if artifact.format != "cubin":
            return True
        built, here = parse_arch(artifact.target), parse_arch(self.arch)
        return built // 10 == here // 10 and built <= here

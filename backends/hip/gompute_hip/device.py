"""The HIP device: the core's generic GPU device over the hip-python driver table.

Interop (:mod:`gompute_core.interop`): buffers are ``kDLROCM`` memory (DLPack device
type 10, what CuPy and torch on ROCm export and take), foreign streams are ordered
through an event, and the null stream (0, and 1, what a DLPack consumer asking for "the
default stream" is read as) needs no ordering: our streams are blocking streams.
"""

from __future__ import annotations

from gompute_core.backend import Artifact
from gompute_core.backend.gpu import GpuDevice

from . import libs
from .driver import HipDriver


class HipDevice(GpuDevice):
    """One AMD GPU, made current per thread (``hipSetDevice``)."""

    backend = "hip"
    dlpack_device_type = 10  # kDLROCM
    ordered_streams = frozenset({0, 1})
    grid_waves = 4  # 32 blocks of 256 threads per compute unit

    def __init__(self, ordinal: int) -> None:
        hip = libs.hip()
        libs.require_properties_symbol()
        super().__init__(HipDriver(hip), ordinal)

    def compatible(self, artifact: Artifact) -> bool:
        """Same ``gfx`` target (features such as ``:xnack-`` aside)."""
        return artifact.target.split(":")[0] == self.arch.split(":")[0]

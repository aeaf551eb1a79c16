"""Device buffers (the SDK's five primitives over hip-python) and pinned host memory.

Every check (bounds, freed buffers, host arrays, streams) is the core's
(:class:`gompute_core.backend.Buffer`); HIP failures raise ``CopyFailed``
(``AllocFailed`` for allocation) with ``last_driver_error()`` set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gompute_core.backend import Buffer, pinned_array
from gompute_core.errors import AllocFailed, CopyFailed

from .errors import check

if TYPE_CHECKING:
    from .device import HipDevice
    from .streams import HipStream


class HipBuffer(Buffer):
    """``nbytes`` bytes of device memory on one device (``hipMalloc``)."""

    __slots__ = ()

    def __init__(self, device: HipDevice, nbytes: int) -> None:
        addr = 0
        if nbytes:
            device.make_current()
            addr = int(check(device.hip.hipMalloc(nbytes), f"hipMalloc({nbytes})", AllocFailed))
        super().__init__(device, nbytes, addr)

    def _copyin(self, offset: int, host: np.ndarray, stream: HipStream | None) -> None:
        hip, n = self.device.hip, host.size
        self.device.make_current()
        if stream is None:
            check(hip.hipMemcpyHtoD(self.addr + offset, host, n), f"hipMemcpyHtoD({n})",
                  CopyFailed)
        else:
            check(hip.hipMemcpyHtoDAsync(self.addr + offset, host, n, stream.handle),
                  f"hipMemcpyHtoDAsync({n})", CopyFailed)

    def _copyout(self, offset: int, host: np.ndarray, stream: HipStream | None) -> None:
        hip, n = self.device.hip, host.size
        self.device.make_current()
        if stream is None:
            check(hip.hipMemcpyDtoH(host, self.addr + offset, n), f"hipMemcpyDtoH({n})",
                  CopyFailed)
        else:
            check(hip.hipMemcpyDtoHAsync(host, self.addr + offset, n, stream.handle),
                  f"hipMemcpyDtoHAsync({n})", CopyFailed)

    def _copy_device(self, offset: int, src: Buffer, src_offset: int, nbytes: int,
                     stream: HipStream | None) -> None:
        hip = self.device.hip
        self.device.make_current()
        if stream is None:
            check(hip.hipMemcpyDtoD(self.addr + offset, src.addr + src_offset, nbytes),
                  f"hipMemcpyDtoD({nbytes})", CopyFailed)
        else:
            check(hip.hipMemcpyDtoDAsync(self.addr + offset, src.addr + src_offset, nbytes,
                                         stream.handle), f"hipMemcpyDtoDAsync({nbytes})",
                  CopyFailed)

    def _fill(self, offset: int, nbytes: int, value: int, stream: HipStream | None) -> None:
        hip = self.device.hip
        self.device.make_current()
        if stream is None:
            check(hip.hipMemsetD8(self.addr + offset, value, nbytes), f"hipMemsetD8({nbytes})",
                  CopyFailed)
        else:
            check(hip.hipMemsetD8Async(self.addr + offset, value, nbytes, stream.handle),
                  f"hipMemsetD8Async({nbytes})", CopyFailed)

    def _release(self) -> None:
        if self.addr:
            self.device.make_current()
            check(self.device.hip.hipFree(self.addr), "hipFree", AllocFailed)


def pinned_empty(device: HipDevice, shape: Any, dtype: Any = np.uint8) -> np.ndarray:
    """A page-locked host array (``hipHostMalloc``), so async copies really overlap."""

    def alloc(nbytes: int) -> int:
        device.make_current()
        return int(check(device.hip.hipHostMalloc(nbytes, 0), f"hipHostMalloc({nbytes})",
                         AllocFailed))

    return pinned_array(alloc, device.hip.hipHostFree, shape, dtype)

"""Loaded code objects and the HIP launcher over the core's packed argument buffer.

The launcher passes the core's :class:`~gompute_core.backend.ArgBuffer` whole
through ``HIP_LAUNCH_PARAM_BUFFER_POINTER`` (its layout equals the
compiler's kernarg layout: the tests compare it with every conformance
kernel's code-object metadata). The size passed is the explicit arguments'
exact extent, not the metadata's segment size (rounded up to 4 bytes): the
buffer holds exactly that many meaningful bytes, and the HIP-on-CUDA fixture
showed the rounded size refused (``hipErrorLaunchOutOfResources`` on every
kernel whose params end in a 1- or 2-byte field, as CUDA checks the size).
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any

from gompute_core.backend import ArgBuffer
from gompute_core.errors import KernelNotFound, LaunchFailed, ModuleLoadFailed

from .errors import check

if TYPE_CHECKING:
    from .device import HipDevice
    from .streams import HipStream

MAX_THREADS_PER_LAUNCH = 2**32 - 1
"""HIP requires gridDim.x * blockDim.x < 2**32."""


class HipModule:
    """One code object loaded on one device, with its functions looked up once."""

    def __init__(self, device: HipDevice, image: bytes) -> None:
        self.device = device
        device.make_current()
        self.handle = check(device.hip.hipModuleLoadData(image), "hipModuleLoadData",
                            ModuleLoadFailed)
        self._functions: dict[str, Any] = {}

    def function(self, name: str) -> Any:
        """The ``hipFunction_t`` of entry point ``name`` (``KernelNotFound`` when absent)."""
        f = self._functions.get(name)
        if f is None:
            f = check(self.device.hip.hipModuleGetFunction(self.handle, name.encode()),
                      f"hipModuleGetFunction({name!r})", KernelNotFound)
            self._functions[name] = f
        return f


class HipFunction:
    """One entry point with the ``extra`` array over its argument buffer (built once);
    :meth:`launch` is the one ``hipModuleLaunchKernel`` call of the spec launcher
    (:class:`HipLauncher`) and the raw-kernel launcher (:class:`HipRawLauncher`)."""

    def __init__(self, device: HipDevice, function: Any, name: str, args: ArgBuffer) -> None:
        self.device, self.function, self.name = device, function, name
        hip = device.hip
        self._size = ctypes.c_size_t(args.size)
        self._extra = (ctypes.c_void_p * 5)(
            int(hip.HIP_LAUNCH_PARAM_BUFFER_POINTER), args.address,
            int(hip.HIP_LAUNCH_PARAM_BUFFER_SIZE), ctypes.addressof(self._size),
            int(hip.HIP_LAUNCH_PARAM_END))
        self._extra_addr = ctypes.addressof(self._extra)

    def launch(self, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shared_bytes: int,
               stream: HipStream) -> None:
        """Launch with this geometry on ``stream`` (``LaunchFailed`` with the hipError)."""
        self.device.make_current()
        check(self.device.hip.hipModuleLaunchKernel(self.function, gx, gy, gz, bx, by, bz,
                                                    shared_bytes, stream.handle, None,
                                                    self._extra_addr),
              f"hipModuleLaunchKernel({self.name})", LaunchFailed)


class HipLauncher(HipFunction):
    """A spec kernel's entry; ``launcher(grid, stream)`` launches ``grid`` blocks of the
    kernel's block size with the packed arguments."""

    def __init__(self, device: HipDevice, function: Any, name: str, block: int,
                 args: ArgBuffer) -> None:
        super().__init__(device, function, name, args)
        self.block = block

    def __call__(self, grid: int, stream: HipStream) -> None:
        self.launch(grid, 1, 1, self.block, 1, 1, 0, stream)


class HipRawLauncher(HipFunction):
    """A raw kernel's entry; ``launcher(grid, block, shared_bytes, stream)`` launches it
    with the geometry the core checked and the packed arguments."""

    def __call__(self, grid: tuple[int, int, int], block: tuple[int, int, int],
                 shared_bytes: int, stream: HipStream) -> None:
        self.launch(grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes,
                    stream)

"""The CUDA launcher: ``cuLaunchKernel`` on the core's packed argument buffer.

The argument buffer (:class:`gompute_core.backend.ArgBuffer`) keeps one
address for the program's life, so the ``extra`` array that hands it to the
driver (``CU_LAUNCH_PARAM_BUFFER_POINTER``/``_SIZE``) is built once here.
Context: on the main thread the device's primary context stays pushed (another
device's is swapped out first: :data:`~gompute_cuda.driver.MAIN`); any other
thread pushes it around the call (pycuda aborts a thread that ends with a
context still pushed).
"""

from __future__ import annotations

import ctypes
import threading
from typing import TYPE_CHECKING

from gompute_core.backend import ArgBuffer
from gompute_core.errors import LaunchFailed, set_last_driver_error

from .driver import MAIN, check, cuda, libcuda

if TYPE_CHECKING:
    from .device import CudaDevice
    from .stream import CudaStream

_get_ident = threading.get_ident

CU_LAUNCH_PARAM_BUFFER_POINTER, CU_LAUNCH_PARAM_BUFFER_SIZE, CU_LAUNCH_PARAM_END = 1, 2, 0
CONTEXT_LOST = frozenset({201, 400})
"""``CUDA_ERROR_INVALID_CONTEXT``, ``CUDA_ERROR_INVALID_HANDLE``: what a launch answers when
the current context is not the one our stream and function belong to."""


class CudaFunction:
    """One loaded entry point with the ``extra`` array over its argument buffer; the
    context handling of every launch (:meth:`launch`), shared by the spec launcher
    (:class:`CudaLauncher`) and the raw-kernel launcher (:class:`CudaRawLauncher`)."""

    def __init__(self, device: CudaDevice, cfunction: int, name: str, args: ArgBuffer) -> None:
        self.device, self.name = device, name
        self._size = ctypes.c_size_t(args.size)
        self._extra = (ctypes.c_void_p * 5)(CU_LAUNCH_PARAM_BUFFER_POINTER, args.address,
                                            CU_LAUNCH_PARAM_BUFFER_SIZE,
                                            ctypes.addressof(self._size), CU_LAUNCH_PARAM_END)
        self._extra_ptr = ctypes.c_void_p(ctypes.addressof(self._extra))
        self._cfn = ctypes.c_void_p(cfunction)
        # no argtypes: ints and prebuilt c_void_p objects convert fastest that way
        self._cu_launch = libcuda().cuLaunchKernel
        self._main = device.main_thread

    def launch(self, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shared_bytes: int,
               stream: CudaStream) -> None:
        """``cuLaunchKernel`` with this geometry on ``stream`` in the device's context
        (``LaunchFailed`` with the ``CUresult``)."""
        device = self.device
        if _get_ident() == self._main:
            if MAIN.device is not device:
                device.enter()
            code = self._cu_launch(self._cfn, gx, gy, gz, bx, by, bz, shared_bytes, stream.cptr,
                                   None, self._extra_ptr)
            if code in CONTEXT_LOST and device.reclaim_main_context():
                # another library replaced the main thread's current context (JAX/XLA
                # does): make ours current again and launch once more
                code = self._cu_launch(self._cfn, gx, gy, gz, bx, by, bz, shared_bytes,
                                       stream.cptr, None, self._extra_ptr)
        else:
            device.enter()
            try:
                code = self._cu_launch(self._cfn, gx, gy, gz, bx, by, bz, shared_bytes,
                                       stream.cptr, None, self._extra_ptr)
            finally:
                cuda().Context.pop()
        if code:
            set_last_driver_error("cuda", code)
            check(code, LaunchFailed, f"cuda: launching {self.name!r} with grid "
                                      f"({gx}, {gy}, {gz}), block ({bx}, {by}, {bz}) and "
                                      f"{shared_bytes} bytes of dynamic shared memory")


class CudaLauncher(CudaFunction):
    """A spec kernel's entry; ``launcher(grid, stream)`` launches ``grid`` blocks of the
    kernel's block size with the args."""

    def __init__(self, device: CudaDevice, cfunction: int, name: str, block: int,
                 args: ArgBuffer) -> None:
        super().__init__(device, cfunction, name, args)
        self.block = block

    def __call__(self, grid: int, stream: CudaStream) -> None:
        self.launch(grid, 1, 1, self.block, 1, 1, 0, stream)


class CudaRawLauncher(CudaFunction):
    """A raw kernel's entry; ``launcher(grid, block, shared_bytes, stream)`` launches it
    with the geometry the core checked and the args."""

    def __call__(self, grid: tuple[int, int, int], block: tuple[int, int, int],
                 shared_bytes: int, stream: CudaStream) -> None:
        # the common case inline (main thread, our context current, success): raw launch
        # overhead is measured against pycuda's prepared_async_call
        if _get_ident() == self._main and MAIN.device is self.device:
            gx, gy, gz = grid
            bx, by, bz = block
            if not self._cu_launch(self._cfn, gx, gy, gz, bx, by, bz, shared_bytes,
                                   stream.cptr, None, self._extra_ptr):
                return
        # anything else (another thread or context, a failure: nothing ran) through launch
        self.launch(*grid, *block, shared_bytes, stream)

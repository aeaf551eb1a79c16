"""A loaded kernel and its launch path per kind, with minimal host overhead.

The argument buffer (the kernel's parameters laid out as the C ABI does:
each argument at its alignment) is built once per program and patched in
place per launch with ``struct.pack_into``; the params bytes are re-packed
only when the params object changes (by identity; a custom boundary object
on every launch, see :mod:`gompute_core.runtime.launch_params`); a lock
makes patch-and-launch one step, so threads sharing a program never launch
with each other's arguments. ``run`` stages host data
through pinned memory (grown on demand) and device buffers cached on the
program.
"""

from __future__ import annotations

import ctypes
import struct
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from gompute_core.errors import InvalidArgument, LaunchFailed, set_last_driver_error
from gompute_core.ir.kernel import ENTRY_ARGS, KernelIR
from gompute_core.plugins.records import Artifact
from gompute_core.runtime import checks
from gompute_core.runtime.launch_params import ParamsCache

from .driver import check, cuda, libcuda
from .entries_host import arg_layout, elements_per_block

if TYPE_CHECKING:
    from .device import CudaDevice
    from .memory import CudaBuffer
    from .stream import CudaStream

_get_ident = threading.get_ident

_STALE = object()
"""``_last_p`` when the argument buffer's params must be packed again."""

GRID_WAVES = 8
"""Grid cap for elementwise kinds, in full-occupancy waves: measured on an H200 (2**28 f32
map in place), 8 waves reached 0.94x of a device copy against 0.91x for one wave."""


class CudaProgram:
    """One spec's entry point on one device; ``launch`` per DESIGN.md's signatures."""

    def __init__(self, device: CudaDevice, artifact: Artifact, cfunction: int,
                 kernel: KernelIR) -> None:
        self.device, self.artifact, self.kernel = device, artifact, kernel
        self._function: Any = None
        self.kind = kernel.kind
        self.block = (kernel.block_size, 1, 1)
        self._stream: CudaStream = device.stream
        self._sh = ctypes.c_void_p(self._stream.handle)
        self._main = device._main
        self._fmt, self._params_offset, size = arg_layout(kernel)
        self._args = bytearray(size)
        self._lock = threading.Lock()
        # cuLaunchKernel's "extra" form: one packed argument buffer, patched in place
        self._cargs = (ctypes.c_char * size).from_buffer(self._args)
        self._csize = ctypes.c_size_t(size)
        self._extra = (ctypes.c_void_p * 5)(1, ctypes.addressof(self._cargs), 2,
                                            ctypes.addressof(self._csize), 0)
        self._extra_ptr = ctypes.c_void_p(ctypes.addressof(self._extra))
        self._cfn = ctypes.c_void_p(cfunction)
        self._bs = kernel.block_size
        self._pack = struct.Struct(self._fmt).pack_into
        # no argtypes: ints and prebuilt c_void_p objects convert fastest that way
        self._cu_launch = libcuda().cuLaunchKernel
        self._params = ParamsCache(kernel)
        sizes = {role: np.dtype(t).itemsize for role, t in kernel.value_types}
        # element sizes of the entry's buffers, for the O(1) "does n fit" checks of launch
        self._in_size = sizes.get("T") or sizes.get("In") or sizes["A"]
        self._b_size = sizes.get("B", 0)
        self._out_size = sizes.get("Out") or sizes.get("T", 0)
        self._idx_size = sizes.get("Idx", 0)
        self._last_p: Any = _STALE
        self._per_block = elements_per_block(kernel)
        self._max_blocks = max(1, device.sm_count * GRID_WAVES *
                               (device.max_threads_per_sm // kernel.block_size))
        self._last_n = -1
        self._grid = 1
        self._scratch: dict[str, CudaBuffer] = {}
        self._stage: np.ndarray | None = None
        self.launch = getattr(self, f"_launch_{self.kind}")
        if self.kind != "reduce":
            self.run = getattr(self, f"_run_{self.kind}")

    @property
    def function(self) -> Any:
        """The entry point as a pycuda ``Function`` (its module loaded through pycuda on first
        use; for tools that compare with pycuda's own launch paths)."""
        if self._function is None:
            module = self.device.load_module(self.artifact.image)
            self._function = self.device.function(module, self.artifact.entry)
        return self._function

    # ---- stream ----------------------------------------------------------------------
    @property
    def stream(self) -> CudaStream:
        """The stream launches enqueue on (settable)."""
        return self._stream

    @stream.setter
    def stream(self, value: CudaStream) -> None:
        if getattr(value, "device", None) is not self.device:
            raise InvalidArgument(f"stream: expected a stream of device {self.device.ordinal}, "
                                  f"got {value!r}")
        self._stream, self._sh = value, ctypes.c_void_p(value.handle)

    # ---- params ----------------------------------------------------------------------
    def _set_params(self, p: Any) -> None:
        data = self._params.get(p)
        if self._params_offset >= 0:
            self._args[self._params_offset:self._params_offset + len(data)] = data
        self._last_p = p if self._params.holds(p) else _STALE

    def _culprit(self, *args: Any) -> InvalidArgument:
        """The error naming the launch argument that could not be packed (``args`` in the
        entry's order, :data:`~gompute_core.ir.kernel.ENTRY_ARGS`)."""
        for (name, kind), value in zip(ENTRY_ARGS[self.kind], args, strict=True):
            if kind == "pointer":
                if getattr(value, "freed", False):
                    return InvalidArgument(f"launch: {name} is a buffer used after free()")
                if not isinstance(getattr(value, "ptr", None), int):
                    return InvalidArgument(f"launch: {name} must be a CUDA buffer, got "
                                           f"{type(value).__name__}")
                continue
            try:
                count = checks.count(value, f"launch: {name}")
            except InvalidArgument as exc:
                return exc
            if count >= 2**64:
                return InvalidArgument(f"launch: {name} {count} is not a u64")
        return InvalidArgument(f"launch of {self.kernel.name!r}: arguments {args!r} do not fit "
                               "its entry point")

    @staticmethod
    def _short(name: str, buf: CudaBuffer, need: int, size: int) -> InvalidArgument:
        return InvalidArgument(f"launch: {name} holds {buf.nbytes // size} elements, "
                               f"the launch needs {need}")

    def _grid_for(self, n: int) -> int:
        if n != self._last_n:
            blocks = min(-(-n // self._per_block), self._max_blocks)
            self._grid, self._last_n = blocks, n
        return self._grid

    def _go(self, grid: int) -> None:
        """Launch ``grid`` blocks with the packed arguments (context made current)."""
        if _get_ident() == self._main:
            if not self.device._main_pushed:
                self.device.enter()
            code = self._cu_launch(self._cfn, grid, 1, 1, self._bs, 1, 1, 0, self._sh, None,
                                   self._extra_ptr)
        else:
            self.device.enter()
            try:
                code = self._cu_launch(self._cfn, grid, 1, 1, self._bs, 1, 1, 0, self._sh,
                                       None, self._extra_ptr)
            finally:
                cuda().Context.pop()
        if code:
            self._fail(code, grid)

    def _fail(self, code: int, grid: int) -> None:
        set_last_driver_error("cuda", code)
        check(code, LaunchFailed, f"cuda: launching {self.kernel.name!r} with {grid} "
                                  f"blocks of {self._bs}")

    # ---- launches (O(1) checks only) ----------------------------------------------------
    def _launch_map(self, buf: CudaBuffer, n: int, p: Any = None) -> None:
        with self._lock:  # the argument buffer is shared by every thread
            if p is not self._last_p:
                self._set_params(p)
            if n > 0:
                try:
                    self._pack(self._args, 0, buf.ptr, n)
                    if n * self._in_size > buf.nbytes:
                        raise self._short("buf", buf, n, self._in_size)
                except (AttributeError, struct.error, TypeError):  # free on the happy path
                    raise self._culprit(buf, n) from None
                grid = self._grid if n == self._last_n else self._grid_for(n)
                if _get_ident() == self._main and self.device._main_pushed:
                    code = self._cu_launch(self._cfn, grid, 1, 1, self._bs, 1, 1, 0, self._sh,
                                           None, self._extra_ptr)
                    if code:
                        self._fail(code, grid)
                else:
                    self._go(grid)
            elif n < 0:
                raise InvalidArgument(f"n: must be >= 0, got {n}")

    _launch_map_indexed = _launch_map

    def _launch_map_to(self, inp: CudaBuffer, out: CudaBuffer, n: int, p: Any = None) -> None:
        with self._lock:  # the argument buffer is shared by every thread
            if p is not self._last_p:
                self._set_params(p)
            if n > 0:
                try:
                    self._pack(self._args, 0, inp.ptr, out.ptr, n)
                    if n * self._in_size > inp.nbytes:
                        raise self._short("inp", inp, n, self._in_size)
                    if n * self._out_size > out.nbytes:
                        raise self._short("out", out, n, self._out_size)
                except (AttributeError, struct.error, TypeError):  # free on the happy path
                    raise self._culprit(inp, out, n) from None
                self._go(self._grid if n == self._last_n else self._grid_for(n))
            elif n < 0:
                raise InvalidArgument(f"n: must be >= 0, got {n}")

    def _launch_zip(self, a: CudaBuffer, b: CudaBuffer, out: CudaBuffer, n: int,
                    p: Any = None) -> None:
        with self._lock:  # the argument buffer is shared by every thread
            if p is not self._last_p:
                self._set_params(p)
            if n > 0:
                try:
                    self._pack(self._args, 0, a.ptr, b.ptr, out.ptr, n)
                    if n * self._in_size > a.nbytes:
                        raise self._short("a", a, n, self._in_size)
                    if n * self._b_size > b.nbytes:
                        raise self._short("b", b, n, self._b_size)
                    if n * self._out_size > out.nbytes:
                        raise self._short("out", out, n, self._out_size)
                except (AttributeError, struct.error, TypeError):  # free on the happy path
                    raise self._culprit(a, b, out, n) from None
                self._go(self._grid if n == self._last_n else self._grid_for(n))
            elif n < 0:
                raise InvalidArgument(f"n: must be >= 0, got {n}")

    def _launch_reduce(self, data: CudaBuffer, n: int, partials: CudaBuffer, blocks: int,
                       p: Any = None) -> None:
        with self._lock:  # the argument buffer is shared by every thread
            if p is not self._last_p:
                self._set_params(p)
            if blocks == 0 and n == 0:
                return
            if type(blocks) is not int:
                blocks = checks.count(blocks, "launch: blocks")
            if not 0 < blocks <= 1024 or n < 0:
                raise InvalidArgument(f"blocks: must be in 1..1024 (0 only with n == 0), "
                                      f"got blocks={blocks}, n={n}")
            try:
                self._pack(self._args, 0, data.ptr, n, partials.ptr)
                if n * self._in_size > data.nbytes:
                    raise self._short("data", data, n, self._in_size)
                if blocks * self._in_size > partials.nbytes:
                    raise self._short("partials", partials, blocks, self._in_size)
            except (AttributeError, struct.error, TypeError):  # free on the happy path
                raise self._culprit(data, n, partials) from None
            self._go(blocks)

    def _launch_gather(self, src: CudaBuffer, idx: CudaBuffer, out: CudaBuffer, n: int,
                       bound: int) -> None:
        with self._lock:  # the argument buffer is shared by every thread
            if n > 0:
                try:
                    self._pack(self._args, 0, src.ptr, idx.ptr, out.ptr, n, bound)
                    # gather reads src[< bound] and writes out[< n]; scatter the other way
                    src_n, out_n = (bound, n) if self.kind == "gather" else (n, bound)
                    if src_n * self._in_size > src.nbytes:
                        raise self._short("src", src, src_n, self._in_size)
                    if n * self._idx_size > idx.nbytes:
                        raise self._short("idx", idx, n, self._idx_size)
                    if out_n * self._in_size > out.nbytes:
                        raise self._short("out", out, out_n, self._in_size)
                except (AttributeError, struct.error, TypeError):  # free on the happy path
                    raise self._culprit(src, idx, out, n, bound) from None
                self._go(min(-(-n // self._bs), self._max_blocks))
            elif n < 0:
                raise InvalidArgument(f"n: must be >= 0, got {n}")

    _launch_scatter = _launch_gather

    # ---- run: pinned staging, cached device buffers ---------------------------------------
    def _buf(self, slot: str, nbytes: int) -> CudaBuffer:
        buf = self._scratch.get(slot)
        if buf is None or buf.nbytes < nbytes:
            if buf is not None:
                buf.free()
            buf = self._scratch[slot] = self.device.alloc(max(nbytes, 256))
        return buf

    def _staging(self, nbytes: int) -> np.ndarray:
        if self._stage is None or self._stage.nbytes < nbytes:
            self._stage = self.device.pinned(max(nbytes, 4096), np.uint8)
        return self._stage

    def _up(self, slot: str, host: np.ndarray, stage: np.ndarray, at: int) -> CudaBuffer:
        buf = self._buf(slot, host.nbytes)
        if self.device.register_host(host):
            buf.upload_at_async(0, host, self._stream)
            return buf
        view = stage[at:at + host.nbytes]
        np.copyto(view, host.reshape(-1).view(np.uint8))
        buf.upload_at_async(0, view, self._stream)
        return buf

    def _down(self, buf: CudaBuffer, host: np.ndarray, stage: np.ndarray, at: int) -> None:
        if self.device.register_host(host):
            buf.download_at_async(0, host, self._stream, host.nbytes)
            self._stream.synchronize()
            return
        view = stage[at:at + host.nbytes]
        buf.download_at_async(0, view, self._stream)
        self._stream.synchronize()
        np.copyto(host.reshape(-1).view(np.uint8), view)

    def _run_map(self, data: np.ndarray, p: Any = None) -> None:
        if data.size:
            stage = self._staging(data.nbytes)
            buf = self._up("data", data, stage, 0)
            self.launch(buf, data.size, p)
            self._down(buf, data, stage, 0)

    _run_map_indexed = _run_map

    def _run_map_to(self, inp: np.ndarray, out: np.ndarray, p: Any = None) -> None:
        if inp.size:
            stage = self._staging(max(inp.nbytes, out.nbytes))
            ib = self._up("in", inp, stage, 0)
            ob = self._buf("out", out.nbytes)
            self.launch(ib, ob, inp.size, p)
            self._down(ob, out, stage, 0)

    def _run_zip(self, a: np.ndarray, b: np.ndarray, out: np.ndarray, p: Any = None) -> None:
        if a.size:
            stage = self._staging(a.nbytes + b.nbytes + out.nbytes)
            ab = self._up("a", a, stage, 0)
            bb = self._up("b", b, stage, a.nbytes)
            ob = self._buf("out", out.nbytes)
            self.launch(ab, bb, ob, a.size, p)
            self._down(ob, out, stage, a.nbytes + b.nbytes)

    def _gather_scatter(self, src: np.ndarray, idx: np.ndarray, out: np.ndarray, n: int,
                        bound: int) -> None:
        stage = self._staging(src.nbytes + idx.nbytes + out.nbytes)
        sb = self._up("src", src, stage, 0)
        ib = self._up("idx", idx, stage, src.nbytes)
        ob = self._up("out", out, stage, src.nbytes + idx.nbytes)
        self.launch(sb, ib, ob, n, bound)
        self._down(ob, out, stage, src.nbytes + idx.nbytes)

    def _run_gather(self, src: np.ndarray, idx: np.ndarray, out: np.ndarray) -> None:
        if idx.size:
            self._gather_scatter(src, idx, out, idx.size, src.size)

    def _run_scatter(self, src: np.ndarray, idx: np.ndarray, out: np.ndarray) -> None:
        if src.size and out.size:
            self._gather_scatter(src, idx, out, src.size, out.size)

    def free(self) -> None:
        """Free the program's cached run buffers and drop its pinned staging buffer
        (``Kernel.close`` calls this; a later ``run`` allocates them again)."""
        for buf in self._scratch.values():
            buf.free()
        self._scratch.clear()
        self._stage = None



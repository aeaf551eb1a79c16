"""Loaded code objects and the per-kind launch of one spec's entry point.

``launch`` packs the kernarg segment into one preallocated buffer (layout
from :mod:`gompute_hip.kernargs`, equal to the compiler's) and passes it
whole through ``HIP_LAUNCH_PARAM_BUFFER_POINTER``: O(1) checks, no
allocation. The grid is a grid-stride grid sized to the device; the block
is the spec's ``block_size``, which the kernel reads back from ``blockDim``.
"""

from __future__ import annotations

import ctypes
import threading
from typing import TYPE_CHECKING, Any

from gompute_core.errors import (
    InvalidArgument,
    KernelNotFound,
    LaunchFailed,
    ModuleLoadFailed,
)
from gompute_core.ir.kernel import KernelIR
from gompute_core.runtime import checks
from gompute_core.runtime.launch_params import ParamsCache

from ..kernargs import kernarg_layout
from .errors import check

if TYPE_CHECKING:
    from .device import HipDevice
    from .memory import HipBuffer
    from .streams import HipStream

MAX_THREADS_PER_LAUNCH = 2**32 - 1
"""HIP requires gridDim.x * blockDim.x < 2**32."""

_ARITY = {"map": 3, "map_indexed": 3, "map_to": 4, "zip": 5, "reduce": 5, "gather": 5,
          "scatter": 5}


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


def _addr(buf: HipBuffer, role: str) -> int:
    try:
        return buf.device_addr()
    except AttributeError:
        raise InvalidArgument(f"launch: {role} must be a HIP buffer, got "
                              f"{type(buf).__name__}") from None


def _fits(buf: HipBuffer, role: str, need: int, size: int) -> None:
    """O(1): refuse a launch that would touch ``buf`` past its end."""
    if need * size > buf.nbytes:
        raise InvalidArgument(f"launch: {role} holds {buf.nbytes // size} elements, the launch "
                              f"needs {need}")


class HipProgram:
    """A spec's entry point on one device; ``launch`` takes DESIGN.md's per-kind arguments."""

    def __init__(self, device: HipDevice, module: HipModule, kernel: KernelIR, entry: str) -> None:
        self.device = device
        self.kernel = kernel
        self.kind = kernel.kind
        self.block_size = kernel.block_size
        self.function = module.function(entry)
        self.stream: HipStream = device.stream
        layout = kernarg_layout(kernel)
        self._packer = layout.packer()
        self._has_params = any(s.kind == "params" for s in layout.slots)
        self._args = ctypes.create_string_buffer(max(layout.size, 1))
        self._args_size = ctypes.c_size_t(layout.size)
        hip = device.hip
        self._extra = (ctypes.c_void_p * 5)(
            int(hip.HIP_LAUNCH_PARAM_BUFFER_POINTER), ctypes.addressof(self._args),
            int(hip.HIP_LAUNCH_PARAM_BUFFER_SIZE), ctypes.addressof(self._args_size),
            int(hip.HIP_LAUNCH_PARAM_END))
        self._extra_addr = ctypes.addressof(self._extra)
        self._lock = threading.Lock()
        self._max_blocks = max(1, min(device.multiprocessors * 32,
                                      MAX_THREADS_PER_LAUNCH // self.block_size))
        self._value_sizes = {role: t(0).itemsize for role, t in kernel.value_types}
        self._params = ParamsCache(kernel)

    def grid_for(self, n: int) -> int:
        """Blocks of a grid-stride launch over ``n`` elements on this device."""
        return max(1, min(-(-n // self.block_size), self._max_blocks))

    def _count(self, n: Any, role: str = "n") -> int:
        n = checks.count(n, f"launch: {role}")
        if n >= 2**64:
            raise InvalidArgument(f"launch: {role} {n} is not a u64")
        return n

    def launch(self, *args: Any) -> None:
        """Enqueue one launch on ``self.stream``: no allocation, copy or synchronization."""
        if len(args) != _ARITY[self.kind]:
            raise InvalidArgument(f"launch of {self.kind} kernel {self.kernel.name!r} takes "
                                  f"{_ARITY[self.kind]} arguments, got {len(args)}")
        kind, sz = self.kind, self._value_sizes
        if kind in ("map", "map_indexed"):
            buf, n, p = args
            values = [_addr(buf, "data"), self._count(n)]
            _fits(buf, "data", values[1], sz["T"])
        elif kind == "map_to":
            inp, out, n, p = args
            values = [_addr(inp, "inp"), _addr(out, "out"), self._count(n)]
            _fits(inp, "inp", values[2], sz["In"])
            _fits(out, "out", values[2], sz["Out"])
        elif kind == "zip":
            a, b, out, n, p = args
            values = [_addr(a, "a"), _addr(b, "b"), _addr(out, "out"), self._count(n)]
            for buf, role, size in ((a, "a", sz["A"]), (b, "b", sz["B"]), (out, "out", sz["Out"])):
                _fits(buf, role, values[3], size)
        elif kind == "reduce":
            data, n, partials, blocks, p = args
            blocks, count = self._count(blocks, "blocks"), self._count(n)
            if blocks == 0 and count == 0:
                return  # reduce_blocks(0) == 0: nothing to launch, nothing to write
            if not 1 <= blocks <= 1024:
                raise InvalidArgument(f"launch: reduce blocks must be in 1..1024 (0 only with "
                                      f"n == 0), got blocks={blocks}, n={count}")
            values = [_addr(data, "data"), count, _addr(partials, "partials")]
            _fits(data, "data", count, sz["T"])
            _fits(partials, "partials", blocks, sz["T"])
            self._enqueue(values, p, blocks)
            return
        else:
            src, idx, out, n, bound = args
            values = [_addr(src, "src"), _addr(idx, "idx"), _addr(out, "out"),
                      self._count(n), self._count(bound, "bound")]
            # gather reads src[< bound] and writes out[< n]; scatter the other way round
            src_n, out_n = (values[4], values[3]) if kind == "gather" else values[3:5]
            _fits(src, "src", src_n, sz["T"])
            _fits(idx, "idx", values[3], sz["Idx"])
            _fits(out, "out", out_n, sz["T"])
            p = None
        count = values[-1] if kind not in ("gather", "scatter") else values[3]
        if count == 0:
            return
        self._enqueue(values, p, self.grid_for(count))

    def _enqueue(self, values: list[int], p: Any, blocks: int) -> None:
        packed = self._params.get(p)
        if self._has_params:
            values.append(packed)
        hip = self.device.hip
        with self._lock:  # the kernarg buffer is shared; HIP copies it during the call
            self._packer.pack_into(self._args, 0, *values)
            check(hip.hipModuleLaunchKernel(self.function, blocks, 1, 1, self.block_size, 1, 1,
                                            0, self.stream.handle, None, self._extra_addr),
                  f"hipModuleLaunchKernel({self.kernel.name})", LaunchFailed)

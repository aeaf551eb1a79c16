"""The elementwise kind's arguments as :class:`~.elementwise_layout.Operand` records.

An array operand may be a NumPy array (any strides), a buffer of the kernel's device
(a 1-D array of its elements, or of ``n`` of them when the launch names ``n``), or a
foreign array: one in host memory (NumPy's array interface, DLPack on the CPU) is taken
as a NumPy array; one on the kernel's device through the CUDA Array Interface or DLPack,
strides and all, stream-ordered with its producer like every other kind's operands
(``docs/interop.md``). Nothing is copied here, and every refusal is an
``InvalidArgument`` naming the operand.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import dlpack
from ..backend.buffer import Buffer
from ..errors import InvalidArgument
from ..interop import Foreign, check, device_type, locate, orders_itself
from .elementwise_layout import Operand, c_strides, element_strides

if TYPE_CHECKING:
    from ..backend.device import Device, Stream


def host_operand(arr: np.ndarray, name: str, dtype: np.dtype, writes: bool) -> Operand:
    """A NumPy array as an operand (exact dtype; writable where written)."""
    if isinstance(arr, np.ma.MaskedArray):
        raise InvalidArgument(f"{name}: masked arrays are not supported (the mask would be "
                              f"ignored); pass {name}.filled(fill_value) or {name}.data")
    if isinstance(arr, np.matrix):
        raise InvalidArgument(f"{name}: np.matrix is not supported; pass np.asarray({name})")
    if arr.dtype != dtype:
        raise InvalidArgument(f"{name}: dtype {arr.dtype} does not match the kernel's {dtype}; "
                              f"Gompute never casts silently (pass {name}.astype("
                              f"np.{dtype.name}))")
    if writes and not arr.flags.writeable:
        raise InvalidArgument(f"{name}: the array is read-only but the kernel writes it")
    return Operand(name, dtype, arr.shape, element_strides(name, arr.strides, dtype.itemsize),
                   int(arr.ctypes.data), not arr.flags.writeable, host=arr, keep=arr)


def buffer_operand(buf: Buffer, name: str, dtype: np.dtype, device: Device,
                   n: int | None) -> Operand:
    """A buffer of ``device`` as a 1-D operand of ``n`` elements (default: all it holds)."""
    if buf.device is not device:
        raise InvalidArgument(f"{name}: a buffer of {buf.device!r}; this kernel runs on "
                              f"{device!r}")
    if buf.freed:
        raise InvalidArgument(f"{name}: a buffer used after free()")
    if buf.dtype != dtype:
        raise InvalidArgument(f"{name}: a buffer of {buf.dtype} where {dtype} is declared "
                              f"(allocate it with k.alloc(count, {name!r}))")
    held = buf.nbytes // dtype.itemsize
    count = held if n is None else n
    if count > held:
        raise InvalidArgument(f"{name}: holds {held} elements, the launch needs {count}")
    host = None
    if device.has("host_memory"):
        host = device.host_array(buf, dtype)[:count]
    return Operand(name, dtype, (count,), (1,), buf.addr, False, host=host, buffer=buf,
                   keep=buf)


def _cai_operand(obj: Any, cai: dict[str, Any], name: str, dtype: np.dtype, writes: bool,
                 device: Device) -> Operand:
    try:
        shape = tuple(int(d) for d in cai["shape"])
        adt = np.dtype(cai["typestr"])
        addr, readonly = cai["data"]
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidArgument(f"{name}: malformed __cuda_array_interface__ ({exc})") from None
    if cai.get("mask") is not None:
        raise InvalidArgument(f"{name}: masked CUDA arrays are not supported")
    stream = cai.get("stream") if cai.get("version", 0) >= 3 else None
    if stream == 0:
        raise InvalidArgument(f"{name}: __cuda_array_interface__ stream 0 is disallowed by "
                              "the protocol (use 1 for the legacy default stream)")
    f = Foreign(int(addr or 0), adt, shape, math.prod(shape), bool(readonly),
                (dlpack.KDL_CUDA, -1), stream, obj)
    check(f, name, dtype, writes)
    locate(f, device, name)
    raw = cai.get("strides")
    strides = c_strides(shape) if raw is None else \
        element_strides(name, tuple(int(s) for s in raw), dtype.itemsize)
    return Operand(name, dtype, shape, strides, f.addr, f.readonly, stream=stream, keep=obj)


def _dlpack_operand(obj: Any, name: str, dtype: np.dtype, writes: bool, device: Device,
                    ours: int | None) -> Operand:
    try:
        capsule = obj.__dlpack__(stream=ours, max_version=dlpack.VERSION)
    except TypeError:  # a producer from before DLPack 1.0
        capsule = obj.__dlpack__(stream=ours)
    t = dlpack.consume(capsule, name, strided=True)
    f = Foreign(t.addr, t.dtype, t.shape, math.prod(t.shape), t.readonly, t.device, None,
                t.hold)
    check(f, name, dtype, writes)
    locate(f, device, name)
    strides = c_strides(t.shape) if t.strides is None else t.strides
    return Operand(name, dtype, t.shape, strides, f.addr, f.readonly, keep=t.hold)


def operand(obj: Any, name: str, dtype: np.dtype, writes: bool, device: Device,
            stream: Stream, n: int | None) -> Operand:
    """``obj`` as an operand of ``dtype`` for a kernel on ``device`` (module docstring)."""
    if isinstance(obj, np.ndarray):
        return host_operand(obj, name, dtype, writes)
    if isinstance(obj, Buffer):
        return buffer_operand(obj, name, dtype, device, n)
    kind = device_type(device)
    if kind is not None and kind != dlpack.KDL_CPU:
        if kind != dlpack.KDL_ROCM:
            cai = getattr(obj, "__cuda_array_interface__", None)
            if cai is not None and orders_itself(obj, cai):
                return _cai_operand(obj, cai, name, dtype, writes, device)
        if hasattr(obj, "__dlpack__") and \
                tuple(obj.__dlpack_device__())[0] != dlpack.KDL_CPU:
            return _dlpack_operand(obj, name, dtype, writes, device,
                                   device.stream_handle(stream))
    if hasattr(obj, "__dlpack__") and tuple(obj.__dlpack_device__())[0] == dlpack.KDL_CPU:
        return host_operand(np.from_dlpack(obj), name, dtype, writes)
    if hasattr(obj, "__array_interface__") or hasattr(obj, "__array_struct__"):
        return host_operand(np.asarray(obj), name, dtype, writes)
    if hasattr(obj, "__dlpack_device__") or hasattr(obj, "__cuda_array_interface__"):
        where = dlpack.DEVICE_NAMES.get(tuple(obj.__dlpack_device__())[0], "a device") \
            if hasattr(obj, "__dlpack_device__") else "a CUDA device"
        raise InvalidArgument(f"{name}: the array is on {where}; this kernel runs on "
                              f"{device!r} (copy it to the host, or run the kernel there)")
    raise InvalidArgument(f"{name}: expected an array (NumPy, a {device.backend} buffer, or "
                          "one exposing __cuda_array_interface__, __dlpack__ or "
                          f"__array_interface__), got {type(obj).__name__}")

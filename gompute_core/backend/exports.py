"""Exporting buffers to other libraries: DLPack, the CUDA Array Interface, NumPy's.

The producing half of interop (:mod:`gompute_core.interop` consumes foreign
arrays), in the SDK's layer because :class:`~gompute_core.backend.Buffer`
inherits it: :class:`Exports` gives every buffer and :class:`TypedView`
``__dlpack__``/``__dlpack_device__`` where the device declares a
``dlpack_device_type``, ``__cuda_array_interface__`` (v3) on CUDA and ROCm devices
(CuPy on ROCm reads it too; its ``stream`` is then a ``hipStream_t``) and
``__array_interface__`` on host memory. The array is typed and shaped as the
buffer's element type and count, or as ``buf.typed(dtype, shape)`` says. The
CAI ``stream`` is the device's default stream (where ``launch`` enqueues unless
told otherwise); ``__dlpack__(stream=s)`` makes ``s`` wait for that stream.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import dlpack
from ..errors import InvalidArgument

if TYPE_CHECKING:
    from .buffer import Buffer
    from .device import Device


def device_type(device: Device) -> int | None:
    """``device``'s DLPack device type, None when it declares none (no interop: only its own
    buffers are taken, and they export nothing)."""
    return device.dlpack_device_type


def where(dl_device: tuple[int, int]) -> str:
    """``(type, id)`` as a message names it (``cuda:1``; ``cuda`` when the id is unknown)."""
    name = dlpack.DEVICE_NAMES.get(dl_device[0], f"device type {dl_device[0]}")
    return name if dl_device[1] < 0 else f"{name}:{dl_device[1]}"


def _shape(nbytes: int, dtype: np.dtype, shape: Any) -> tuple[int, ...]:
    count = nbytes // dtype.itemsize
    if shape is None:
        return (count,)
    dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0 for d in dims):
        raise InvalidArgument(f"shape: expected non-negative ints, got {shape!r}")
    dims = tuple(int(d) for d in dims)
    if int(np.prod(dims, dtype=np.int64)) * dtype.itemsize > nbytes:
        raise InvalidArgument(f"shape: {dims} of {dtype} needs "
                              f"{int(np.prod(dims)) * dtype.itemsize} bytes; the buffer holds "
                              f"{nbytes}")
    return dims


class Exports(ABC):
    """The producer protocols of a typed, shaped view of a buffer (``_export_view``)."""

    __slots__ = ()

    @abstractmethod
    def _export_view(self) -> tuple[Buffer, np.dtype, tuple[int, ...]]:
        """The buffer, element type and shape this object exports."""

    def _exporting(self, what: str, missing: type[Exception] = BufferError
                   ) -> tuple[Buffer, np.dtype, tuple[int, ...], int]:
        buf, dtype, shape = self._export_view()
        kind = device_type(buf.device)
        if kind is None:
            raise missing(f"{what}: backend {buf.device.backend!r} declares no DLPack device "
                          "type")
        buf._live(what)
        return buf, dtype, shape, kind

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(device type, ordinal)`` of the memory (DLPack)."""
        buf, _, _, kind = self._exporting("__dlpack_device__")
        return kind, buf.device.ordinal

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None,
                   dl_device: Any = None, copy: Any = None) -> Any:
        """A DLPack capsule viewing this memory (never a copy). ``stream`` is where the
        consumer will use it: that stream is made to wait for the device's stream (-1:
        no ordering; None on CUDA: the legacy default stream)."""
        buf, dtype, shape, kind = self._exporting("__dlpack__")
        here = (kind, buf.device.ordinal)
        if dl_device is not None and tuple(dl_device) != here:
            raise BufferError(f"__dlpack__: the memory is on {where(here)}; exporting to "
                              f"{dl_device} would need a copy")
        if copy:
            raise BufferError("__dlpack__: Gompute buffers export views, never copies")
        device = buf.device
        if kind == dlpack.KDL_CPU:
            if stream is not None:
                raise BufferError(f"__dlpack__: stream must be None for CPU memory, got "
                                  f"{stream!r}")
        elif stream != -1:
            ours = device.stream_handle(device.stream)
            theirs = 1 if stream is None else int(stream)
            if ours is not None and theirs != ours and theirs not in device.ordered_streams:
                device.order_streams(theirs, ours)
        versioned = max_version is not None and tuple(max_version)[0] >= dlpack.VERSION[0]
        return dlpack.export(buf.addr, dtype, shape, here, buf, versioned=versioned)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """CUDA Array Interface v3 (CUDA and ROCm devices); ``stream`` is the device's."""
        buf, dtype, shape, kind = self._exporting("__cuda_array_interface__",
                                                   AttributeError)
        if kind not in (dlpack.KDL_CUDA, dlpack.KDL_CUDA_MANAGED, dlpack.KDL_ROCM):
            raise AttributeError("__cuda_array_interface__: not GPU memory")
        device = buf.device
        return {"shape": shape, "typestr": dtype.str, "data": (buf.addr, False), "version": 3,
                "strides": None, "stream": device.stream_handle(device.stream)}

    @property
    def __array_interface__(self) -> dict[str, Any]:
        """NumPy's array interface (host memory only): ``np.asarray(buf)`` is a view."""
        buf, dtype, shape, kind = self._exporting("__array_interface__", AttributeError)
        if kind != dlpack.KDL_CPU:
            raise AttributeError("__array_interface__: not host memory")
        return {"shape": shape, "typestr": dtype.str, "data": (buf.addr, False), "version": 3,
                "strides": None}


class TypedView(Exports):
    """``buf`` seen as ``shape`` elements of ``dtype`` by other libraries (keeps it alive)."""

    __slots__ = ("buffer", "dtype", "shape")

    def __init__(self, buffer: Buffer, dtype: Any, shape: Any = None) -> None:
        self.buffer = buffer
        self.dtype = np.dtype(dtype)
        self.shape = _shape(buffer.nbytes, self.dtype, shape)

    def _export_view(self) -> tuple[Buffer, np.dtype, tuple[int, ...]]:
        return self.buffer, self.dtype, self.shape

    def __repr__(self) -> str:
        return f"<TypedView {self.shape} {self.dtype} of {self.buffer!r}>"


def buffer_shape(buf: Buffer) -> tuple[Buffer, np.dtype, tuple[int, ...]]:
    """A buffer's own export view: its element type (``uint8`` unless it has one) and
    count, or the shape it was borrowed with."""
    dtype = buf.dtype
    shape = buf.shape if buf.shape is not None else (buf.nbytes // dtype.itemsize,)
    return buf, dtype, shape



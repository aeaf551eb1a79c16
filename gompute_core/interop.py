"""Interoperability: our buffers as other libraries' arrays, theirs as our kernels' operands.

Written once here, so every backend (third parties too) gets it from what its
``Device`` declares: ``dlpack_device_type`` (1 CPU, 2 CUDA, 10 ROCm; None, the
default, opts out), ``stream_handle``/``order_streams`` (stream
ordering with foreign streams), ``pointer_ordinal`` and ``_borrow`` (a
buffer over foreign device memory).

**Producing** (:class:`~gompute_core.backend.exports.Exports`, in the SDK's layer: mixed
into :class:`~gompute_core.backend.Buffer` and
:class:`~gompute_core.backend.exports.TypedView`): ``__dlpack__``/``__dlpack_device__`` everywhere a
device type is declared, ``__cuda_array_interface__`` (v3) on CUDA devices and
``__array_interface__`` on host memory. The array is typed and shaped as the
buffer's element type and count, or as ``buf.typed(dtype, shape)`` says. The
CAI ``stream`` is the device's default stream (where ``launch`` enqueues unless
told otherwise); ``__dlpack__(stream=s)`` makes ``s`` wait for that stream.

**Consuming** (:func:`describe`): a NumPy array, anything with
``__cuda_array_interface__``, ``__dlpack__`` or ``__array_interface__``,
checked (dtype, C-contiguity, writability, length, device type and ordinal)
and wrapped as memory we never free. :func:`as_buffer` and
:func:`from_dlpack` make a borrowed ``Buffer`` explicitly; ``launch`` and
``run`` accept such objects directly (:mod:`gompute_core.kinds.foreign`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dlpack
from .backend.exports import device_type, where
from .errors import InvalidArgument

if TYPE_CHECKING:
    from .backend.buffer import Buffer
    from .backend.device import Device

BACKEND_OF_DEVICE_TYPE = {dlpack.KDL_CPU: "cpu", dlpack.KDL_CUDA: "cuda",
                          dlpack.KDL_CUDA_MANAGED: "cuda", dlpack.KDL_ROCM: "hip"}
"""The backend :func:`as_buffer` opens for a foreign array's DLPack device type."""
_COMPATIBLE = {dlpack.KDL_CUDA: (dlpack.KDL_CUDA, dlpack.KDL_CUDA_MANAGED),
               dlpack.KDL_ROCM: (dlpack.KDL_ROCM,), dlpack.KDL_CPU: (dlpack.KDL_CPU,)}
"""Foreign device types a device of each type computes on."""


# ---- consuming --------------------------------------------------------------------------------
@dataclass
class Foreign:
    """A foreign array: where its memory is and what it holds.

    ``host`` is the flat NumPy view when the memory is the host's; ``stream``
    the producer's stream to order after (CAI v3), None when nothing is
    pending or the producer ordered it itself (DLPack); ``keep`` keeps the
    memory alive (the object, or the consumed DLPack tensor)."""

    addr: int
    dtype: np.dtype
    shape: tuple[int, ...]
    size: int
    readonly: bool
    device: tuple[int, int]
    stream: int | None
    keep: Any
    host: np.ndarray | None = None

    @property
    def nbytes(self) -> int:
        """Bytes of the array."""
        return self.size * self.dtype.itemsize


def _from_host(arr: np.ndarray, role: str) -> Foreign:
    if not arr.flags.c_contiguous:
        raise InvalidArgument(f"{role}: the array is not C-contiguous; pass a contiguous copy")
    flat = arr.reshape(-1)
    return Foreign(int(arr.ctypes.data), arr.dtype, arr.shape, arr.size,
                   not arr.flags.writeable, (dlpack.KDL_CPU, 0), None, arr, flat)


def cai_key(cai: dict[str, Any]) -> tuple[Any, ...]:
    """What identifies the memory a CUDA Array Interface describes."""
    return cai["data"], cai["shape"], cai["typestr"], cai.get("strides")


def from_cai(obj: Any, cai: dict[str, Any], role: str) -> Foreign:
    """Describe ``obj`` from its ``__cuda_array_interface__`` ``cai`` (ordinal -1:
    found by the device from the pointer)."""
    try:
        shape = tuple(int(d) for d in cai["shape"])
        dtype = np.dtype(cai["typestr"])
        addr, readonly = cai["data"]
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidArgument(f"{role}: malformed __cuda_array_interface__ ({exc})") from None
    if cai.get("mask") is not None:
        raise InvalidArgument(f"{role}: masked CUDA arrays are not supported")
    strides = cai.get("strides")
    size = math.prod(shape)
    if strides is not None and size > 1:
        expect = dtype.itemsize
        for n, st in zip(reversed(shape), reversed(tuple(strides)), strict=True):
            if n > 1 and st != expect:
                raise InvalidArgument(f"{role}: the array is not C-contiguous; pass a "
                                      "contiguous copy")
            expect *= n
    stream = cai.get("stream") if cai.get("version", 0) >= 3 else None
    if stream == 0:
        raise InvalidArgument(f"{role}: __cuda_array_interface__ stream 0 is disallowed by "
                              "the protocol (use 1 for the legacy default stream)")
    return Foreign(int(addr or 0), dtype, shape, size, bool(readonly), (dlpack.KDL_CUDA, -1),
                   stream, obj)


def orders_itself(obj: Any, cai: dict[str, Any]) -> bool:
    """Whether ``obj``'s CUDA Array Interface ``cai`` is the one to consume it by: a v3
    interface names the stream its data is pending on; an older one names none and
    promises nothing (JAX's and torch's are v2: JAX does not wait for the computation
    producing the array, torch's may be pending on a side stream), so an object that also
    speaks DLPack is taken through ``__dlpack__(stream=ours)``, where the producer orders
    itself before our stream."""
    return cai.get("version", 0) >= 3 or not hasattr(obj, "__dlpack__")


def _readonly(cai: dict[str, Any]) -> bool:
    """The read-only flag of a CUDA Array Interface (False where it is malformed: the
    interface is not what describes the array then)."""
    try:
        return bool(cai["data"][1])
    except (KeyError, TypeError, IndexError):
        return False


def cuda_interface(obj: Any, role: str) -> dict[str, Any] | None:
    """``obj.__cuda_array_interface__``, or None when it has none. A producer whose
    interface raises (torch for bfloat16, or for a tensor that requires grad) gives None
    when it also speaks DLPack (described that way, checked there), else an
    ``InvalidArgument`` naming ``role`` and the producer's reason."""
    try:
        return getattr(obj, "__cuda_array_interface__", None)  # type: ignore[no-any-return]
    except Exception as exc:
        if hasattr(obj, "__dlpack__"):
            return None
        raise InvalidArgument(f"{role}: its __cuda_array_interface__ failed "
                              f"({type(exc).__name__}: {exc})") from None


class _HostTensor:
    """A consumed host DLPack tensor as NumPy sees it (``np.asarray``): the view keeps this
    object, and so the producer's memory (``hold``), alive."""

    def __init__(self, t: dlpack.Tensor) -> None:
        self.hold = t.hold
        self.__array_interface__ = {"shape": t.shape, "typestr": t.dtype.str,
                                    "data": (t.addr, t.readonly), "version": 3}


def _dlpack(obj: Any, role: str, kind: int | None, stream: int | None) -> Foreign:
    dev = tuple(obj.__dlpack_device__())
    if dev[0] != dlpack.KDL_CPU and kind is not None and \
            dev[0] not in _COMPATIBLE.get(kind, (kind,)):
        raise InvalidArgument(f"{role}: the array is on {where(dev)}, not on this kernel's "
                              f"{dlpack.DEVICE_NAMES.get(kind, kind)} device")
    host = dev[0] == dlpack.KDL_CPU
    if host:
        stream = None  # the protocol's only stream for host memory
    try:
        capsule = obj.__dlpack__(stream=stream, max_version=dlpack.VERSION)
    except TypeError:  # a producer from before DLPack 1.0
        capsule = obj.__dlpack__(stream=stream)
    t = dlpack.consume(capsule, role)  # a type NumPy lacks (bfloat16) is refused here
    if host:
        return _from_host(np.asarray(_HostTensor(t)), role)
    size = math.prod(t.shape)
    return Foreign(t.addr, t.dtype, t.shape, size, t.readonly, t.device, None, t.hold)


def _host_interface(obj: Any, role: str) -> np.ndarray:
    """The NumPy view of an object exposing ``__array_interface__`` (or
    ``__array_struct__``); a mask (NumPy would drop it) or an interface NumPy refuses (no
    ``typestr`` or ``shape``, a NULL pointer to elements) is an ``InvalidArgument`` naming
    ``role``."""
    ai = getattr(obj, "__array_interface__", None)
    if isinstance(ai, dict):
        if ai.get("mask") is not None:
            raise InvalidArgument(f"{role}: the array interface has a mask (it would be "
                                  "ignored); pass the unmasked data or fill the masked "
                                  "elements first")
    try:
        return np.asarray(obj)
    except (ValueError, TypeError, KeyError) as exc:
        raise InvalidArgument(f"{role}: malformed __array_interface__ ({exc})") from None


def describe(obj: Any, role: str, kind: int | None = None,
             stream: int | None = None) -> Foreign:
    """Describe a foreign array for a consumer on a device of DLPack type ``kind``
    (``stream``: the consumer's stream handle, passed to ``__dlpack__``). NumPy arrays
    and host-memory producers give a NumPy view; on a CUDA consumer the CUDA Array
    Interface is preferred (no capsule), DLPack otherwise, and DLPack also where the
    interface is older than v3 (:func:`orders_itself`)."""
    if isinstance(obj, np.ndarray):
        return _from_host(obj, role)
    if isinstance(obj, np.generic):
        raise InvalidArgument(f"{role}: a NumPy scalar ({type(obj).__name__}) is not an array "
                              "(its memory would be a copy, written and dropped); pass an "
                              "array, np.array([x])")
    if kind != dlpack.KDL_ROCM:
        cai = cuda_interface(obj, role)
        if cai is not None:
            if orders_itself(obj, cai):
                return from_cai(obj, cai, role)
            f = _dlpack(obj, role, kind, stream)
            f.readonly = f.readonly or _readonly(cai)  # JAX's arrays say so only there
            return f
    if hasattr(obj, "__dlpack__"):
        return _dlpack(obj, role, kind, stream)
    if hasattr(obj, "__array_interface__") or hasattr(obj, "__array_struct__"):
        return _from_host(_host_interface(obj, role), role)
    raise InvalidArgument(f"{role}: expected a NumPy array, a Gompute buffer or an array "
                          "exposing __cuda_array_interface__, __dlpack__ or "
                          f"__array_interface__, got {type(obj).__name__}")


def check(f: Foreign, role: str, dtype: np.dtype, writable: bool) -> None:
    """The checks a NumPy argument gets: dtype equal to the spec's, writable where written."""
    if f.dtype != dtype:
        raise InvalidArgument(f"{role}: dtype {f.dtype} does not match the spec's {dtype}; "
                              "Gompute never casts silently")
    if writable and f.readonly:
        raise InvalidArgument(f"{role}: the array is read-only but the kernel writes it")


def locate(f: Foreign, device: Device, role: str) -> None:
    """``InvalidArgument`` unless ``f``'s memory is ``device``'s (type and ordinal)."""
    kind = device_type(device)
    here = (kind or 0, device.ordinal)
    if kind is None:
        raise InvalidArgument(f"{role}: backend {device.backend!r} takes only its own buffers "
                              "(it declares no DLPack device type)")
    if f.device[0] not in _COMPATIBLE.get(kind, (kind,)):
        raise InvalidArgument(f"{role}: the array is on {where(f.device)}; this kernel runs "
                              f"on {where(here)} ({device!r})")
    if kind == dlpack.KDL_CPU or not f.size:
        return
    if f.device[1] < 0:  # CUDA Array Interface: ask the driver where the pointer lives
        ordinal = device.pointer_ordinal(f.addr)
        if ordinal is None:
            raise InvalidArgument(f"{role}: address {f.addr:#x} is not device memory of "
                                  f"{device.backend}")
        f.device = (f.device[0], ordinal)
    if f.device[1] != device.ordinal:
        raise InvalidArgument(f"{role}: the array is on {where(f.device)}; this kernel runs "
                              f"on {where(here)} ({device!r})")


def borrow(f: Foreign, device: Device) -> Buffer:
    """A borrowed buffer (``owned=False``) of ``device`` over ``f``'s memory, typed and
    shaped as ``f`` and read-only as ``f``; it keeps the producer's object alive and never
    frees the memory."""
    if f.host is not None:
        buf = device.borrow(f.host)
    else:
        buf = device._borrow(f.addr, f.nbytes)
        if buf.owned:
            raise InvalidArgument(f"{device.backend}: _borrow returned an owned buffer")
    buf.keep, buf.dtype, buf.shape, buf.readonly = f.keep, f.dtype, f.shape, f.readonly
    return buf


def as_buffer(obj: Any, backend: str | None = None) -> Buffer:
    """A borrowed buffer over a foreign array's memory, on the device the array is on
    (``backend`` default: by its DLPack device type: ``cpu``, ``cuda``, ``hip``). The
    buffer never frees the memory; it keeps ``obj`` (or its DLPack tensor) alive."""
    from .backend.buffer import Buffer
    from .plugins import manager

    if isinstance(obj, Buffer):
        return obj
    f = describe(obj, "as_buffer")
    kind = f.device[0]
    name = backend or BACKEND_OF_DEVICE_TYPE.get(kind)
    if name is None:
        raise InvalidArgument(f"as_buffer: no backend known for {where(f.device)}; pass "
                              "backend=")
    ordinal = f.device[1]
    if ordinal < 0:
        ordinal = manager.open_device(name, 0).pointer_ordinal(f.addr)
        if ordinal is None:
            raise InvalidArgument(f"as_buffer: address {f.addr:#x} is not {name} memory")
    device = manager.open_device(name, ordinal)
    locate(f, device, "as_buffer")
    if f.stream is not None:
        wait_for(device, f.stream, device.stream_handle(device.stream))
    return borrow(f, device)


def from_dlpack(obj: Any, backend: str | None = None) -> Buffer:
    """A borrowed buffer over ``obj``'s memory through DLPack (``__dlpack__``), on
    ``backend``'s device ``obj.__dlpack_device__()`` names; ``obj``'s pending work is
    ordered before the device's stream."""
    from .plugins import manager

    if not hasattr(obj, "__dlpack__"):
        raise InvalidArgument(f"from_dlpack: {type(obj).__name__} has no __dlpack__")
    kind, ordinal = (int(v) for v in obj.__dlpack_device__())
    name = backend or BACKEND_OF_DEVICE_TYPE.get(kind)
    if name is None:
        raise InvalidArgument(f"from_dlpack: no backend known for {where((kind, ordinal))}; "
                              "pass backend=")
    device = manager.open_device(name, ordinal if kind != dlpack.KDL_CPU else 0)
    mine = device_type(device)
    f = _dlpack(obj, "from_dlpack", mine,
                None if mine == dlpack.KDL_CPU else device.stream_handle(device.stream))
    locate(f, device, "from_dlpack")
    return borrow(f, device)


def wait_for(device: Device, theirs: int, ours: int | None) -> None:
    """Order work later enqueued on our stream ``ours`` after ``theirs``' pending work
    (nothing to do when they are one stream or the device orders them already)."""
    if ours is not None and theirs != ours and theirs not in device.ordered_streams:
        device.order_streams(ours, theirs)

"""DLPack capsules through ctypes: producing them for our buffers, consuming foreign ones.

The structures are ``dlpack.h``'s (v1.x): ``DLTensor``, the legacy
``DLManagedTensor`` (capsule name ``"dltensor"``) and
``DLManagedTensorVersioned`` (``"dltensor_versioned"``, with the read-only
flag). A consumer renames the capsule it consumed (``"used_dltensor"``,
``"used_dltensor_versioned"``) and calls the managed tensor's ``deleter``
when done; a capsule dropped unconsumed calls it from its destructor.

* :func:`export` builds a managed tensor over memory we own, keeps the
  Python objects it points into alive until the deleter runs, and returns the
  capsule.
* :func:`consume` reads a foreign capsule, takes ownership of it (renames it)
  and returns what it describes with a :class:`Hold` whose collection calls
  the producer's deleter: it never frees memory itself.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import InvalidArgument

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_ROCM, KDL_ROCM_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 10, 11, 13
DEVICE_NAMES = {KDL_CPU: "cpu", KDL_CUDA: "cuda", KDL_CUDA_HOST: "cuda_host",
                KDL_ROCM: "rocm", KDL_ROCM_HOST: "rocm_host", KDL_CUDA_MANAGED: "cuda_managed"}
"""DLPack device types by number (``DLDeviceType``), as the messages name them."""
FLAG_READ_ONLY = 1
VERSION = (1, 0)
"""The DLPack version this module produces and understands."""

_INT, _UINT, _FLOAT, _COMPLEX, _BOOL = 0, 1, 2, 5, 6
_KIND_CODES = {"i": _INT, "u": _UINT, "f": _FLOAT, "c": _COMPLEX, "b": _BOOL}
_CODE_KINDS = {code: kind for kind, code in _KIND_CODES.items()}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _Deleter)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _Deleter), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


# our own function objects over the C API (ctypes.pythonapi's are shared with other code,
# which may set other argtypes on them)
_api = ctypes.PyDLL(ctypes.pythonapi._name, handle=ctypes.pythonapi._handle)  # type: ignore[attr-defined]
_new = _api["PyCapsule_New"]
_new.argtypes, _new.restype = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p], ctypes.py_object
_is_valid = _api["PyCapsule_IsValid"]
_is_valid.argtypes, _is_valid.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_int
_get = _api["PyCapsule_GetPointer"]
_get.argtypes, _get.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_void_p
_set_name = _api["PyCapsule_SetName"]
_set_name.argtypes, _set_name.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_int
# the capsule destructor gets the dying capsule: raw pointers only, no reference taken
_raw_is_valid = _api["PyCapsule_IsValid"]
_raw_is_valid.argtypes, _raw_is_valid.restype = [ctypes.c_void_p, ctypes.c_char_p], ctypes.c_int
_raw_get = _api["PyCapsule_GetPointer"]
_raw_get.argtypes, _raw_get.restype = [ctypes.c_void_p, ctypes.c_char_p], ctypes.c_void_p

LEGACY, VERSIONED = b"dltensor", b"dltensor_versioned"
USED_LEGACY, USED_VERSIONED = b"used_dltensor", b"used_dltensor_versioned"


_BFLOAT = 4


def dtype_of(code: int, bits: int, lanes: int, role: str = "DLPack") -> np.dtype:
    """The NumPy dtype of a ``DLDataType`` (``InvalidArgument`` naming ``role`` for one
    NumPy lacks: bfloat16, vectors, odd widths)."""
    kind = _CODE_KINDS.get(code)
    if kind is None or lanes != 1 or bits % 8:
        what = f"bfloat{bits}" if code == _BFLOAT and lanes == 1 else \
            f"(code {code}, {bits} bits, {lanes} lanes)"
        raise InvalidArgument(f"{role}: the DLPack data type {what} has no NumPy equivalent "
                              "and no Gompute type; convert it first (a float32 copy, say)")
    return np.dtype(f"{kind}{bits // 8}") if kind != "b" else np.dtype(np.bool_)


def data_type(dtype: np.dtype) -> DLDataType:
    """``dtype`` as a ``DLDataType``."""
    code = _KIND_CODES.get(dtype.kind)
    if code is None:
        raise InvalidArgument(f"DLPack: cannot export dtype {dtype}")
    return DLDataType(code, dtype.itemsize * 8, 1)


# ---- producing ---------------------------------------------------------------------------
_exports: dict[int, tuple[Any, ...]] = {}
"""Managed-tensor address -> everything it points into, alive until its deleter runs."""
_exports_lock = threading.Lock()


def _delete(address: int | None) -> None:
    with _exports_lock:
        _exports.pop(address or 0, None)


_deleter = _Deleter(_delete)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(capsule: int) -> None:
    """An unconsumed capsule dies: run the deleter (a consumed one was renamed)."""
    for name in (LEGACY, VERSIONED):
        if _raw_is_valid(capsule, name):
            _delete(_raw_get(capsule, name))
            return


def export(addr: int, dtype: np.dtype, shape: tuple[int, ...], device: tuple[int, int],
           owner: Any, *, versioned: bool, readonly: bool = False) -> Any:
    """A DLPack capsule over ``addr`` (C-contiguous ``shape`` of ``dtype`` on
    ``device``); ``owner`` stays alive until the consumer calls the deleter."""
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    tensor = DLTensor(ctypes.c_void_p(addr or None), DLDevice(*device), len(shape),
                      data_type(dtype), dims, None, 0)
    if versioned:
        managed: Any = DLManagedTensorVersioned(DLPackVersion(*VERSION), None, _deleter,
                                                FLAG_READ_ONLY if readonly else 0, tensor)
    else:
        managed = DLManagedTensor(tensor, None, _deleter)
    address = ctypes.addressof(managed)
    with _exports_lock:
        _exports[address] = (managed, dims, owner)
    return _new(address, VERSIONED if versioned else LEGACY,
                ctypes.cast(_capsule_destructor, ctypes.c_void_p))


# ---- consuming ---------------------------------------------------------------------------
class Hold:
    """Ownership of a consumed managed tensor: the producer's deleter runs when this is
    collected (memory we never owned is never freed by us)."""

    __slots__ = ("_address", "_deleter", "__weakref__")

    def __init__(self, address: int, deleter: Any) -> None:
        self._address, self._deleter = address, deleter

    def __del__(self) -> None:
        deleter, self._deleter = self._deleter, None
        if deleter:
            deleter(self._address)


@dataclass(frozen=True)
class Tensor:
    """What a consumed capsule describes (C-contiguity already checked)."""

    addr: int
    dtype: np.dtype
    shape: tuple[int, ...]
    device: tuple[int, int]
    readonly: bool
    hold: Hold
    strides: tuple[int, ...] | None = None
    """Element strides (only when consumed ``strided``; None: C-contiguous)."""


def consume(capsule: Any, role: str, *, strided: bool = False) -> Tensor:
    """Take ownership of a DLPack capsule and describe it; ``InvalidArgument`` (naming
    ``role``) for a used capsule or, unless ``strided`` (the tensor's element strides are
    then returned), a tensor that is not C-contiguous."""
    if _is_valid(capsule, VERSIONED):
        address = _get(capsule, VERSIONED)
        managed: Any = DLManagedTensorVersioned.from_address(address)
        if managed.version.major > VERSION[0]:
            raise InvalidArgument(f"{role}: DLPack version {managed.version.major}."
                                  f"{managed.version.minor} is newer than this reader's")
        readonly, used = bool(managed.flags & FLAG_READ_ONLY), USED_VERSIONED
    elif _is_valid(capsule, LEGACY):
        address = _get(capsule, LEGACY)
        managed, readonly, used = DLManagedTensor.from_address(address), False, USED_LEGACY
    else:
        raise InvalidArgument(f"{role}: __dlpack__ returned {capsule!r}, not an unused DLPack "
                              "capsule")
    _set_name(capsule, used)
    hold = Hold(address, managed.deleter)
    t = managed.dl_tensor
    shape = tuple(t.shape[i] for i in range(t.ndim))
    dtype = dtype_of(t.dtype.code, t.dtype.bits, t.dtype.lanes, role)
    if strided:
        strides = tuple(t.strides[i] for i in range(t.ndim)) if t.strides else None
        return Tensor((t.data or 0) + t.byte_offset, dtype, shape,
                      (t.device.device_type, t.device.device_id), readonly, hold, strides)
    if t.strides and any(n > 1 for n in shape):
        expect = dtype.itemsize
        for i in reversed(range(t.ndim)):
            if shape[i] > 1 and t.strides[i] * dtype.itemsize != expect:
                raise InvalidArgument(f"{role}: the tensor is not C-contiguous; pass a "
                                      "contiguous copy (.contiguous(), ascontiguousarray)")
            expect *= shape[i]
    return Tensor((t.data or 0) + t.byte_offset, dtype, shape,
                  (t.device.device_type, t.device.device_id), readonly, hold)

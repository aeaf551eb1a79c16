"""Argument checks of ``Kernel.run``: done before anything is touched, O(1) each.

Arrays must be NumPy arrays of exactly the spec's dtype (never a silent
cast), C-contiguous (never a silent copy) and writable where written. Any
shape is accepted and treated as the flat sequence of its elements; arrays
that must correspond element by element (map_to's ``inp``/``out``, zip's
``a``/``b``/``out``, gather's ``idx``/``out``, scatter's ``src``/``idx``)
must have the same shape. Every failure is an ``InvalidArgument`` naming
the argument.

Given the kernel's device, other arrays are accepted too
(:func:`gompute_core.kinds.foreign.run_array`): anything exposing the CUDA
Array Interface, DLPack or NumPy's array interface, with the same checks; it
comes back as a NumPy view (host memory) or a ``DeviceArray`` (the device's
memory, used in place).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidArgument
from ..kinds.base import count
from ..kinds.foreign import run_array, spans_overlap

if TYPE_CHECKING:
    from ..backend.device import Device, Stream
    from ..kinds.foreign import DeviceArray


def array(arg: Any, role: str, dtype: np.dtype, writable: bool,
          at: tuple[Device, Stream] | None = None) -> Any:
    """``arg`` as a flat view, after checking type, dtype, contiguity and writability; with
    ``at`` (the kernel's device and stream), a foreign array as a flat view or a
    ``DeviceArray``."""
    if type(arg) is not np.ndarray:
        if at is not None and not isinstance(arg, np.ndarray):
            return run_array(arg, role, dtype, writable, *at)
        _refuse_non_ndarray(arg, role, dtype)
    if arg.dtype != dtype:
        raise InvalidArgument(f"{role}: dtype {arg.dtype} does not match the spec's {dtype}; "
                              f"Gompute never casts silently (pass {role}.astype("
                              f"np.{dtype.name}))")
    flags = arg.flags
    if not flags.c_contiguous:
        raise InvalidArgument(f"{role}: the array is not C-contiguous; pass "
                              f"np.ascontiguousarray({role})")
    if writable and not flags.writeable:
        raise InvalidArgument(f"{role}: the array is read-only but the kernel writes it")
    return arg if arg.ndim == 1 else arg.reshape(-1)


def _refuse_non_ndarray(arg: Any, role: str, dtype: np.dtype) -> None:
    """Accept plain ndarray subclasses (``np.memmap``); refuse the ones whose meaning a
    flat buffer would lose."""
    if not isinstance(arg, np.ndarray):
        raise InvalidArgument(f"{role}: expected a NumPy array of {dtype}, "
                              f"got {type(arg).__name__}")
    if isinstance(arg, np.ma.MaskedArray):
        raise InvalidArgument(f"{role}: masked arrays are not supported (the mask would be "
                              f"ignored); pass {role}.filled(fill_value) or {role}.data")
    if isinstance(arg, np.matrix):
        raise InvalidArgument(f"{role}: np.matrix is not supported; pass np.asarray({role})")


def shape(x: Any, role: str) -> tuple[int, ...]:
    """``x``'s shape: its ``shape``, else the one its array protocol describes."""
    s = getattr(x, "shape", None)
    if s is None:
        for protocol in ("__cuda_array_interface__", "__array_interface__"):
            described = getattr(x, protocol, None)
            if described is not None:
                return tuple(described["shape"])
        raise InvalidArgument(f"{role}: {type(x).__name__} has no shape to pair elements by")
    return tuple(s)


def same_shape(x: Any, x_role: str, y: Any, y_role: str) -> None:
    """``InvalidArgument`` unless ``x`` and ``y`` have one shape (element-wise pairing)."""
    if type(x) is np.ndarray and type(y) is np.ndarray:
        if x.shape == y.shape:
            return
    sx, sy = shape(x, x_role), shape(y, y_role)
    if sx != sy:
        raise InvalidArgument(f"{y_role}: shape {sy} does not match {x_role}'s "
                              f"{sx}; no truncation or broadcasting")


def _overlap(x: Any, out: Any) -> tuple[bool, bool]:
    """(``x`` and ``out`` may share memory, they are the very same elements): two flat
    C-contiguous NumPy arrays, or two ``DeviceArray``s (device memory never overlaps host
    memory)."""
    xd, od = not isinstance(x, np.ndarray), not isinstance(out, np.ndarray)
    if xd or od:
        return spans_overlap(x.addr, x.nbytes, out.addr, out.nbytes) if xd and od else \
            (False, False)
    if not np.may_share_memory(x, out):
        return False, False
    return spans_overlap(x.ctypes.data, x.nbytes, out.ctypes.data, out.nbytes)


def operands_overlap(x: Any, x_nbytes: int, out: Any, out_nbytes: int) -> tuple[bool, bool]:
    """:func:`_overlap` for two ``launch`` operands, each the first ``*_nbytes`` bytes at a
    device address (an int) or of a flat host array (a host-memory device's operand)."""
    if x.__class__ is not int:
        if not np.may_share_memory(x, out):
            return False, False
        x, out = x.ctypes.data, out.ctypes.data
    return spans_overlap(x, x_nbytes, out, out_nbytes)


def refuse_overlap(overlap: tuple[bool, bool], x_role: str, out_role: str,
                   partial_only: bool, prefix: str = "") -> None:
    """``InvalidArgument`` when ``overlap`` (from :func:`_overlap`) shows ``out`` sharing
    memory with ``x``: any sharing (gather/scatter, which write unordered), or with
    ``partial_only`` one other than as the very same elements. ``prefix`` starts the
    message (``"launch: "``)."""
    shared, same = overlap
    if not shared:
        return
    if not partial_only:
        raise InvalidArgument(f"{prefix}{out_role}: overlaps {x_role}; gather/scatter need a "
                              "separate output array")
    if not same:
        raise InvalidArgument(f"{prefix}{out_role}: overlaps {x_role} without being the same "
                              f"elements; the result would depend on evaluation order (pass "
                              f"a separate output array, or {x_role} itself to work in place)")


def disjoint(x: np.ndarray | DeviceArray, x_role: str, out: np.ndarray | DeviceArray,
             out_role: str) -> None:
    """``InvalidArgument`` when ``out`` may overlap ``x`` (gather/scatter write unordered)."""
    refuse_overlap(_overlap(x, out), x_role, out_role, False)


def no_partial_overlap(x: np.ndarray | DeviceArray, x_role: str, out: np.ndarray | DeviceArray,
                       out_role: str) -> None:
    """``InvalidArgument`` when ``out`` overlaps ``x`` other than as the very same elements
    (element ``i`` of both at one address, same item size): a partial overlap would make
    the result depend on loop order and on how threads split the work."""
    refuse_overlap(_overlap(x, out), x_role, out_role, True)


def params(p: Any, P: type | None, spec_name: str) -> None:
    """``p`` must be a ``P`` instance, or None when the spec has no params."""
    if P is None:
        if p is not None:
            raise InvalidArgument(f"p: spec {spec_name!r} has no params (P is None), "
                                  f"got {type(p).__name__}")
    elif type(p) is not P and not isinstance(p, P):
        got = "nothing" if p is None else f"a {type(p).__name__}"
        raise InvalidArgument(f"p: spec {spec_name!r} takes a {P.__qualname__} instance, "
                              f"got {got}")


__all__ = ["array", "shape", "same_shape", "disjoint", "no_partial_overlap", "params", "count"]

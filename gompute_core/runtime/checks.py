"""Argument checks of ``Kernel.run``: done before anything is touched, O(1) each.

Arrays must be NumPy arrays of exactly the spec's dtype (never a silent
cast), C-contiguous (never a silent copy) and writable where written. Any
shape is accepted and treated as the flat sequence of its elements; arrays
that must correspond element by element (map_to's ``inp``/``out``, zip's
``a``/``b``/``out``, gather's ``idx``/``out``, scatter's ``src``/``idx``)
must have the same shape. Every failure is an ``InvalidArgument`` naming
the argument.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgument


def array(arg: Any, role: str, dtype: np.dtype, writable: bool) -> np.ndarray:
    """``arg`` as a flat view, after checking type, dtype, contiguity and writability."""
    if type(arg) is not np.ndarray:
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


def same_shape(x: np.ndarray, x_role: str, y: np.ndarray, y_role: str) -> None:
    """``InvalidArgument`` unless ``x`` and ``y`` have one shape (element-wise pairing)."""
    if x.shape != y.shape:
        raise InvalidArgument(f"{y_role}: shape {y.shape} does not match {x_role}'s "
                              f"{x.shape}; no truncation or broadcasting")


def disjoint(x: np.ndarray, x_role: str, out: np.ndarray, out_role: str) -> None:
    """``InvalidArgument`` when ``out`` may overlap ``x`` (gather/scatter write unordered)."""
    if np.may_share_memory(x, out):
        raise InvalidArgument(f"{out_role}: overlaps {x_role}; gather/scatter need a separate "
                              "output array")


def no_partial_overlap(x: np.ndarray, x_role: str, out: np.ndarray, out_role: str) -> None:
    """``InvalidArgument`` when ``out`` overlaps ``x`` other than as the very same elements
    (element ``i`` of both at one address, same item size): a partial overlap would make
    the result depend on loop order and on how threads split the work."""
    if not np.may_share_memory(x, out):
        return
    same = (x.ctypes.data == out.ctypes.data and x.itemsize == out.itemsize
            and x.size == out.size)
    if not same:
        raise InvalidArgument(f"{out_role}: overlaps {x_role} without being the same "
                              f"elements; the result would depend on evaluation order (pass "
                              f"a separate output array, or {x_role} itself to work in place)")


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


def count(n: Any, role: str = "count") -> int:
    """A non-negative element count."""
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise InvalidArgument(f"{role}: expected a non-negative int, got {n!r}")
    value = n.__index__()
    if value < 0:
        raise InvalidArgument(f"{role}: expected a non-negative int, got {value}")
    return value

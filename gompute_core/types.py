"""Scalar types of the kernel language and NumPy-2 (NEP 50) promotion.

The scalar types *are* the NumPy scalar types (``g.f32 is numpy.float32``), so
a kernel function stays runnable as plain Python on NumPy scalars: that run is
the oracle every backend is compared with. ``bool`` is accepted wherever a
type is expected and means ``numpy.bool_``.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np

i8 = np.int8
i16 = np.int16
i32 = np.int32
i64 = np.int64
u8 = np.uint8
u16 = np.uint16
u32 = np.uint32
u64 = np.uint64
f16 = np.float16
f32 = np.float32
f64 = np.float64
boolean = np.bool_

ScalarType: TypeAlias = type
"""One of the NumPy scalar classes listed in :data:`SCALAR_TYPES`."""

SCALAR_TYPES: tuple[ScalarType, ...] = (
    np.bool_, i8, i16, i32, i64, u8, u16, u32, u64, f16, f32, f64,
)
INT_TYPES: tuple[ScalarType, ...] = (i8, i16, i32, i64, u8, u16, u32, u64)
FLOAT_TYPES: tuple[ScalarType, ...] = (f16, f32, f64)

_SHORT_NAMES: dict[ScalarType, str] = {
    np.bool_: "bool", i8: "i8", i16: "i16", i32: "i32", i64: "i64",
    u8: "u8", u16: "u16", u32: "u32", u64: "u64", f16: "f16", f32: "f32", f64: "f64",
}


def as_scalar_type(t: Any) -> ScalarType | None:
    """Return the canonical scalar type for ``t`` (``bool`` -> ``np.bool_``), or None."""
    if t is bool:
        return np.bool_
    if isinstance(t, np.dtype):
        t = t.type
    if isinstance(t, type) and t in _SHORT_NAMES:
        return t
    return None


def short_name(t: ScalarType) -> str:
    """``"f32"``, ``"u64"``, ``"bool"``: the name used in the IR, errors and docs."""
    return _SHORT_NAMES[t]


def dtype_of(t: ScalarType) -> np.dtype:
    """The NumPy dtype of a scalar type."""
    return np.dtype(t)


def is_int(t: ScalarType) -> bool:
    """True for the fixed-width integer types (not bool)."""
    return t in INT_TYPES


def is_signed(t: ScalarType) -> bool:
    """True for signed integers and floats."""
    return t in (i8, i16, i32, i64) or t in FLOAT_TYPES


def is_float(t: ScalarType) -> bool:
    """True for f16, f32, f64."""
    return t in FLOAT_TYPES


def bits(t: ScalarType) -> int:
    """Width in bits (bool is 8: it crosses as a u8)."""
    return np.dtype(t).itemsize * 8


def promote(a: ScalarType, b: ScalarType) -> ScalarType:
    """NumPy's promotion of two *strong* scalar types (``np.result_type``)."""
    return np.result_type(a, b).type


def promote_weak(strong: ScalarType, literal: int | float | bool) -> ScalarType:
    """NEP 50: the type of ``strong OP literal`` for a Python literal (weak).

    A weak int adopts any numeric type; a weak float adopts float types and
    turns integers and bools into the default float (f64); a weak bool adopts
    everything.
    """
    if isinstance(literal, bool):
        return strong
    if isinstance(literal, int):
        return i64 if strong is np.bool_ else strong
    return strong if is_float(strong) else f64

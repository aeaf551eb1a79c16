"""C spellings of IR types and literals shared by every C-family dialect.

Register types are what expressions compute in (``bool``, ``float`` for
``f16``); storage types are what memory holds (``bool`` as a ``u8`` 0/1, ``f16``
as its 16 raw bits). Integer typedefs are named ``gp_<short name>`` so that no
user identifier can collide with them.
"""

from __future__ import annotations

import math
import struct

import numpy as np

from ..errors import Unsupported
from ..ir.nodes import ArrayType, IRType, StructType
from ..types import FLOAT_TYPES, bits, is_int, is_signed, short_name

INT_TYPEDEFS = (
    "typedef signed char gp_i8;\n"
    "typedef unsigned char gp_u8;\n"
    "typedef short gp_i16;\n"
    "typedef unsigned short gp_u16;\n"
    "typedef int gp_i32;\n"
    "typedef unsigned int gp_u32;\n"
    "typedef long long gp_i64;\n"
    "typedef unsigned long long gp_u64;\n"
    "typedef unsigned short gp_f16;\n"
)
"""Fixed-width typedefs every dialect's prelude starts with (``gp_f16`` holds raw half bits)."""

C_RESERVED = frozenset(
    "auto bool break case char class const constexpr continue default delete do double else "
    "enum extern false float for friend goto if inline int long new operator private protected "
    "public register restrict return short signed sizeof static struct switch template this "
    "throw true try typedef typename union unsigned using virtual void volatile while "
    "alignas alignof decltype noexcept nullptr static_assert thread_local".split()
)
"""C and C++ keywords."""


def _library_names() -> frozenset[str]:
    from ..ir.intrinsics import INTRINSICS

    maths = {m.c for m in INTRINSICS if m.c}
    return frozenset(maths | {n + "f" for n in maths} | set(
        "abs labs llabs min max fmin fmax printf malloc free memcpy memset memmove assert "
        "exit rand signbit main".split()))


C_LIBRARY = _library_names()
"""Functions of the C library and of GPU device libraries (math, ``printf``, ``malloc``,
``memcpy``, ...): an ``extern "C"`` entry or a member of that name would collide with them
(NVRTC refused kernels named ``exp``, ``sqrt``, ``abs``, ``min``, ``printf``)."""

C_FAMILY_RESERVED = C_RESERVED | C_LIBRARY
"""The default reserved words of a C-family dialect: keywords and library functions."""


def struct_cname(st: StructType) -> str:
    """The C name of a params struct (``P_`` + the layout's name)."""
    return "P_" + st.layout.name  # type: ignore[attr-defined]


def reg_type(t: IRType) -> str:
    """The C type an expression of IR type ``t`` is computed in."""
    if isinstance(t, StructType):
        return struct_cname(t)
    if isinstance(t, ArrayType):
        raise Unsupported(f"an array ({t}) has no register type")
    if t is np.bool_:
        return "bool"
    if t is np.float16 or t is np.float32:
        return "float"
    if t is np.float64:
        return "double"
    return "gp_" + short_name(t)


def mem_type(t: IRType) -> str:
    """The C type memory (buffers, params fields, shared arrays) holds for ``t``."""
    if t is np.bool_:
        return "gp_u8"
    if t is np.float16:
        return "gp_f16"
    return reg_type(t)


def size_of(t: IRType) -> int:
    """Bytes of one element of scalar type ``t`` in memory."""
    return np.dtype(t).itemsize


def wide_unsigned(t: IRType) -> str:
    """The unsigned type integer arithmetic on ``t`` wraps in (``gp_u32`` or ``gp_u64``)."""
    return "gp_u64" if bits(t) == 64 else "gp_u32"


def wrap_int(text: str, t: IRType) -> str:
    """``text``, an unsigned ``gp_u32``/``gp_u64`` computation, wrapped to integer type ``t``.

    An i8/i16 result is sign-extended in 32 bits by shifts, ``(i32)(u << 16) >> 16``, so
    that the compiler keeps the arithmetic in 32 bits: a cast, or ``((u & 0xFFFF) ^ 0x8000)
    - 0x8000``, let NVRTC narrow a negation to PTX ``neg.s16``, after which the ptxas of
    NVRTC 13.0 (sm_90) dropped the sign extension of the result, so that ``-x`` for
    ``x = -32768`` read as +32768 (fuzz 777001/7301, 5851; 20261130/8699, 8093 through
    ``abs``). The ptxas of NVRTC 13.5 sign-extends again; 13.0 still misreads a ``neg.s16``
    NVRTC makes of other narrowed arithmetic (a product by -128 cast to i8, say)."""
    c = reg_type(t)
    if not (is_signed(t) and bits(t) < 32):
        return f"(({c})({text}))"
    shift = 32 - bits(t)
    return f"(({c})(((gp_i32)(((gp_u32)({text})) << {shift})) >> {shift}))"


def int_literal(value: int, t: IRType) -> str:
    """A C literal of integer type ``t`` (minimum values spelt without overflow)."""
    value = int(value)
    nbits = bits(t)
    if is_signed(t):
        suffix = "LL" if nbits == 64 else ""
        text = f"({-(2 ** (nbits - 1)) + 1}{suffix} - 1)" if value == -(2 ** (nbits - 1)) \
            else f"{value}{suffix}"
    else:
        text = f"{value}{'ULL' if nbits == 64 else 'U'}"
    return f"(({reg_type(t)}){text})"


def float_literal(value: float, t: IRType, bits_fn: dict[str, str]) -> str:
    """A C literal of float type ``t``; non-finite values go through ``bits_fn`` (the f64 bits
    cast to ``gp_i64``: OpenCL's ``as_double`` takes a ``long``, not a ``long long``)."""
    value = float(value)
    if t is np.float64:
        if math.isfinite(value):
            return f"({value!r})"
        raw = struct.unpack("<q", struct.pack("<d", value))[0]
        return f"{bits_fn['f64']}((gp_i64){raw}LL)"
    if math.isfinite(value):
        return f"({value!r}f)"
    raw = struct.unpack("<i", struct.pack("<f", value))[0]
    return f"{bits_fn['f32']}({raw})"


def is_float_type(t: IRType) -> bool:
    """True for f16, f32 and f64."""
    return t in FLOAT_TYPES


def is_int_type(t: IRType) -> bool:
    """True for the fixed-width integer types (not bool)."""
    return is_int(t)  # type: ignore[arg-type]

"""Field codecs: how each kind of params field converts, lays out and unpacks.

A codec is built once per field at class-definition time (see
:mod:`gompute_core.abi.resolve`). It knows the field's device IR type, its C
size and alignment, its ``struct`` format (little-endian standard sizes,
padding explicit as ``x``), how to convert a host value to the declared
strong type (raising :class:`InvalidArgument` with the field path), and how to
rebuild a value from unpacked items. :class:`ParamsInfo` is what a params
class carries as ``__gompute_abi__``.
"""

from __future__ import annotations

import abc
import enum
import math
import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import AbiError, InvalidArgument
from ..ir.nodes import ArrayType, IRType, StructType
from ..types import ScalarType, is_float, short_name
from .layout import FieldLayout, StructLayout
from .naming import display_name

ABI_ATTR = "__gompute_abi__"

_FORMAT_CHARS: dict[type, str] = {
    np.int8: "b", np.int16: "h", np.int32: "i", np.int64: "q",
    np.uint8: "B", np.uint16: "H", np.uint32: "I", np.uint64: "Q",
    np.float16: "e", np.float32: "f", np.float64: "d", np.bool_: "?",
}


def _type_name(value: object) -> str:
    return type(value).__name__


def _show(value: object) -> str:
    """``repr`` of a value, NumPy scalars shown as their Python value (``1000``, not
    ``np.int64(1000)``)."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _unwrap_0d(value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value[()]
    return value


def int_in_range(t: ScalarType, iv: int, path: str, lo: int, hi: int, shown: Any = None
                 ) -> Any:
    """``iv`` as integer type ``t`` (whose range is ``[lo, hi]``); ``InvalidArgument``
    naming ``path`` and showing ``shown`` (default ``iv``) when it does not fit. The range
    check of params fields and raw kernels' scalar arguments."""
    if not lo <= iv <= hi:
        raise InvalidArgument(f"{path}: {_show(iv if shown is None else shown)} does not fit "
                              f"{short_name(t)} [{lo}, {hi}]")
    return t(iv)


def float_in_range(t: ScalarType, value: Any, path: str) -> Any:
    """The number ``value`` as float type ``t``; ``InvalidArgument`` naming ``path`` when it
    does not fit: too large for a Python float (``10**400``) or finite but rounding to
    infinity in ``t`` (``1e40`` for an f32). Infinities and NaN pass as themselves. The
    range check of params fields and raw kernels' scalar arguments."""
    try:
        fv = float(value)
    except OverflowError:
        raise InvalidArgument(f"{path}: {_show(value)} does not fit {short_name(t)}") from None
    with np.errstate(over="ignore"):
        result = t(fv)
    if math.isinf(result) and not math.isinf(fv):
        raise InvalidArgument(f"{path}: {_show(value)} does not fit {short_name(t)} "
                              f"(overflow)")
    return result


class Codec(abc.ABC):
    """Base of the field codecs; subclasses set the attributes in ``__init__``."""

    ir: IRType
    size: int
    align: int
    fmt: str
    leaf: bool = False

    @abc.abstractmethod
    def convert(self, value: Any, path: str) -> Any:
        """``value`` as the declared strong type; ``InvalidArgument`` naming ``path`` if not."""

    @abc.abstractmethod
    def rebuild(self, items: Iterator[Any]) -> Any:
        """Consume this field's unpacked ``struct`` items and return the host value."""

    @abc.abstractmethod
    def describe(self) -> str:
        """A short human name of the type, for messages."""


class ScalarCodec(Codec):
    """A fixed-width integer or float field (``g.i8`` ... ``g.f64``)."""

    leaf = True

    def __init__(self, t: ScalarType) -> None:
        self.ir = t
        self.size = self.align = np.dtype(t).itemsize
        self.fmt = _FORMAT_CHARS[t]
        self._float = is_float(t)
        if not self._float:
            info = np.iinfo(t)
            self._lo, self._hi = int(info.min), int(info.max)

    def describe(self) -> str:
        return short_name(self.ir)

    def convert(self, value: Any, path: str) -> Any:
        value = _unwrap_0d(value)
        if self._float:
            return self._convert_float(value, path)
        return self._convert_int(value, path)

    def _convert_int(self, value: Any, path: str) -> Any:
        if isinstance(value, (int, np.integer, np.bool_)):
            iv = int(value)
        elif isinstance(value, (float, np.floating)):
            if not math.isfinite(value) or not float(value).is_integer():
                raise InvalidArgument(
                    f"{path}: {_show(value)} is not an integer ({self.describe()} field)")
            iv = int(value)
        else:
            raise InvalidArgument(
                f"{path}: expected a number for a {self.describe()} field, got {_type_name(value)}")
        return int_in_range(self.ir, iv, path, self._lo, self._hi, value)

    def _convert_float(self, value: Any, path: str) -> Any:
        if not isinstance(value, (int, float, np.integer, np.floating, np.bool_)):
            raise InvalidArgument(
                f"{path}: expected a number for a {self.describe()} field, got {_type_name(value)}")
        return float_in_range(self.ir, value, path)

    def rebuild(self, items: Iterator[Any]) -> Any:
        return self.ir(next(items))


class BoolCodec(Codec):
    """``bool``: one byte on the wire (0 or 1), ``np.bool_`` on the host and in the IR."""

    leaf = True
    ir = np.bool_
    size = align = 1
    fmt = "?"

    def describe(self) -> str:
        return "bool"

    def convert(self, value: Any, path: str) -> Any:
        value = _unwrap_0d(value)
        if isinstance(value, (bool, np.bool_)):
            return np.bool_(value)
        if isinstance(value, (int, np.integer)) and value in (0, 1):
            return np.bool_(value)
        raise InvalidArgument(f"{path}: expected a bool (or 0/1), got {_show(value)}")

    def rebuild(self, items: Iterator[Any]) -> Any:
        return np.bool_(next(items))


class EnumCodec(Codec):
    """``g.Enum[E, tag]``: the IntEnum member on the host, its tag integer on the wire."""

    leaf = True

    def __init__(self, enum_cls: type[enum.IntEnum], tag: ScalarType) -> None:
        self.enum_cls = enum_cls
        self.ir = tag
        self.size = self.align = np.dtype(tag).itemsize
        self.fmt = _FORMAT_CHARS[tag]

    def describe(self) -> str:
        return f"Enum[{self.enum_cls.__name__}, {short_name(self.ir)}]"

    def convert(self, value: Any, path: str) -> Any:
        value = _unwrap_0d(value)
        if isinstance(value, self.enum_cls):
            return value
        if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, enum.Enum)):
            try:
                return self.enum_cls(int(value))
            except ValueError:
                pass
        raise InvalidArgument(f"{path}: {_show(value)} is not a member of {self.enum_cls.__name__}")

    def rebuild(self, items: Iterator[Any]) -> Any:
        tag = next(items)
        try:
            return self.enum_cls(tag)
        except ValueError:
            raise InvalidArgument(
                f"tag {tag} is not a member of {self.enum_cls.__name__}") from None


class ArrayCodec(Codec):
    """``g.Array[T, n]``: a tuple of ``n`` converted elements; a C array on the wire."""

    def __init__(self, elem: Codec, length: int) -> None:
        self.elem = elem
        self.length = length
        self.ir = ArrayType(elem.ir, length)
        self.size = elem.size * length
        self.align = elem.align
        self.fmt = f"{length}{elem.fmt}" if elem.leaf else elem.fmt * length

    def describe(self) -> str:
        return f"Array[{self.elem.describe()}, {self.length}]"

    def convert(self, value: Any, path: str) -> Any:
        if isinstance(value, np.ndarray):
            if value.ndim != 1:
                raise InvalidArgument(
                    f"{path}: expected {self.length} elements, got an array of shape {value.shape}")
            if self.elem.leaf and value.dtype.kind in "biuf":
                value = value.tolist()
        elif not isinstance(value, (list, tuple)):
            raise InvalidArgument(
                f"{path}: expected a list, tuple or 1-D array for {self.describe()}, "
                f"got {_type_name(value)}")
        if len(value) != self.length:
            raise InvalidArgument(
                f"{path}: expected {self.length} elements, got {len(value)}")
        conv = self.elem.convert
        return tuple(conv(v, f"{path}[{i}]") for i, v in enumerate(value))

    def rebuild(self, items: Iterator[Any]) -> Any:
        rebuild = self.elem.rebuild
        return tuple(rebuild(items) for _ in range(self.length))


class StructCodec(Codec):
    """A nested params class (plain or custom boundary): an instance of exactly that class."""

    def __init__(self, info: ParamsInfo) -> None:
        self.info = info
        self.ir = info.struct_type
        self.size = info.layout.size
        self.align = info.layout.align
        self.fmt = info.fmt

    def describe(self) -> str:
        return display_name(self.info.cls)

    def convert(self, value: Any, path: str) -> Any:
        cls = self.info.cls
        if type(value) is cls:
            return value
        if isinstance(value, Mapping):
            return self.info.from_mapping(value, path)
        raise InvalidArgument(f"{path}: expected {display_name(cls)}, got {_type_name(value)}")

    def rebuild(self, items: Iterator[Any]) -> Any:
        return self.info.rebuild(items)


@dataclass(eq=False)
class ParamsInfo:
    """The ABI metadata a params class carries as ``__gompute_abi__``.

    ``fields`` are the host (name, codec) pairs of a plain params class (empty
    for a custom boundary class, whose fields never cross). ``layout``,
    ``fmt``, ``struct_type`` and ``struct`` always describe the DEVICE view:
    the class itself, or its ``gpu_layout`` class (``gpu``) for a boundary.
    ``pack`` is the compiled packer (see :mod:`gompute_core.abi.pack`).
    """

    cls: type
    fields: tuple[tuple[str, Codec], ...]
    layout: StructLayout
    fmt: str
    gpu: type | None = None
    struct_type: StructType = field(init=False)
    struct: struct.Struct = field(init=False)
    pack: Callable[[Any], bytes] = field(init=False)
    dtype: np.dtype | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.struct_type = StructType(self.layout.name, self.layout)
        self.struct = struct.Struct("<" + self.fmt)

    def from_mapping(self, values: Mapping[str, Any], path: str) -> Any:
        """Build an instance from a mapping of field values, errors naming ``path.field``."""
        cls = self.cls
        if self.gpu is not None:
            try:
                return cls(**values)
            except TypeError as exc:
                raise InvalidArgument(f"{path}: cannot build {display_name(cls)}: {exc}") from None
        names = {name for name, _ in self.fields}
        unknown = [k for k in values if k not in names]
        if unknown:
            raise InvalidArgument(f"{path}.{unknown[0]}: {display_name(cls)} has no such field")
        kwargs: dict[str, Any] = {}
        for name, codec in self.fields:
            if name in values:
                kwargs[name] = codec.convert(values[name], f"{path}.{name}")
        try:
            return cls(**kwargs)
        except TypeError as exc:
            raise InvalidArgument(f"{path}: cannot build {display_name(cls)}: {exc}") from None

    def rebuild(self, items: Iterator[Any]) -> Any:
        """An instance from unpacked ``struct`` items (through ``from_gpu`` for a boundary)."""
        if self.gpu is not None:
            return self.cls.from_gpu(info_of(self.gpu).rebuild(items))
        return self.cls(**{name: codec.rebuild(items) for name, codec in self.fields})


def info_of(cls: object) -> ParamsInfo:
    """The :class:`ParamsInfo` of a class decorated with ``@g.params``; AbiError otherwise."""
    info = cls.__dict__.get(ABI_ATTR) if isinstance(cls, type) else None
    if info is None:
        name = display_name(cls)
        raise AbiError(f"{name} is not a @g.params class")
    return info


def build_layout(name: str, fields: tuple[tuple[str, Codec], ...]) -> tuple[StructLayout, str]:
    """C struct layout and ``struct`` format (without byte-order prefix) of ``fields``."""
    offset = 0
    align = 1
    parts: list[str] = []
    out: list[FieldLayout] = []
    for fname, codec in fields:
        pad = -offset % codec.align
        if pad:
            parts.append(f"{pad}x")
        offset += pad
        out.append(FieldLayout(fname, offset, codec.ir))
        parts.append(codec.fmt)
        offset += codec.size
        align = max(align, codec.align)
    tail = -offset % align
    if tail:
        parts.append(f"{tail}x")
    return StructLayout(name, tuple(out), offset + tail, align), "".join(parts)

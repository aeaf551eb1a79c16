"""``g.Array`` / ``g.Enum`` markers and annotation -> codec resolution.

Everything here runs at class-definition time. A field type that cannot
cross to the device raises :class:`AbiError` whose message starts with the
full field path (``Outer.inner.w: plain int has no width ...``); when the
culprit sits inside a class that was never decorated with ``@g.params``, the
path goes through it, so the deepest real problem is named.
"""

from __future__ import annotations

import ctypes
import dataclasses
import enum
import sys
import types
import typing
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import AbiError
from ..types import INT_TYPES, as_scalar_type, short_name
from .codecs import (
    ABI_ATTR,
    ArrayCodec,
    BoolCodec,
    Codec,
    EnumCodec,
    ScalarCodec,
    StructCodec,
)
from .naming import display_name


@dataclass(frozen=True, eq=False)
class ArraySpec:
    """The annotation ``g.Array[T, n]`` (checked when the params class is defined)."""

    args: tuple[Any, ...]

    def __repr__(self) -> str:
        return f"Array[{', '.join(map(_name, self.args))}]"


@dataclass(frozen=True, eq=False)
class EnumSpec:
    """The annotation ``g.Enum[E, tag]`` (checked when the params class is defined)."""

    args: tuple[Any, ...]

    def __repr__(self) -> str:
        return f"Enum[{', '.join(map(_name, self.args))}]"


class Array:
    """``g.Array[T, n]``: a fixed array of ``n >= 1`` elements of ``T``.

    ``T`` is a scalar type, ``bool``, a ``g.Enum[...]`` or a ``@g.params``
    class. Host values are tuples; list, tuple and 1-D ndarray of length ``n``
    are accepted on construction. On the device it is a C array aligned like
    its element.
    """

    def __class_getitem__(cls, args: Any) -> ArraySpec:
        return ArraySpec(args if isinstance(args, tuple) else (args,))


class Enum:
    """``g.Enum[E, tag]``: an ``IntEnum`` stored as the integer ``tag`` type.

    Every member of ``E`` must fit ``tag`` (checked at definition). On the
    host the field holds the ``E`` member; in kernels it is the integer tag.
    """

    def __class_getitem__(cls, args: Any) -> EnumSpec:
        return EnumSpec(args if isinstance(args, tuple) else (args,))


def _name(t: Any) -> str:
    scalar = as_scalar_type(t)
    if scalar is not None:
        return short_name(scalar)
    return display_name(t) if hasattr(t, "__qualname__") else repr(t)


def class_annotations(cls: type, extra: dict[str, Any] | None = None) -> list[tuple[str, Any]]:
    """``cls``'s own annotations, string ones evaluated; ``ClassVar`` entries skipped.

    Strings are evaluated in the class's module globals, then ``extra`` (the
    decorating frame's locals), then the class namespace.
    """
    raw = cls.__dict__.get("__annotations__", {})
    namespace: dict[str, Any] = dict(getattr(sys.modules.get(cls.__module__), "__dict__", {}))
    namespace.update(extra or {})
    namespace.update(cls.__dict__)
    out: list[tuple[str, Any]] = []
    for name, ann in raw.items():
        if isinstance(ann, str):
            try:
                ann = eval(ann, namespace)  # noqa: S307 - annotations are the user's own code
            except Exception as exc:
                raise AbiError(
                    f"{display_name(cls)}.{name}: cannot resolve annotation {ann!r} "
                    f"({type(exc).__name__}: {exc})") from None
        if ann is typing.ClassVar or typing.get_origin(ann) is typing.ClassVar:
            continue
        out.append((name, ann))
    return out


def resolve(ann: Any, path: str, *, _seen: frozenset[type] = frozenset()) -> Codec:
    """The codec of a field annotated ``ann``; ``AbiError`` naming ``path`` if it cannot cross."""
    scalar = as_scalar_type(ann)
    if scalar is not None:
        return BoolCodec() if scalar is np.bool_ else ScalarCodec(scalar)
    if isinstance(ann, ArraySpec):
        return _resolve_array(ann, path, _seen)
    if isinstance(ann, EnumSpec):
        return _resolve_enum(ann, path)
    if isinstance(ann, type) and ABI_ATTR in ann.__dict__:
        info = ann.__dict__[ABI_ATTR]
        if not info.layout.fields:
            raise AbiError(
                f"{path}: {display_name(ann)} has no device fields and cannot be nested "
                "(C and C++ disagree on the size of an empty struct)")
        return StructCodec(info)
    if isinstance(ann, type) and ann.__dict__.get("__annotations__") and ann not in _seen:
        _diagnose_plain_class(ann, path, _seen | {ann})
    raise AbiError(f"{path}: {_why(ann)}")


def _resolve_array(ann: ArraySpec, path: str, seen: frozenset[type]) -> Codec:
    if len(ann.args) != 2:
        raise AbiError(f"{path}: g.Array takes two arguments, g.Array[T, n]; got {ann!r}")
    elem_ann, length = ann.args
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)):
        raise AbiError(f"{path}: the length of {ann!r} must be an integer, got {length!r}")
    if length < 1:
        raise AbiError(f"{path}: the length of {ann!r} must be >= 1, got {int(length)}")
    if isinstance(elem_ann, ArraySpec):
        raise AbiError(
            f"{path}: an Array of Arrays is not supported; wrap the inner array in a "
            "@g.params class")
    return ArrayCodec(resolve(elem_ann, f"{path}[]", _seen=seen), int(length))


def _resolve_enum(ann: EnumSpec, path: str) -> Codec:
    if len(ann.args) != 2:
        raise AbiError(f"{path}: g.Enum takes two arguments, g.Enum[E, tag]; got {ann!r}")
    enum_cls, tag_ann = ann.args
    if not (isinstance(enum_cls, type) and issubclass(enum_cls, enum.IntEnum)):
        raise AbiError(f"{path}: g.Enum needs an IntEnum subclass, got {_name(enum_cls)}")
    tag = as_scalar_type(tag_ann)
    if tag not in INT_TYPES:
        raise AbiError(
            f"{path}: the tag of {ann!r} must be a fixed-width integer type "
            f"(g.u8, g.i32, ...), got {_name(tag_ann)}")
    members = list(enum_cls)
    if not members:
        raise AbiError(f"{path}: {display_name(enum_cls)} has no members")
    info = np.iinfo(tag)
    for member in members:
        if not info.min <= member.value <= info.max:
            raise AbiError(
                f"{path}: {display_name(enum_cls)}.{member.name} = {member.value} does not fit "
                f"the tag type {short_name(tag)} [{info.min}, {info.max}]")
    return EnumCodec(enum_cls, tag)


def _diagnose_plain_class(cls: type, path: str, seen: frozenset[type]) -> None:
    """Raise for the first field of an undecorated class that could not cross either."""
    for name, ann in class_annotations(cls):
        try:
            resolve(ann, f"{path}.{name}", _seen=seen)
        except AbiError as exc:
            raise AbiError(
                f"{exc} (and {display_name(cls)} is not a @g.params class)") from None


def _why(ann: Any) -> str:
    """Why ``ann`` cannot cross to the device, with the fix when there is one."""
    origin = typing.get_origin(ann)
    if ann is int:
        return ("plain int has no width: use g.i8, g.i16, g.i32, g.i64, g.u8, g.u16, g.u32 "
                "or g.u64")
    if ann is float:
        return "plain float has no width: use g.f16, g.f32 or g.f64"
    if ann is complex or (isinstance(ann, type) and issubclass(ann, np.complexfloating)):
        return "complex numbers cannot cross to the device"
    if ann in (str, bytes, bytearray) or (isinstance(ann, type) and
                                          issubclass(ann, (np.str_, np.bytes_))):
        return f"{_name(ann)} has no fixed size and cannot cross to the device"
    if ann is typing.Any or ann is object:
        return f"{_name(ann)} is not a fixed type; declare one of the params field types"
    if origin in (typing.Union, types.UnionType) or isinstance(ann, types.UnionType):
        return ("Optional/Union fields cannot cross: a field has exactly one type and is "
                "always present")
    if origin in (list, tuple, dict, set, frozenset) or ann in (list, tuple, dict, set, frozenset):
        return f"{_name(origin or ann)} has no fixed length on the device: use g.Array[T, n]"
    if ann is Array or ann is Enum:
        return f"g.{ann.__name__} needs its arguments: g.Array[T, n] or g.Enum[E, tag]"
    if isinstance(ann, dataclasses.InitVar):
        return "InitVar fields do not exist on the instance and cannot cross"
    if isinstance(ann, type):
        return _why_class(ann)
    return f"{ann!r} is not a type"


def _why_class(ann: type) -> str:
    if issubclass(ann, enum.IntEnum):
        return (f"an enum needs its tag type on the device: use g.Enum[{display_name(ann)}, "
                "g.u8] (or another integer tag)")
    if issubclass(ann, enum.Enum):
        return f"{display_name(ann)} is not an IntEnum; only g.Enum[IntEnumSubclass, tag] can cross"
    if issubclass(ann, (ctypes._Pointer, ctypes.c_void_p, ctypes.c_char_p)):  # type: ignore[attr-defined]
        return "pointers cannot cross in params (pass buffers as kernel arguments)"
    if issubclass(ann, np.ndarray):
        return "an ndarray has no fixed length on the device: use g.Array[T, n]"
    if issubclass(ann, np.generic):
        return f"NumPy type {ann.__name__} has no kernel equivalent"
    if ann.__dict__.get("__annotations__"):
        return f"{display_name(ann)} is not a @g.params class (decorate it with @g.params)"
    return f"{display_name(ann)} is not a params type (objects cannot cross to the device)"

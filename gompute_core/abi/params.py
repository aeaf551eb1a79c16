"""``@g.params``: classes whose instances cross to the device as C structs.

A plain params class becomes a frozen, keyword-only dataclass. Field types:
``g.i8`` ... ``g.f64``, ``bool`` (one byte 0/1 on the wire, ``np.bool_`` on
the host), ``g.Enum[E, tag]`` (an ``IntEnum`` member on the host, its integer
tag on the device), ``g.Array[T, n]`` (a tuple on the host, a C array on the
device) and nested ``@g.params`` classes. Every field is converted to its
declared type on construction, so the Python oracle computes with strong
NumPy scalars (``Scale(scale=2).scale`` is ``np.float32(2.0)``); a value that
does not fit raises :class:`InvalidArgument` naming the field path
(``Outer.inner.w[2]``). A nested params field also accepts a mapping of its
field values, converted with the full path. Anything else (``int`` or
``float`` without width, ``str``, ``bytes``, lists, ``Optional``, ``Any``,
pointers, undecorated classes, empty arrays, enums that do not fit their tag,
class attributes without annotation) raises :class:`AbiError` when the class
is defined. Private names (``_x``), methods, properties, nested classes and
``ClassVar`` annotations are left alone.

Custom boundary (the escape hatch). A class that declares any of
``gpu_layout``, ``to_gpu`` or ``from_gpu`` is a *boundary class* and must
declare all three:

* ``gpu_layout``: a plain ``@g.params`` class, the struct that crosses;
* ``to_gpu(self) -> gpu_layout``: builds that struct from the host object;
* ``from_gpu(wire)`` (classmethod or staticmethod): the host object back.

The host class is the user's: its fields never cross, so they are NOT
checked or converted and may be anything (a Python float, a string, a
list). If the class defines no ``__init__`` of its own and is not already a
dataclass, it is made a frozen keyword-only dataclass like any params class
(so ``Host(x=1.5)`` works); otherwise its own construction is kept untouched.
Kernels see the ``gpu_layout`` fields; ``struct_type_of``, ``pack``,
``record_of`` and ``unpack`` go through ``gpu_layout``/``to_gpu``/``from_gpu``.

The metadata lives on the class as ``__gompute_abi__`` (a
:class:`~gompute_core.abi.codecs.ParamsInfo`); use the functions of
:mod:`gompute_core.abi` rather than reading it.
"""

from __future__ import annotations

import dataclasses
import inspect
import keyword
import sys
import types
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import AbiError
from .codecs import ABI_ATTR, Codec, ParamsInfo, build_layout, info_of
from .naming import c_struct_name, check_unique_struct_names, display_name
from .pack import compile_packer
from .resolve import Array, Enum, class_annotations, resolve

__all__ = ["Array", "Enum", "params"]

C = TypeVar("C", bound=type)

_BOUNDARY = ("gpu_layout", "to_gpu", "from_gpu")


def params(cls: C) -> C:
    """Make ``cls`` a params class (see the module docstring); returns the same class.

    Decorating twice is a no-op. Raises :class:`AbiError` naming the field path
    for any field that cannot cross to the device.
    """
    if not isinstance(cls, type):
        raise AbiError(f"@g.params decorates a class, got {cls!r}")
    if ABI_ATTR in cls.__dict__:
        return cls
    caller = sys._getframe(1)
    extra = dict(caller.f_locals) if caller.f_code.co_name != "<module>" else {}
    present = [name for name in _BOUNDARY if _declares(cls, name)]
    info = _make_boundary(cls, present) if present else _make_plain(cls, extra)
    info.pack = compile_packer(info)
    setattr(cls, ABI_ATTR, info)
    cls.__gompute_pack__ = staticmethod(info.pack)  # type: ignore[attr-defined]
    return cls


def _declares(cls: type, name: str) -> bool:
    return any(name in klass.__dict__ for klass in cls.__mro__[:-1])


def _make_plain(cls: type, extra: dict[str, Any]) -> ParamsInfo:
    qual = display_name(cls)
    if "__init__" in cls.__dict__:
        raise AbiError(
            f"{qual}: a params class must not define __init__ (fields are converted by the "
            "generated one; use __post_init__, or make it a custom boundary class)")
    raw_annotations = cls.__dict__.get("__annotations__", {})
    _reject_unannotated(cls, raw_annotations)
    codecs: dict[str, Codec] = {}
    user_post_init: Callable[[Any], None] | None = None
    for base in reversed(cls.__mro__[1:]):
        base_info = base.__dict__.get(ABI_ATTR)
        if base_info is not None:
            if base_info.gpu is not None:
                raise AbiError(f"{qual}: cannot inherit from the custom boundary class "
                               f"{display_name(base)}")
            codecs.update(base_info.fields)
            user_post_init = base.__dict__.get("__gompute_post_init__", user_post_init)
    for name, ann in class_annotations(cls, extra):
        _check_field_name(qual, name)
        path = f"{qual}.{name}"
        codec = resolve(ann, path)
        codecs[name] = codec
        _convert_default(cls, name, codec, path)
    user_post_init = cls.__dict__.get("__post_init__", user_post_init)
    cls.__gompute_post_init__ = user_post_init  # type: ignore[attr-defined]
    converters: list[tuple[str, Callable[[Any, str], Any], str]] = []

    def __post_init__(self: Any) -> None:
        for name, convert, path in converters:
            object.__setattr__(self, name, convert(getattr(self, name), path))
        if user_post_init is not None:
            user_post_init(self)

    cls.__post_init__ = __post_init__  # type: ignore[attr-defined]
    dataclasses.dataclass(frozen=True, kw_only=True)(cls)
    fields: list[tuple[str, Codec]] = []
    for f in dataclasses.fields(cls):
        if f.name not in codecs:
            raise AbiError(f"{qual}.{f.name}: inherited from a class that is not @g.params")
        fields.append((f.name, codecs[f.name]))
        converters.append((f.name, codecs[f.name].convert, f"{qual}.{f.name}"))
    field_tuple = tuple(fields)
    layout, fmt = build_layout(c_struct_name(cls.__module__, cls.__qualname__), field_tuple)
    check_unique_struct_names(layout, qual)
    return ParamsInfo(cls, field_tuple, layout, fmt)


def _check_field_name(qual: str, name: str) -> None:
    """A field name crosses into generated C and Python source: an ASCII identifier that is
    not a Python keyword."""
    if not (isinstance(name, str) and name.isascii() and name.isidentifier()):
        raise AbiError(f"{qual}: field name {name!r} is not an ASCII identifier "
                       "(letters, digits and '_', not starting with a digit)")
    if keyword.iskeyword(name):
        raise AbiError(f"{qual}: field name {name!r} is a Python keyword")


def _reject_unannotated(cls: type, annotations: dict[str, Any]) -> None:
    """A data attribute without annotation is almost always a forgotten field type."""
    for name, value in cls.__dict__.items():
        if name.startswith("_") or name in annotations:
            continue
        if (callable(value) or isinstance(value, (type, types.ModuleType))
                or hasattr(type(value), "__get__")):
            continue
        raise AbiError(
            f"{display_name(cls)}.{name}: declared without a type annotation (annotate it with "
            "its params type, or as typing.ClassVar for a class constant)")


def _convert_default(cls: type, name: str, codec: Codec, path: str) -> None:
    """Convert a field's default once, at definition (InvalidArgument if it does not fit)."""
    value = cls.__dict__.get(name, dataclasses.MISSING)
    if value is dataclasses.MISSING:
        return
    if isinstance(value, dataclasses.Field):
        if value.default is not dataclasses.MISSING:
            value.default = codec.convert(value.default, path)
        return
    setattr(cls, name, codec.convert(value, path))


def _make_boundary(cls: type, present: list[str]) -> ParamsInfo:
    qual = display_name(cls)
    missing = [name for name in _BOUNDARY if name not in present]
    if missing:
        raise AbiError(
            f"{qual}: a custom boundary class declares gpu_layout, to_gpu and from_gpu; "
            f"missing: {', '.join(missing)}")
    gpu = cls.gpu_layout  # type: ignore[attr-defined]
    if not isinstance(gpu, type) or ABI_ATTR not in gpu.__dict__:
        name = display_name(gpu)
        raise AbiError(f"{qual}.gpu_layout: {name} is not a @g.params class")
    gpu_info = info_of(gpu)
    if gpu_info.gpu is not None:
        raise AbiError(f"{qual}.gpu_layout: {display_name(gpu)} is itself a custom boundary "
                       "class; gpu_layout must be a plain @g.params class")
    to_gpu = inspect.getattr_static(cls, "to_gpu")
    if isinstance(to_gpu, (staticmethod, classmethod)) or not callable(to_gpu):
        raise AbiError(f"{qual}.to_gpu must be an instance method, to_gpu(self)")
    from_gpu = inspect.getattr_static(cls, "from_gpu")
    if not isinstance(from_gpu, (staticmethod, classmethod)):
        raise AbiError(f"{qual}.from_gpu must be a classmethod or staticmethod, from_gpu(wire)")
    if not dataclasses.is_dataclass(cls) and "__init__" not in cls.__dict__:
        dataclasses.dataclass(frozen=True, kw_only=True)(cls)
    return ParamsInfo(cls, (), gpu_info.layout, gpu_info.fmt, gpu=gpu)

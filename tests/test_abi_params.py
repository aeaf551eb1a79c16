"""``@g.params``: construction-time conversion, definition-time rejection, boundaries.

This module uses ``from __future__ import annotations`` on purpose: every
annotation below is a string the decorator must resolve (module globals,
the defining function's locals, the class namespace).
"""

from __future__ import annotations

import ctypes
import dataclasses
import enum
import typing
from typing import Any, ClassVar

import numpy as np
import pytest

import gompute_core as g
from gompute_core.abi import (
    is_params_class,
    layout_of,
    pack,
    record_of,
    struct_type_of,
    unpack,
)
from gompute_core.errors import AbiError, InvalidArgument


class Color(enum.IntEnum):
    RED = 0
    GREEN = 7
    BLUE = 200


class Other(enum.IntEnum):
    SEVEN = 7


@g.params
class Scale:
    scale: g.f32


@g.params
class Inner:
    k: g.u8
    w: g.Array[g.i16, 3]


@g.params
class Outer:
    inner: Inner
    mode: g.Enum[Color, g.u8] = Color.RED
    on: bool = False


# ---------------------------------------------------------------- conversions

def test_fields_are_converted_to_declared_numpy_types() -> None:
    p = Scale(scale=2)
    assert type(p.scale) is np.float32 and p.scale == 2.0
    o = Outer(inner=Inner(k=3.0, w=np.array([1, 2, 3], np.float64)), mode=7, on=1)
    assert type(o.inner.k) is np.uint8
    assert o.inner.w == (1, 2, 3) and all(type(v) is np.int16 for v in o.inner.w)
    assert o.mode is Color.GREEN and o.mode == 7
    assert type(o.on) is np.bool_ and o.on


def test_python_oracle_sees_strong_types() -> None:
    def scale_relu(x: Any, p: Scale) -> Any:
        y = x * p.scale
        return y if y > 0 else 0

    assert type(scale_relu(np.float32(3), Scale(scale=2.0))) is np.float32
    assert type(np.float32(1) * Scale(scale=2.0).scale) is np.float32  # no f64 promotion


@pytest.mark.parametrize(("value", "needle"), [
    (256, "Scaled.n: 256 does not fit u8"),
    (-1, "Scaled.n: -1 does not fit u8"),
    (2.5, "Scaled.n: 2.5 is not an integer"),
    (float("nan"), "Scaled.n"),
    ("3", "Scaled.n: expected a number"),
    (None, "Scaled.n: expected a number"),
    (np.int64(1000), "Scaled.n: 1000 does not fit u8"),
])
def test_integer_field_rejects_values_that_do_not_fit(value: Any, needle: str) -> None:
    @g.params
    class Scaled:
        n: g.u8

    with pytest.raises(InvalidArgument, match=needle) as info:
        Scaled(n=value)
    assert isinstance(info.value, ValueError)


def test_integer_extremes_and_integral_floats() -> None:
    @g.params
    class Wide:
        a: g.i64
        b: g.u64
        c: g.i8

    w = Wide(a=-2**63, b=2**64 - 1, c=np.float32(-128.0))
    assert (w.a, w.b, w.c) == (-2**63, 2**64 - 1, -128)
    with pytest.raises(InvalidArgument, match="Wide.b"):
        Wide(a=0, b=2**64, c=0)
    with pytest.raises(InvalidArgument, match="Wide.a"):
        Wide(a=-2**63 - 1, b=0, c=0)


def test_float_fields_overflow_but_keep_inf_and_nan() -> None:
    @g.params
    class Floats:
        h: g.f16
        f: g.f32
        d: g.f64

    ok = Floats(h=np.inf, f=float("nan"), d=1e300)
    assert np.isinf(ok.h) and np.isnan(ok.f) and type(ok.d) is np.float64
    assert Floats(h=0.1, f=0.1, d=0.1).f == np.float32(0.1)
    with pytest.raises(InvalidArgument, match="Floats.h: 70000 does not fit f16"):
        Floats(h=70000, f=0, d=0)
    with pytest.raises(InvalidArgument, match="Floats.f"):
        Floats(h=0, f=1e40, d=0)
    with pytest.raises(InvalidArgument, match="Floats.d"):
        Floats(h=0, f=0, d=10**400)
    with pytest.raises(InvalidArgument, match="Floats.d: expected a number"):
        Floats(h=0, f=0, d=1j)


def test_bool_field() -> None:
    @g.params
    class Flag:
        on: bool

    assert Flag(on=True).on is np.True_ and Flag(on=0).on is np.False_
    for bad in (2, "yes", 1.0, None):
        with pytest.raises(InvalidArgument, match="Flag.on"):
            Flag(on=bad)
    assert pack(Flag(on=True)) == b"\x01"


def test_enum_field() -> None:
    assert Outer(inner=Inner(k=0, w=[0, 0, 0]), mode=np.uint8(200)).mode is Color.BLUE
    for bad in (3, Other.SEVEN, True, "GREEN", 7.0):
        with pytest.raises(InvalidArgument, match="Outer.mode"):
            Outer(inner=Inner(k=0, w=[0, 0, 0]), mode=bad)


def test_array_field_lengths_shapes_and_elements() -> None:
    assert Inner(k=0, w=(1, 2, 3)).w == Inner(k=0, w=np.arange(1, 4)).w
    with pytest.raises(InvalidArgument, match=r"Inner.w: expected 3 elements, got 2"):
        Inner(k=0, w=[1, 2])
    with pytest.raises(InvalidArgument, match=r"Inner.w: .*shape \(1, 3\)"):
        Inner(k=0, w=np.zeros((1, 3)))
    with pytest.raises(InvalidArgument, match=r"Inner.w\[2\]: 40000 does not fit i16"):
        Inner(k=0, w=[1, 2, 40000])
    with pytest.raises(InvalidArgument, match=r"Inner.w: expected a list"):
        Inner(k=0, w=5)


def test_nested_fields_and_full_paths() -> None:
    with pytest.raises(InvalidArgument, match="Outer.inner: expected Inner, got Scale"):
        Outer(inner=Scale(scale=1))
    built = Outer(inner={"k": 1, "w": [1, 2, 3]})
    assert built.inner == Inner(k=1, w=[1, 2, 3])
    with pytest.raises(InvalidArgument, match=r"Outer.inner.w\[2\]: 99999 does not fit i16"):
        Outer(inner={"k": 1, "w": [1, 2, 99999]})
    with pytest.raises(InvalidArgument, match=r"Outer.inner.nope: Inner has no such field"):
        Outer(inner={"k": 1, "w": [1, 2, 3], "nope": 0})
    with pytest.raises(InvalidArgument, match=r"Outer.inner: cannot build Inner"):
        Outer(inner={"k": 1})


def test_array_of_params_paths() -> None:
    @g.params
    class Many:
        items: g.Array[Inner, 2]

    m = Many(items=[Inner(k=1, w=[1, 2, 3]), {"k": 2, "w": [4, 5, 6]}])
    assert m.items[1].k == 2
    with pytest.raises(InvalidArgument, match=r"Many.items\[1\].k: 300 does not fit u8"):
        Many(items=[Inner(k=1, w=[1, 2, 3]), {"k": 300, "w": [4, 5, 6]}])


def test_frozen_keyword_only_hashable_dataclass() -> None:
    p = Scale(scale=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.scale = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        Scale(1)  # type: ignore[misc]
    assert p == Scale(scale=1.0) and hash(p) == hash(Scale(scale=np.float64(1)))
    assert dataclasses.is_dataclass(Scale)


def test_defaults_are_converted_once_and_checked_at_definition() -> None:
    @g.params
    class Defaults:
        a: g.f32 = 1
        w: g.Array[g.u8, 2] = dataclasses.field(default=(1, 2))
        b: g.i32  # keyword-only: a field without default may follow defaults

    d = Defaults(b=5)
    assert type(d.a) is np.float32 and d.w == (1, 2) and type(d.w[0]) is np.uint8
    with pytest.raises(InvalidArgument, match="Bad.a: 300 does not fit u8"):
        @g.params
        class Bad:
            a: g.u8 = 300


def test_user_post_init_runs_after_conversion() -> None:
    seen = []

    @g.params
    class Checked:
        lo: g.f32
        hi: g.f32

        def __post_init__(self) -> None:
            seen.append((type(self.lo), type(self.hi)))
            if self.lo > self.hi:
                raise InvalidArgument("Checked: lo > hi")

    Checked(lo=1, hi=2)
    assert seen == [(np.float32, np.float32)]
    with pytest.raises(InvalidArgument, match="lo > hi"):
        Checked(lo=3, hi=2)


def test_inheritance_keeps_base_fields_first() -> None:
    @g.params
    class Base:
        a: g.u8

    @g.params
    class Derived(Base):
        b: g.f64

    assert [f.name for f in layout_of(Derived).fields] == ["a", "b"]
    d = Derived(a=1, b=2)
    assert type(d.a) is np.uint8 and pack(d) == bytes([1]) + bytes(7) + np.float64(2).tobytes()


def test_class_constants_methods_and_idempotent_decoration() -> None:
    @g.params
    class WithExtras:
        LIMIT: ClassVar[int] = 10
        _private = 3
        x: g.f32

        def doubled(self) -> Any:
            return self.x * 2

        @property
        def half(self) -> Any:
            return self.x / 2

    assert g.params(WithExtras) is WithExtras
    assert [f.name for f in layout_of(WithExtras).fields] == ["x"]
    assert WithExtras(x=3).doubled() == 6 and WithExtras.LIMIT == 10


def test_empty_params_class() -> None:
    @g.params
    class Nothing:
        pass

    assert pack(Nothing()) == b"" and layout_of(Nothing).size == 0
    assert unpack(Nothing, b"") == Nothing()


# ---------------------------------------------------------------- definition-time rejections

class _Plain:
    pass


class _PlainWithBadField:
    w: int


@pytest.mark.parametrize(("annotation", "needle"), [
    (int, "plain int has no width"),
    (float, "plain float has no width"),
    (complex, "complex"),
    (np.complex64, "complex"),
    (str, "str has no fixed size"),
    (bytes, "bytes has no fixed size"),
    (object, "not a fixed type"),
    (Any, "not a fixed type"),
    (list, "no fixed length"),
    (list[g.f32], "no fixed length"),
    (typing.List[g.f32], "no fixed length"),  # noqa: UP006
    (tuple[g.f32, g.f32], "no fixed length"),
    (typing.Optional[g.f32], "Optional/Union"),  # noqa: UP045
    (g.f32 | None, "Optional/Union"),
    (typing.Union[g.f32, g.i32], "Optional/Union"),  # noqa: UP007
    (np.ndarray, "ndarray"),
    (ctypes.c_void_p, "pointers"),
    (ctypes.POINTER(ctypes.c_float), "pointers"),
    (_Plain, "not a params type"),
    (Color, "use g.Enum"),
    (enum.Enum("Plain", "A B"), "not an IntEnum"),
    (g.Array, "needs its arguments"),
    (g.Array[g.f32, 0], "must be >= 1"),
    (g.Array[g.f32, -2], "must be >= 1"),
    (g.Array[g.f32, 2.0], "must be an integer"),
    (g.Array[g.f32], "takes two arguments"),
    (g.Array[g.Array[g.f32, 2], 2], "Array of Arrays"),
    (g.Enum[Color, g.f32], "fixed-width integer"),
    (g.Enum[Color, bool], "fixed-width integer"),
    (g.Enum[Color, g.i8], "Color.BLUE = 200 does not fit"),
    (g.Enum[g.u8, g.u8], "needs an IntEnum"),
    (g.Enum[Color], "takes two arguments"),
    (dataclasses.InitVar[g.f32], "InitVar"),
    (3, "is not a type"),
])
def test_rejected_field_types_name_the_field(annotation: Any, needle: str) -> None:
    cls = type("Holder", (), {"__annotations__": {"field": annotation}, "__module__": __name__})
    with pytest.raises(AbiError, match="Holder.field") as info:
        g.params(cls)
    assert needle in str(info.value)
    assert isinstance(info.value, TypeError)


def test_rejection_inside_array_names_the_element() -> None:
    with pytest.raises(AbiError, match=r"Holder.w\[\]: plain int has no width"):
        @g.params
        class Holder:
            w: g.Array[int, 3]


def test_rejection_inside_an_undecorated_nested_class_names_the_full_path() -> None:
    with pytest.raises(AbiError, match=r"^Holder.inner.w: plain int has no width") as info:
        @g.params
        class Holder:
            inner: _PlainWithBadField
    assert "_PlainWithBadField is not a @g.params class" in str(info.value)

    class Fine:
        w: g.f32

    with pytest.raises(AbiError, match=r"Holder2.inner: Fine is not a @g.params class"):
        @g.params
        class Holder2:
            inner: Fine


def test_rejects_unannotated_declarations_and_unresolvable_annotations() -> None:
    with pytest.raises(AbiError, match=r"NoAnn.b: declared without a type annotation"):
        @g.params
        class NoAnn:
            a: g.f32
            b = 3

    with pytest.raises(AbiError, match=r"Unknown.x: cannot resolve annotation 'NotAType'"):
        @g.params
        class Unknown:
            x: NotAType  # noqa: F821

    with pytest.raises(AbiError, match=r"OwnInit: a params class must not define __init__"):
        @g.params
        class OwnInit:
            x: g.f32

            def __init__(self) -> None:
                pass


def test_rejects_nesting_an_empty_struct_and_non_classes() -> None:
    @g.params
    class Empty:
        pass

    with pytest.raises(AbiError, match=r"Holder.e: .*cannot be nested"):
        @g.params
        class Holder:
            e: Empty

    with pytest.raises(AbiError, match="decorates a class"):
        g.params(3)  # type: ignore[type-var]


def test_non_params_queries() -> None:
    assert not is_params_class(_Plain) and not is_params_class(3) and is_params_class(Scale)
    with pytest.raises(AbiError, match="_Plain is not a @g.params class"):
        struct_type_of(_Plain)
    with pytest.raises(InvalidArgument, match="expected a @g.params object, got type"):
        pack(Scale)
    with pytest.raises(InvalidArgument, match="got _Plain"):
        pack(_Plain())


# ---------------------------------------------------------------- pack / unpack / records

def test_pack_unpack_record_of_nested() -> None:
    o = Outer(inner=Inner(k=9, w=[-1, 2, -3]), mode=Color.BLUE, on=True)
    data = pack(o)
    expected = (bytes([9, 0]) + np.array([-1, 2, -3], np.int16).tobytes()  # Inner: 8 bytes
                + bytes([200, 1]))
    assert data == expected and len(data) == layout_of(Outer).size == 10
    assert unpack(Outer, data) == o and unpack(Outer, bytearray(data)) == o
    rec = record_of(o)
    assert rec["inner"]["k"] == 9 and list(rec["inner"]["w"]) == [-1, 2, -3]
    assert rec["mode"] == 200 and rec["on"] == np.True_
    rec["on"] = False  # a writable record, independent of the object
    assert o.on


def test_unpack_rejects_bad_input() -> None:
    with pytest.raises(InvalidArgument, match="Outer takes 10 bytes, got 3"):
        unpack(Outer, b"abc")
    bad_tag = pack(Outer(inner=Inner(k=0, w=[0, 0, 0])))[:8] + bytes([5, 0])
    with pytest.raises(InvalidArgument, match="tag 5 is not a member of Color"):
        unpack(Outer, bad_tag)
    with pytest.raises(AbiError):
        unpack(_Plain, b"")


def test_pack_reports_tampered_values() -> None:
    @g.params
    class Small:
        v: g.u8

    s = Small(v=1)
    object.__setattr__(s, "v", 1000)
    with pytest.raises(InvalidArgument, match="Small holds a value that does not fit"):
        pack(s)


def test_large_arrays_and_undecorated_subclasses_pack() -> None:
    @g.params
    class Big:
        v: g.Array[g.f32, 1000]
        items: g.Array[Inner, 40]

    values = np.linspace(-1, 1, 1000, dtype=np.float32)
    items = [Inner(k=i, w=[i, -i, 2 * i]) for i in range(40)]
    b = Big(v=values, items=items)
    data = pack(b)
    assert data[:4000] == values.tobytes()
    assert data[4000:4008] == pack(items[0])
    assert unpack(Big, data) == b

    class Sub(Scale):
        pass

    assert not is_params_class(Sub)
    assert pack(Sub(scale=3)) == pack(Scale(scale=3))

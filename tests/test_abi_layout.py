"""Params struct layouts and packed bytes, checked against ctypes as the oracle.

Every shape is described here independently of the implementation (a small
tree of ``("scalar", t)``, ``("bool",)``, ``("enum", E, tag)``,
``("array", elem, n)``, ``("struct", fields)``), turned both into a
``@g.params`` class and into a ``ctypes.Structure``; offsets, sizes,
alignments, the packed bytes, the NumPy dtype and the unpacked values must agree.
(No ``from __future__ import annotations`` here: annotations are real objects.)
"""

import ctypes
import enum
import random
import re
from typing import Any

import numpy as np
import pytest

import gompute_core as g
from gompute_core.abi import (
    is_params_class,
    layout_of,
    numpy_dtype,
    pack,
    record_of,
    struct_type_of,
    unpack,
)
from gompute_core.ir.nodes import ArrayType, StructType

SCALARS = [g.i8, g.i16, g.i32, g.i64, g.u8, g.u16, g.u32, g.u64, g.f16, g.f32, g.f64]
CTYPES = {
    g.i8: ctypes.c_int8, g.i16: ctypes.c_int16, g.i32: ctypes.c_int32, g.i64: ctypes.c_int64,
    g.u8: ctypes.c_uint8, g.u16: ctypes.c_uint16, g.u32: ctypes.c_uint32,
    g.u64: ctypes.c_uint64, g.f16: ctypes.c_uint16,  # no c_half: same size, align and bits
    g.f32: ctypes.c_float, g.f64: ctypes.c_double,
}


class Color(enum.IntEnum):
    RED = 0
    GREEN = 7
    BLUE = 100


class Signed(enum.IntEnum):
    LOW = -100
    HIGH = 120


ENUMS = [(Color, g.u8), (Color, g.u16), (Color, g.i32), (Signed, g.i8), (Signed, g.i64)]

Desc = tuple[Any, ...]


# ---------------------------------------------------------------- shape -> class / ctypes

class Shapes:
    """Builds params classes and ctypes mirrors from shape descriptions."""

    def __init__(self) -> None:
        self.count = 0

    def params_class(self, fields: list[tuple[str, Desc]]) -> type:
        self.count += 1
        name = f"Shape{self.count}"
        ns = {"__annotations__": {n: self.annotation(d) for n, d in fields},
              "__module__": __name__, "__qualname__": name}
        return g.params(type(name, (), ns))

    def annotation(self, d: Desc) -> Any:
        kind = d[0]
        if kind == "scalar":
            return d[1]
        if kind == "bool":
            return bool
        if kind == "enum":
            return g.Enum[d[1], d[2]]
        if kind == "array":
            return g.Array[self.annotation(d[1]), d[2]]
        return d[2]  # ("struct", fields, cls)


def ctype_of(d: Desc) -> Any:
    kind = d[0]
    if kind == "scalar":
        return CTYPES[d[1]]
    if kind == "bool":
        return ctypes.c_bool
    if kind == "enum":
        return CTYPES[d[2]]
    if kind == "array":
        return ctype_of(d[1]) * d[2]
    cls = d[2]
    if cls not in _CSTRUCTS:
        _CSTRUCTS[cls] = ctypes_struct(d[1])
    return _CSTRUCTS[cls]


_CSTRUCTS: dict[type, type] = {}


def ctypes_struct(fields: list[tuple[str, Desc]]) -> type:
    return type("CStruct", (ctypes.Structure,),
                {"_fields_": [(n, ctype_of(d)) for n, d in fields]})


def make_struct(shapes: Shapes, fields: list[tuple[str, Desc]]) -> Desc:
    return ("struct", fields, shapes.params_class(fields))


# ---------------------------------------------------------------- values

def random_value(rng: random.Random, d: Desc) -> Any:
    kind = d[0]
    if kind == "scalar":
        t = d[1]
        if t in (g.f16, g.f32, g.f64):
            return float(t(rng.uniform(-1000, 1000)))
        info = np.iinfo(t)
        return rng.choice([int(info.min), int(info.max), 0, rng.randint(int(info.min),
                                                                         int(info.max))])
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "enum":
        return rng.choice(list(d[1]))
    if kind == "array":
        return [random_value(rng, d[1]) for _ in range(d[2])]
    return {n: random_value(rng, fd) for n, fd in d[1]}


def host_value(d: Desc, v: Any) -> Any:
    """The value to pass to the params constructor (nested structs built explicitly)."""
    if d[0] == "array":
        return [host_value(d[1], x) for x in v]
    if d[0] == "struct":
        return d[2](**{n: host_value(fd, v[n]) for n, fd in d[1]})
    return v


def ctypes_value(d: Desc, v: Any) -> Any:
    kind = d[0]
    if kind == "scalar" and d[1] is g.f16:
        return int(np.float16(v).view(np.uint16))
    if kind in ("scalar", "bool"):
        return v
    if kind == "enum":
        return int(v)
    if kind == "array":
        return ctype_of(d)(*[ctypes_value(d[1], x) for x in v])
    cobj = ctype_of(d)()
    for n, fd in d[1]:
        setattr(cobj, n, ctypes_value(fd, v[n]))
    return cobj


# ---------------------------------------------------------------- the check

def check_shape(fields: list[tuple[str, Desc]], cls: type, rng: random.Random) -> None:
    cstruct = ctypes_struct(fields)
    layout = layout_of(cls)
    assert layout.size == ctypes.sizeof(cstruct)
    assert layout.align == ctypes.alignment(cstruct)
    assert [f.name for f in layout.fields] == [n for n, _ in fields]
    for (name, _), fl in zip(fields, layout.fields, strict=True):
        assert fl.offset == getattr(cstruct, name).offset, name
    check_nested_layouts(layout)

    dtype = numpy_dtype(layout)
    assert dtype.itemsize == layout.size
    assert dtype.alignment == layout.align
    assert dtype.isalignedstruct
    for fl in layout.fields:
        assert dtype.fields[fl.name][1] == fl.offset

    values = {n: random_value(rng, d) for n, d in fields}
    obj = cls(**{n: host_value(d, values[n]) for n, d in fields})
    cobj = cstruct()
    for n, d in fields:
        setattr(cobj, n, ctypes_value(d, values[n]))
    data = pack(obj)
    assert data == bytes(cobj)
    assert unpack(cls, data) == obj
    record = record_of(obj)
    assert record.dtype == dtype
    assert record.tobytes() == data


def check_nested_layouts(layout: Any) -> None:
    for fl in layout.fields:
        t = fl.type
        while isinstance(t, ArrayType):
            t = t.elem
        if isinstance(t, StructType):
            assert t.layout.name == t.name
            check_nested_layouts(t.layout)


# ---------------------------------------------------------------- hand-written shapes

def s(t: Any) -> Desc:
    return ("bool",) if t is bool else ("scalar", t)


def hand_shapes(shapes: Shapes) -> list[list[tuple[str, Desc]]]:
    inner = [("x", s(g.u8)), ("y", s(g.f64))]
    inner_d = make_struct(shapes, inner)
    pair = [("a", s(g.u16)), ("b", s(g.u8))]  # size 4, align 2, trailing padding
    pair_d = make_struct(shapes, pair)
    deep = [("p", pair_d), ("c", s(g.u8)), ("i", inner_d)]
    deep_d = make_struct(shapes, deep)
    return [
        [("x", s(g.f32))],
        [("c", s(g.u8)), ("d", s(g.f64))],
        [("d", s(g.f64)), ("c", s(g.u8))],
        [("a", s(g.u8)), ("b", s(g.u16)), ("c", s(g.u8))],
        [("a", s(g.u8)), ("b", s(g.u32)), ("c", s(g.u16)), ("d", s(g.u64)), ("e", s(g.i8))],
        [("flag", s(bool)), ("v", s(g.i32)), ("flag2", s(bool))],
        [("h", s(g.f16)), ("f", s(g.f32)), ("h2", s(g.f16))],
        [("c", ("enum", Color, g.u8)), ("w", s(g.u16)), ("e", ("enum", Signed, g.i64))],
        [("a", s(g.u8)), ("w", ("array", s(g.u16), 3)), ("b", s(g.u8))],
        [("a", s(g.u8)), ("w", ("array", s(g.f64), 2))],
        [("a", s(g.u8)), ("i", inner_d), ("b", s(g.u8))],
        [("ps", ("array", pair_d, 3)), ("z", s(g.u8))],
        [("b", s(bool)), ("d", deep_d), ("arr", ("array", deep_d, 2)), ("t", s(g.i16))],
        [("flags", ("array", s(bool), 5)), ("x", s(g.i64))],
        [("e", ("array", ("enum", Color, g.u16), 3)), ("c", s(g.u8))],
        [("i", s(g.i8)), ("j", s(g.i8)), ("k", s(g.i8))],
    ]


def test_hand_written_shapes_match_ctypes() -> None:
    shapes = Shapes()
    rng = random.Random(1)
    for fields in hand_shapes(shapes):
        check_shape(fields, shapes.params_class(fields), rng)


def test_known_layout_numbers() -> None:
    @g.params
    class Mixed:
        a: g.u8
        b: g.f64
        c: g.u16

    layout = layout_of(Mixed)
    assert [(f.name, f.offset) for f in layout.fields] == [("a", 0), ("b", 8), ("c", 16)]
    assert (layout.size, layout.align) == (24, 8)
    assert pack(Mixed(a=1, b=0.0, c=2)) == b"\x01" + b"\0" * 15 + b"\x02\x00" + b"\0" * 6


def test_ir_types_of_fields() -> None:
    @g.params
    class In:
        v: g.u16

    @g.params
    class Out:
        a: g.Array[g.f32, 3]
        b: bool
        e: g.Enum[Color, g.u8]
        n: In
        s: g.Array[In, 2]

    st = struct_type_of(Out)
    types = {f.name: f.type for f in st.layout.fields}
    assert types["a"] == ArrayType(np.float32, 3)
    assert types["b"] is np.bool_
    assert types["e"] is np.uint8
    assert types["n"] == struct_type_of(In)
    assert types["s"] == ArrayType(struct_type_of(In), 2)
    assert st.name == st.layout.name
    assert re.fullmatch(r"test_ir_types_of_fields_locals_Out_[0-9a-f]{8}", st.name)
    assert is_params_class(Out) and not is_params_class(Out(
        a=[1, 2, 3], b=False, e=Color.RED, n=In(v=1), s=[In(v=1), In(v=2)]))


# ---------------------------------------------------------------- random shapes

def random_desc(rng: random.Random, shapes: Shapes, depth: int) -> Desc:
    roll = rng.random()
    if roll < 0.45:
        return s(rng.choice(SCALARS))
    if roll < 0.55:
        return ("bool",)
    if roll < 0.62:
        e, tag = rng.choice(ENUMS)
        return ("enum", e, tag)
    if roll < 0.80:
        elem = random_desc(rng, shapes, depth) if depth < 3 else s(rng.choice(SCALARS))
        while elem[0] == "array":
            elem = random_desc(rng, shapes, depth)
        return ("array", elem, rng.randint(1, 4))
    if depth < 3:
        return make_struct(shapes, random_fields(rng, shapes, depth + 1))
    return s(rng.choice(SCALARS))


def random_fields(rng: random.Random, shapes: Shapes, depth: int) -> list[tuple[str, Desc]]:
    return [(f"f{i}", random_desc(rng, shapes, depth)) for i in range(rng.randint(1, 6))]


def test_random_shapes_match_ctypes() -> None:
    rng = random.Random(20261130)
    shapes = Shapes()
    nested = 0
    for _ in range(300):
        fields = random_fields(rng, shapes, 1)
        nested += any(d[0] == "struct" for _, d in fields)
        check_shape(fields, shapes.params_class(fields), rng)
    assert nested > 50  # the generator really nests


# ---------------------------------------------------------------- names

C_IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def _named(qualname: str, module: str = __name__) -> str:
    cls = type(qualname.rsplit(".", 1)[-1], (),
               {"__annotations__": {"x": g.u8}, "__module__": module, "__qualname__": qualname})
    return struct_type_of(g.params(cls)).name


def test_struct_names_are_c_identifiers_and_distinct() -> None:
    names = [
        _named("Plain"), _named("Outer.Inner"), _named("Outer_Inner"),
        _named("make.<locals>.P"), _named("float"), _named("_Tag"), _named("a__b"),
        _named("Ünïcode"),
    ]
    assert names[0] == "Plain"
    assert all(C_IDENT.match(n) and "__" not in n for n in names), names
    assert len(set(names)) == len(names)
    assert names[1].startswith("Outer_Inner_") and names[2] == "Outer_Inner"


def test_struct_names_do_not_depend_on_import_order() -> None:
    # the same plain name in another module is the same C name (never "first come keeps it")
    assert _named("Plain", module="other.module") == _named("Plain") == "Plain"


def test_two_classes_with_one_c_name_in_one_tree_are_refused() -> None:
    first = g.params(type("Twin", (), {"__annotations__": {"x": g.u8}, "__module__": "m1",
                                        "__qualname__": "Twin"}))
    second = g.params(type("Twin", (), {"__annotations__": {"y": g.f32}, "__module__": "m2",
                                         "__qualname__": "Twin"}))
    with pytest.raises(g.AbiError, match="both named 'Twin'"):
        g.params(type("Holder", (), {"__annotations__": {"a": first, "b": second},
                                      "__module__": __name__, "__qualname__": "Holder"}))


def test_struct_names_are_stable_across_processes() -> None:
    import subprocess
    import sys

    code = ("import gompute_core as g\n"
            "from gompute_core.abi import struct_type_of\n"
            "def make():\n"
            "    @g.params\n"
            "    class P:\n"
            "        x: g.u8\n"
            "    return P\n"
            "print(struct_type_of(make()).name)\n")
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout.strip() for _ in range(2)}
    assert len(runs) == 1
    (name,) = runs
    assert C_IDENT.match(name) and name.startswith("make_locals_P_")


@pytest.mark.parametrize("t", SCALARS)
def test_single_scalar_extremes_pack_like_numpy(t: Any) -> None:
    cls = type("One", (), {"__annotations__": {"v": t}, "__module__": __name__})
    cls = g.params(cls)
    if t in (g.f16, g.f32, g.f64):
        values = [float(np.finfo(t).max), float(np.finfo(t).tiny), -0.0, float("inf")]
    else:
        values = [int(np.iinfo(t).min), int(np.iinfo(t).max), 0]
    for v in values:
        assert pack(cls(v=v)) == np.array(v, dtype=t).tobytes()

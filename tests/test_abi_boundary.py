"""Custom boundary classes: ``gpu_layout`` + ``to_gpu`` + ``from_gpu``, all three or AbiError.

Annotations are strings here (``from __future__ import annotations``): the
host fields of a boundary class are never resolved nor converted.
"""

from __future__ import annotations

import dataclasses
from typing import Any

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
from gompute_core.errors import AbiError


class _Plain:
    pass


@g.params
class Scale:
    scale: g.f32


@g.params
class Wire:
    inv: g.f32
    n: g.u32


@g.params
class Host:
    """A host object holding things that cannot cross (a Python float, a Python int)."""

    gpu_layout = Wire
    scale: float
    count: int = 1

    def to_gpu(self) -> Wire:
        return Wire(inv=1.0 / self.scale, n=self.count)

    @classmethod
    def from_gpu(cls, wire: Wire) -> Host:
        return cls(scale=1.0 / float(wire.inv), count=int(wire.n))


def test_boundary_class_crosses_through_its_gpu_layout() -> None:
    h = Host(scale=4.0, count=3)
    assert type(h.scale) is float and type(h.count) is int  # host fields: never converted
    assert is_params_class(Host)
    assert struct_type_of(Host) == struct_type_of(Wire)
    assert pack(h) == pack(Wire(inv=0.25, n=3))
    assert unpack(Host, pack(h)) == h
    assert record_of(h)["n"] == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        h.scale = 2.0  # type: ignore[misc]


def test_boundary_nested_in_params_and_arrays() -> None:
    @g.params
    class Holder:
        a: g.u8
        h: Host
        hs: g.Array[Host, 2]

    x = Holder(a=1, h=Host(scale=2.0), hs=[Host(scale=1.0), {"scale": 0.5, "count": 2}])
    wires = [Wire(inv=0.5, n=1), Wire(inv=1.0, n=1), Wire(inv=2.0, n=2)]
    assert pack(x) == bytes([1, 0, 0, 0]) + b"".join(pack(w) for w in wires)
    assert unpack(Holder, pack(x)) == x
    assert layout_of(Holder).field("h").type == struct_type_of(Wire)


def test_boundary_with_own_init_is_left_alone() -> None:
    @g.params
    class Mutable:
        gpu_layout = Wire

        def __init__(self, inv: float) -> None:
            self.inv = inv

        def to_gpu(self) -> Wire:
            return Wire(inv=self.inv, n=0)

        @staticmethod
        def from_gpu(wire: Wire) -> Mutable:
            return Mutable(float(wire.inv))

    m = Mutable(0.5)
    m.inv = 2.0
    assert pack(m) == pack(Wire(inv=2.0, n=0))
    assert unpack(Mutable, pack(m)).inv == 2.0


@pytest.mark.parametrize("present", [
    ("gpu_layout",), ("to_gpu",), ("from_gpu",), ("gpu_layout", "to_gpu"),
    ("gpu_layout", "from_gpu"), ("to_gpu", "from_gpu"),
])
def test_boundary_needs_all_three(present: tuple[str, ...]) -> None:
    members: dict[str, Any] = {
        "gpu_layout": Wire,
        "to_gpu": lambda self: Wire(inv=0, n=0),
        "from_gpu": classmethod(lambda cls, wire: cls()),
    }
    ns = {name: members[name] for name in present}
    ns["__module__"] = __name__
    cls = type("Partial", (), ns)
    with pytest.raises(AbiError, match="Partial: a custom boundary") as info:
        g.params(cls)
    missing = [name for name in members if name not in present]
    assert str(info.value).endswith("missing: " + ", ".join(missing))


def test_boundary_member_checks() -> None:
    def make(**overrides: Any) -> type:
        ns: dict[str, Any] = {
            "gpu_layout": Wire, "to_gpu": lambda self: Wire(inv=0, n=0),
            "from_gpu": staticmethod(lambda wire: None), "__module__": __name__,
        }
        ns.update(overrides)
        return type("B", (), ns)

    with pytest.raises(AbiError, match="B.gpu_layout: _Plain is not a @g.params class"):
        g.params(make(gpu_layout=_Plain))
    with pytest.raises(AbiError, match="B.gpu_layout: Host is itself a custom boundary"):
        g.params(make(gpu_layout=Host))
    with pytest.raises(AbiError, match="B.from_gpu must be a classmethod or staticmethod"):
        g.params(make(from_gpu=lambda self, wire: None))
    with pytest.raises(AbiError, match="B.to_gpu must be an instance method"):
        g.params(make(to_gpu=staticmethod(lambda: None)))
    liar = g.params(make(to_gpu=lambda self: Scale(scale=1)))
    with pytest.raises(AbiError, match="B.to_gpu returned Scale, expected an instance of"):
        pack(liar())

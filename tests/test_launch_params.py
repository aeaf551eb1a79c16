"""``ParamsCache``: the params step every backend's launch shares (check, pack, cache).

The oracle is :func:`gompute_core.abi.pack` itself and, end to end, the kernel
function run as plain Python on the CPU backend.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gompute_core as g
from gompute_core.abi import pack
from gompute_core.backend import ParamsCache


@g.params
class LpScale:
    scale: g.f32


@g.params
class LpOther:
    scale: g.f64


class LpSub(LpScale):
    """An undecorated subclass: packs as its params base."""


@g.params
class LpMutable:
    """A custom boundary host class with its own (mutable) construction."""

    gpu_layout = LpScale

    def __init__(self, scale: float) -> None:
        self.scale = scale

    def to_gpu(self) -> LpScale:
        return LpScale(scale=self.scale)

    @classmethod
    def from_gpu(cls, wire: LpScale) -> LpMutable:
        return cls(float(wire.scale))



def lp_scale(x: Any, p: LpScale) -> Any:
    return x * p.scale


_SPEC = g.map("lp_scale_f32", g.f32, LpScale, lp_scale)
_PLAIN = g.map("lp_plain_f32", g.f32, None, lambda x: x + 1)


def test_plain_params_are_packed_once_per_object() -> None:
    cache = ParamsCache(_SPEC.lower())
    p = LpScale(scale=2)
    first = cache.get(p)
    assert first == pack(p) and cache.holds(p)
    assert cache.get(p) is first
    q = LpScale(scale=3)
    assert cache.get(q) == pack(q) and cache.holds(q) and not cache.holds(p)


def test_a_mutable_boundary_object_is_packed_on_every_get() -> None:
    cache = ParamsCache(_SPEC.lower())
    h = LpMutable(2.0)
    assert cache.get(h) == pack(LpScale(scale=2))
    assert not cache.holds(h)
    h.scale = 5.0
    assert cache.get(h) == pack(LpScale(scale=5))


def test_subclass_is_accepted_and_misfits_name_the_kernel() -> None:
    cache = ParamsCache(_SPEC.lower())
    assert cache.get(LpSub(scale=4)) == pack(LpScale(scale=4))
    with pytest.raises(g.InvalidArgument, match="'lp_scale_f32' expects params of layout"):
        cache.get(LpOther(scale=1))
    with pytest.raises(g.InvalidArgument, match="got NoneType"):
        cache.get(None)
    none = ParamsCache(_PLAIN.lower())
    assert none.get(None) == b""
    with pytest.raises(g.InvalidArgument, match="'lp_plain_f32' takes no params"):
        none.get(LpScale(scale=1))


def test_cpu_run_sees_a_mutated_boundary_object() -> None:
    pytest.importorskip("gompute_cpu")
    spec = g.map("lp_scale_boundary_f32", g.f32, LpMutable, lp_scale)
    h = LpMutable(2.0)
    with g.Kernel(spec, "cpu") as k:
        data = np.arange(4, dtype=np.float32)
        k.run(data, h)
        h.scale = 3.0
        k.run(data, h)
        want = np.arange(4, dtype=np.float32) * np.float32(2) * np.float32(3)
        np.testing.assert_array_equal(data, want)

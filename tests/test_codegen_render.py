"""Structure of the rendered C: what the entry points, params struct and dialect knobs
promise (the GPU runs and the host semantics test check behaviour)."""

from __future__ import annotations

import re
from typing import ClassVar

import numpy as np
import pytest

import gompute_core as g
from gompute_core.codegen import CRenderer


class Dialect(CRenderer):
    """A made-up dialect: every knob visibly different from the defaults."""

    name: ClassVar[str] = "test"
    prelude: ClassVar[str] = "// test prelude\n"
    block_barrier: ClassVar[str] = "BARRIER()"
    shared_qualifier: ClassVar[str] = "LOCAL_MEM"
    geometry: ClassVar[dict[str, str]] = {**CRenderer.geometry, "local_id": "TID"}
    kernel_qualifier: ClassVar[str] = "KERNEL void"
    half_prelude: ClassVar[str] = "// half support\n"


@g.params
class Inner:
    w: g.Array[g.f64, 3]
    flag: bool


@g.params
class Outer:
    scale: g.f32
    inner: Inner
    h: g.f16


def uses_all(x, p: Outer):
    return x * p.scale + g.f32(p.inner.w[1]) if p.inner.flag else x + g.f32(p.h)


def first(a, b):
    return a if a != 0 else b


def inc(x):
    return x + 1


def test_params_struct_has_asserts_on_every_field_nested_too() -> None:
    src = Dialect().render(g.map("cg_outer", g.f32, Outer, uses_all).lower())
    asserts = re.findall(r"static_assert\(__builtin_offsetof\((\w+), (\w+)\) == (\d+)", src)
    assert ("P_Outer", "scale", "0") in asserts
    assert ("P_Inner", "w", "0") in asserts and ("P_Inner", "flag", "24") in asserts
    assert any(a[:2] == ("P_Outer", "inner") for a in asserts)
    assert any(a[:2] == ("P_Outer", "h") for a in asserts)
    assert src.index("struct P_Inner") < src.index("struct P_Outer")
    assert re.search(r"static_assert\(sizeof\(P_Outer\) == \d+", src)
    assert "gp_f16 h;" in src and "gp_u8 flag;" in src and "double w[3];" in src
    assert "// half support" in src  # f16 field read: the half prelude is emitted


def test_entry_point_abi_and_dialect_knobs() -> None:
    src = Dialect().render(g.map("cg_inc", g.f32, None, inc).lower())
    assert "KERNEL void __launch_bounds__(256) cg_inc(float* __restrict__ data, gp_u64 n)" \
        in src
    assert "TID" in src and "uint4" in src  # 16-byte vector path
    assert "// half support" not in src  # no f16 anywhere: no half prelude
    assert "static __device__ __forceinline__ float f_" in src


def test_reduce_shapes() -> None:
    ordered = Dialect().render(g.reduce("cg_first", g.i32, None, first, 0).lower())
    preset = Dialect().render(g.sum("cg_sum", g.f32, None).lower())
    for src in (ordered, preset):
        assert "LOCAL_MEM" in src and "BARRIER()" in src
        assert "partials[blockIdx.x]" in src
    assert "gp_chunk" in ordered and "uint4" not in ordered  # order-preserving fold
    assert "uint4" in preset and "gp_chunk" not in preset  # vectorized, reassociated


def test_gather_and_scatter_skip_out_of_range() -> None:
    gsrc = Dialect().render(g.gather("cg_gather", g.f32, g.i32).lower())
    ssrc = Dialect().render(g.scatter("cg_scatter", g.u8, g.u64).lower())
    assert "gp_j >= 0 && (gp_u64)gp_j < bound" in gsrc and "out[gp_i] = src[gp_j]" in gsrc
    assert "(gp_u64)gp_j < bound" in ssrc and "out[gp_j] = src[gp_i]" in ssrc


def test_non_finite_constants_use_bit_patterns() -> None:
    def clamp(x):
        return x if x < np.inf else -np.inf

    src = Dialect().render(g.map("cg_inf", g.f64, None, clamp).lower())
    assert "__longlong_as_double(" in src


@pytest.mark.parametrize(("old", "value", "new"), [
    ("barrier", "BARRIER()", "block_barrier"),
    ("thread_idx", "TID", r"geometry\['local_id'\]"),
    ("grid_dim", "GRID", r"geometry\['grid_dim'\]"),
    ("raw_launch_bounds", "", "launch_bounds"),
])
def test_a_dialect_of_the_old_vocabulary_is_told_what_replaces_it(old: str, value: str,
                                                                   new: str) -> None:
    """A renderer written for plugin API 2's separate spec-entry names fails where it is
    defined, naming the replacement, instead of rendering with defaults it never set."""
    with pytest.raises(TypeError, match=f"sets '{old}'.*set {new}.* instead.*section 11"):
        type("OldDialect", (CRenderer,), {old: value})
    with pytest.raises(TypeError, match=r"launch_bounds is formatted with \{threads\}"):
        type("OldBounds", (CRenderer,), {"launch_bounds": "__launch_bounds__({}) "})

"""An index mixing ``u64`` and ``i64`` (``p.arr[i // p.n]`` in ``map_indexed``, whose ``i`` is
a ``u64``) is an ``f64`` under NumPy's promotion, which the oracle cannot index with
either: a ``KernelSyntaxError`` at the line says why and suggests the cast; with the
cast the kernel equals the oracle."""

from __future__ import annotations

import numpy as np
import pytest

import gompute_core as g


@g.params
class Table:
    arr: g.Array[g.f32, 8]
    n: g.i64


def mixed(x, i, p):
    return x + p.arr[i // p.n]


def cast(x, i, p):
    return x + p.arr[g.i64(i) // p.n]


def test_the_oracle_cannot_index_with_the_promoted_float() -> None:
    p = Table(arr=tuple(float(k) for k in range(8)), n=2)
    with pytest.raises(TypeError, match="float64"):
        mixed(np.float32(1), np.uint64(3), p)


def test_a_mixed_signedness_index_is_a_syntax_error_suggesting_the_cast() -> None:
    spec = g.map_indexed("ixt_mixed", g.f32, Table, mixed)
    with pytest.raises(g.KernelSyntaxError) as info:
        spec.lower()
    text = str(info.value)
    assert f"{__file__}:{mixed.__code__.co_firstlineno + 1}:" in text
    assert "'i // p.n' combines u64 and i64, which NumPy promotes to f64" in text
    assert "g.i64(...) around the u64 operand" in text


def test_with_the_cast_the_kernel_equals_the_oracle() -> None:
    pytest.importorskip("gompute_cpu")
    spec = g.map_indexed("ixt_cast", g.f32, Table, cast)
    p = Table(arr=tuple(float(k * k) for k in range(8)), n=2)
    data = np.arange(16, dtype=np.float32)
    want = np.array([cast(x, np.uint64(i), p) for i, x in enumerate(data)], np.float32)
    with g.Kernel(spec, "cpu") as k:
        k.run(data, p)
    assert np.array_equal(data, want)


def test_raw_kernel_indices_get_the_same_hint() -> None:
    @g.raw_kernel(name="ixt_raw")
    def ixt_raw(data: g.GlobalPtr[g.f32], n: g.u64):
        i = g.builtins.global_id(0)
        data[i // n] = 1.0

    with pytest.raises(g.KernelSyntaxError, match="combines i64 and u64, which NumPy "
                                                  "promotes to f64"):
        ixt_raw.lower()

"""Every spec kind over every scalar type it admits, at every edge size, through ``run``.

Sizes: 0, 1, block-1, block, block+1, 3*block+7 and 2**20+3 (blocks of 1,
32, 64, 96, 128, 256 and 1024 threads appear in the catalogue). Elementwise
kinds are compared bit for bit with the kernel function run as Python;
reductions exactly, except float sums (see ``_support.sum_tolerance``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from . import kernels as k
from . import kernels_params as kp
from ._reduce import check_reduce
from ._support import (
    SIZE_IDS,
    assert_bits,
    cases,
    check_elementwise,
    coef,
    rng_for,
    size_of,
    values,
    with_payload_nans,
)
from .catalogue import Entry, entries, select

pytestmark = pytest.mark.gompute()

VECTORIZED = {k.map_affine, k.zip_affine, k.zip_mixed, k.cast_ident, k.idx_xor,
              k.idx_to_float, k.pre_affine, k.pre_absdiff, k.pre_square, kp.composed}
"""Kernel functions that are straight-line arithmetic, so NumPy can run them on arrays."""

entries()  # build the catalogue at collection time (kernel-language errors surface here)


@pytest.mark.parametrize("size_id", SIZE_IDS)
@pytest.mark.parametrize("e", cases(select("map", "map_indexed")))
def test_map(e: Entry, size_id: str, gompute_kernels: Any) -> None:
    """map / map_indexed in place: ``data[i] = f(data[i], [i,] p)``."""
    kern = gompute_kernels.get(e)
    t, n = e.t(), size_of(size_id, e.block_size)
    rng = rng_for(e.key, n)
    data = values(t, n, rng, nan=True)
    p = coef(t, rng)
    before = data.copy()
    kern.run(data, p)
    check_elementwise(data, e.fn, [before], [p], t, vectorized=e.fn in VECTORIZED,
                      index_arg=e.kind == "map_indexed", context=f"{e.name} n={n}")


def cast_data(tin: type, tout: type, n: int, rng: np.random.Generator) -> np.ndarray:
    """Inputs whose conversion ``tin -> tout`` is defined (float -> int stays in range)."""
    if np.dtype(tin).kind == "f" and np.dtype(tout).kind in "iu":
        info = np.iinfo(tout)
        hi = min(float(info.max), float(np.finfo(tin).max)) * 0.9
        lo = max(float(info.min), -float(np.finfo(tin).max)) * 0.9
        out = values(tin, n, rng, lo=lo, hi=hi)
        special = np.array([0.0, -0.0, 0.5, -0.5, 0.99, -0.99, 1.5, 2.75])
        special = special[(special >= lo) & (special <= hi)].astype(tin)
        out[: min(n, special.size)] = special[: min(n, special.size)]
        return out
    return values(tin, n, rng, nan=True)


@pytest.mark.parametrize("size_id", SIZE_IDS)
@pytest.mark.parametrize("e", cases(select("map_to")))
def test_map_to(e: Entry, size_id: str, gompute_kernels: Any) -> None:
    """map_to: ``out[i] = f(inp[i], p)`` converted to Out (every cast direction)."""
    kern = gompute_kernels.get(e)
    tin, tout, n = e.t("In"), e.t("Out"), size_of(size_id, e.block_size)
    rng = rng_for(e.key, n)
    inp = cast_data(tin, tout, n, rng)
    out = values(tout, n, rng)
    p = coef(tout, rng)
    before = inp.copy()
    kern.run(inp, out, p)
    assert_bits(inp, before, nan_payload=True, context=f"{e.name}: input modified")
    check_elementwise(out, e.fn, [inp], [p], tout, vectorized=e.fn in VECTORIZED,
                      context=f"{e.name} n={n}")


@pytest.mark.parametrize("size_id", SIZE_IDS)
@pytest.mark.parametrize("e", cases(select("zip")))
def test_zip(e: Entry, size_id: str, gompute_kernels: Any) -> None:
    """zip: ``out[i] = f(a[i], b[i], p)`` (same and mixed types)."""
    kern = gompute_kernels.get(e)
    ta, tb, tout = e.t("A"), e.t("B"), e.t("Out")
    n = size_of(size_id, e.block_size)
    rng = rng_for(e.key, n)
    a, b = values(ta, n, rng, nan=True), values(tb, n, rng)
    b = b[rng.permutation(n)]  # pair specials with random values
    out = values(tout, n, rng)
    p = coef(tout, rng)
    kern.run(a, b, out, p)
    check_elementwise(out, e.fn, [a, b], [p], tout, vectorized=e.fn in VECTORIZED,
                      context=f"{e.name} n={n}")


# ---------------------------------------------------------------- reduce
def reduce_data(e: Entry, n: int, rng: np.random.Generator) -> np.ndarray:
    """Inputs suited to the reduce entry ``e`` (sparse for first/last non-zero)."""
    t = e.t()
    if e.fn in (k.first_nonzero, k.last_nonzero):
        data = np.zeros(n, t)
        if n:
            nz = rng.choice(n, size=min(n, int(rng.integers(0, 4))), replace=False)
            data[nz] = values(t, nz.size, rng, lo=1, hi=100)
        return data
    if np.dtype(t).kind == "f" and (e.kind == "sum" or e.key.startswith("rsum")):
        return values(t, n, rng, lo=-10, hi=10)
    return values(t, n, rng)


REDUCE_ENTRIES = select("reduce", "sum", "min", "max")


@pytest.mark.parametrize("size_id", SIZE_IDS)
@pytest.mark.parametrize("e", cases(REDUCE_ENTRIES))
def test_reduce(e: Entry, size_id: str, gompute_kernels: Any) -> None:
    """reduce (custom, including non-commutative combines) and sum/min/max presets."""
    kern = gompute_kernels.get(e)
    n = size_of(size_id, e.block_size)
    rng = rng_for(e.key, n)
    data = reduce_data(e, n, rng)
    p = coef(e.t(), rng)
    before = data.copy()
    got = kern.run(data, p)
    assert_bits(data, before, nan_payload=True, context=f"{e.name}: input modified")
    check_reduce(e, got, data, p, f"{e.name} n={n}")


@pytest.mark.parametrize("variant", ["none", "first", "last"])
@pytest.mark.parametrize("size_id", SIZE_IDS)
@pytest.mark.parametrize("e", cases(select("any", "all")))
def test_any_all(e: Entry, size_id: str, variant: str, gompute_kernels: Any) -> None:
    """any/all: one odd element at the start, at the end, or none."""
    kern = gompute_kernels.get(e)
    t, n = e.t(), size_of(size_id, e.block_size)
    rng = rng_for(e.key, n, variant)
    base, odd = (0, 1) if e.kind == "any" else (1, 0)
    data = np.full(n, base, t)
    if e.kind == "all" and n:
        data[:] = values(t, n, rng, specials=False) | t(1)
    if n and variant != "none":
        data[0 if variant == "first" else -1] = odd
    p = coef(t, rng)
    check_reduce(e, kern.run(data, p), data, p, f"{e.name} n={n} odd={variant}")


# ---------------------------------------------------------------- gather / scatter
def _reach(t: type) -> int:
    """The largest index of type ``t`` that can still be out of range."""
    return int(np.iinfo(t).max)


def _out_of_range(idx_t: type, bound: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` indices of ``idx_t`` outside ``[0, bound)`` (negatives and >= bound)."""
    info = np.iinfo(idx_t)
    pools = [rng.integers(bound, int(info.max), count, endpoint=True, dtype=idx_t),
             np.full(count, bound, idx_t)]
    if info.min < 0:
        pools.append(rng.integers(int(info.min), -1, count, endpoint=True, dtype=idx_t))
        pools.append(np.full(count, -1, idx_t))
    choice = rng.integers(0, len(pools), count)
    return np.stack(pools)[choice, np.arange(count)]


@pytest.mark.parametrize("size_id", SIZE_IDS)
@pytest.mark.parametrize("e", cases(select("gather")))
def test_gather(e: Entry, size_id: str, gompute_kernels: Any) -> None:
    """gather: ``out[i] = src[idx[i]]``; negative and too-large indices leave out[i] alone."""
    kern = gompute_kernels.get(e)
    t, it = e.t(), e.t("Idx")
    n = size_of(size_id, e.block_size)
    rng = rng_for(e.key, n)
    bound = max(1, min(n // 2 + 3, _reach(it)))
    src = with_payload_nans(values(t, bound, rng, nan=True), rng)
    inside = rng.integers(0, bound, n).astype(it)
    outside = _out_of_range(it, bound, n, rng)
    idx = np.where(rng.random(n) < 0.75, inside, outside).astype(it)
    out = with_payload_nans(values(t, n, rng), rng)
    before_out, before_src, before_idx = out.copy(), src.copy(), idx.copy()
    kern.run(src, idx, out)
    valid = (idx >= 0) & (idx < bound)
    want = before_out.copy()
    want[valid] = src[idx[valid].astype(np.int64)]
    assert_bits(out, want, nan_payload=True, context=f"{e.name} n={n} bound={bound}")
    assert_bits(src, before_src, nan_payload=True, context=f"{e.name}: src modified")
    assert_bits(idx, before_idx, context=f"{e.name}: idx modified")


@pytest.mark.parametrize("size_id", SIZE_IDS)
@pytest.mark.parametrize("e", cases(select("scatter")))
def test_scatter(e: Entry, size_id: str, gompute_kernels: Any) -> None:
    """scatter: ``out[idx[i]] = src[i]`` for unique in-range indices; the rest skipped."""
    kern = gompute_kernels.get(e)
    t, it = e.t(), e.t("Idx")
    n = size_of(size_id, e.block_size)
    rng = rng_for(e.key, n)
    bound = max(1, min(n // 2 + 3, _reach(it)))
    src = with_payload_nans(values(t, n, rng, nan=True), rng)
    idx = _out_of_range(it, bound, n, rng)
    m = min(n - n // 5, bound)
    where = rng.choice(n, size=m, replace=False) if m else np.zeros(0, np.int64)
    idx[where] = rng.permutation(bound)[:m].astype(it)
    out = with_payload_nans(values(t, bound, rng), rng)
    before_out = out.copy()
    kern.run(src, idx, out)
    valid = (idx >= 0) & (idx < bound)
    want = before_out.copy()
    want[idx[valid].astype(np.int64)] = src[valid]
    assert_bits(out, want, nan_payload=True, context=f"{e.name} n={n} bound={bound}")

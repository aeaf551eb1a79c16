"""Specs and chunk functions of ``bench/dask_cpu.py``, in a module the Dask workers import
(specs pickle by reference to the module that made them; a script's ``__main__`` cannot
be imported by a worker)."""

import importlib

import gompute_core as g


@g.params
class Affine:
    """``x * a + b`` (i64)."""

    a: g.i64
    b: g.i64


@g.params
class AffineF32:
    """``x * a + b`` (f32)."""

    a: g.f32
    b: g.f32


def affine(x, p):
    """The map: ``x * a + b`` (integers: the sum is exact, so results compare bit for bit)."""
    return x * p.a + p.b


AFFINE = g.map("dask_bench_affine", g.i64, Affine, affine)
TOTAL = g.sum("dask_bench_total", g.i64)
AFFINE_F32 = g.map("dask_bench_affine_f32", g.f32, AffineF32, affine)
TOTAL_F32 = g.sum("dask_bench_total_f32", g.f32)
SPECS = {"i64": (AFFINE, TOTAL, Affine), "f32": (AFFINE_F32, TOTAL_F32, AffineF32)}
"""Per value type: the map, the sum and the map's params class."""


def arange_mod(block_info=None, module="numpy", value_type="int64"):
    """One chunk of ``arange(n) % 1000`` (``value_type``), made where it runs with NumPy or CuPy."""
    xp = importlib.import_module(module)
    lo, hi = block_info[None]["array-location"][0]
    return (xp.arange(lo, hi, dtype=xp.int64) % 1000).astype(value_type, copy=False)

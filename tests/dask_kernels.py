"""Specs and params for ``tests/test_dask.py``, in a module the Dask workers import.

A spec pickles by reference to the module that made it, so the worker
processes of the test cluster import this module (``tests/`` is on their path)
to find the same specs.
"""

import gompute_core as g


@g.params
class Affine:
    """``x * scale + shift``."""

    scale: g.f32
    shift: g.f32


@g.params
class Stride:
    """Multiplier of the element and of its global index."""

    k: g.i64


@g.params
class Modulus:
    """Keep only the elements divisible by ``m``."""

    m: g.i64


def affine(x, p):
    """map f32: ``x * scale + shift``."""
    return x * p.scale + p.shift


def halve(x, p):
    """map_to i32 -> f64."""
    return g.f64(x) / 2.0


def weighted(a, b, p):
    """zip f32, i32 -> f64."""
    return g.f64(a) * g.f64(p.scale) + g.f64(b)


def with_index(x, i, p):
    """map_indexed i64: depends on the element's global index."""
    return x * p.k + g.i64(i) * g.i64(i)


def index_only(x, i):
    """map_indexed u64 with no params."""
    return x ^ (i * g.u64(2654435761))


def plus_index(x, i, p):
    """map_indexed i64 taking ``p`` although the spec has no params (``p`` unused)."""
    return x + g.i64(i)


def stride_index(x, i, p):
    """A second map_indexed with the params class of ``with_index``."""
    return x - g.i64(i) * p.k


def last_nonzero(a, b):
    """Associative and NOT commutative: the later non-zero value wins."""
    return b if b != 0 else a


def divisible(x, p):
    """``x`` if it is a multiple of ``m``, else 0."""
    return x if x % p.m == 0 else g.i64(0)


def square(x):
    """``pre`` of the f64 sum."""
    return x * x


def stride_plus_one(x, p):
    """map i64 with params: ``x * k + 1``."""
    return x * p.k + 1


def twice(x):
    """map i64 without params."""
    return x * 2


def minus_three(x, p):
    """map f64 taking ``p`` although the spec has no params (``p`` unused)."""
    return x - 3.0


def worker_device():
    """A ``device=`` function: called in the worker (the CPU backend has device 0)."""
    import distributed

    return 0 if distributed.get_worker().name is not None else 1


affine_map = g.map("dask_affine", g.f32, Affine, affine)
halve_to = g.map_to("dask_halve", g.i32, g.f64, None, halve)
weighted_zip = g.zip("dask_weighted", g.f32, g.i32, g.f64, Affine, weighted)
indexed = g.map_indexed("dask_indexed", g.i64, Stride, with_index)
indexed_plain = g.map_indexed("dask_indexed_plain", g.u64, None, index_only)
indexed_unused_p = g.map_indexed("dask_indexed_unused_p", g.i64, None, plus_index)
indexed_stride = g.map_indexed("dask_indexed_stride", g.i64, Stride, stride_index)
strided = g.map("dask_strided", g.i64, Stride, stride_plus_one)
doubled = g.map("dask_doubled", g.i64, None, twice)
shifted_down = g.map("dask_shifted_down", g.f64, None, minus_three)
total = g.sum("dask_total", g.i64)
squares = g.sum("dask_squares", g.f64, None, square)
smallest = g.min("dask_smallest", g.f32)
last_multiple = g.reduce("dask_last_multiple", g.i64, Modulus, last_nonzero, 0, divisible)
take = g.gather("dask_take", g.f32, g.i32)
take_small = g.gather("dask_take_small", g.f32, g.u8)

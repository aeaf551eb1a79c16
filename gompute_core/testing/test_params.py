"""Params shapes and fusion end to end.

Params: every scalar field type in one padded record (integers checked bit for
bit through u64, floats through f64), nested records two levels deep, fixed
arrays indexed with a run-time index, an enum with non-contiguous tags, a
bool, and a custom boundary class whose kernel sees its ``gpu_layout``.
Fusion: ``g.Fused`` of op classes and a ``g.Unary`` computes the composition,
as a map and as a reduce ``pre``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from . import kernels_params as kp
from ._reduce import check_reduce
from ._support import (
    SIZE_IDS,
    assert_bits,
    cases,
    check_elementwise,
    coef,
    rng_for,
    scalar_oracle,
    size_of,
    values,
)
from .catalogue import Entry, entries, entry

pytestmark = pytest.mark.gompute()

N = 777
FIELDS = tuple(kp.AllScalars.__annotations__)


def _rand(t: type, rng: np.random.Generator) -> Any:
    return values(t, 1, rng, specials=False)[0]


def all_scalars(rng: np.random.Generator) -> kp.AllScalars:
    """An ``AllScalars`` with random full-range values (bool, ints, floats)."""
    kwargs: dict[str, Any] = {}
    for name, t in zip(FIELDS, kp.AllScalars.__annotations__.values(), strict=True):
        kwargs[name] = _rand(np.bool_ if t is bool else t, rng)
    return kp.AllScalars(**kwargs)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("e", cases([entry("params_ints"), entry("params_floats")]))
def test_every_scalar_field(e: Entry, seed: int, gompute_kernels: Any) -> None:
    """Each field of a padded record of all scalar types reaches the kernel intact."""
    kern = gompute_kernels.get(e)
    t = e.t()
    rng = rng_for(e.key, seed)
    p = all_scalars(rng)
    data = values(t, 40, rng, specials=False)
    before = data.copy()
    kern.run(data, p)
    check_elementwise(data, e.fn, [before], [p], t, vectorized=False, index_arg=True,
                      context=f"{e.name} {p!r}")


@pytest.mark.parametrize("e", cases([entry("params_halves")]))
def test_half_fields(e: Entry, gompute_kernels: Any) -> None:
    """f16 params fields (scalar and array) between single bytes."""
    kern = gompute_kernels.get(e)
    rng = rng_for(e.key)
    p = kp.Halves(tag=int(rng.integers(0, 256)), h=float(rng.normal()),
                  odd=int(rng.integers(0, 256)), hs=tuple(float(v) for v in rng.normal(0, 9, 3)))
    data = values(np.float32, N, rng, lo=-4, hi=4)
    before = data.copy()
    kern.run(data, p)
    check_elementwise(data, e.fn, [before], [p], np.float32, vectorized=False, index_arg=True,
                      context=f"{e.name} {p!r}")


@pytest.mark.parametrize("flag", [False, True])
@pytest.mark.parametrize("shape", list(kp.Shape), ids=lambda s: s.name)
@pytest.mark.parametrize("e", cases([entry("params_nested")]))
def test_nested_arrays_enum_bool(e: Entry, shape: kp.Shape, flag: bool,
                                 gompute_kernels: Any) -> None:
    """Nested records, dynamically indexed arrays, an enum and a bool field."""
    kern = gompute_kernels.get(e)
    rng = rng_for(e.key, shape.name, flag)
    p = kp.NestOuter(
        tag=int(rng.integers(0, 256)),
        inner=kp.NestInner(w=float(rng.normal()), k=int(rng.integers(-2 ** 15, 2 ** 15))),
        coef=tuple(float(v) for v in rng.normal(0, 2, 5)),
        shape=shape, flag=flag,
        offs=tuple(int(v) for v in rng.integers(-2 ** 15, 2 ** 15, 3)),
        deep=kp.NestDeep(z=int(rng.integers(0, 256)),
                     inner=kp.NestInner(w=float(rng.normal()), k=int(rng.integers(-9, 9)))),
    )
    data = values(np.float32, N, rng, lo=-4, hi=4)
    before = data.copy()
    kern.run(data, p)
    check_elementwise(data, e.fn, [before], [p], np.float32, vectorized=False, index_arg=True,
                      context=f"{e.name} {p!r}")


@pytest.mark.parametrize("theta", [0.0, 0.7, -2.5])
@pytest.mark.parametrize("e", cases([entry("params_boundary")]))
def test_custom_boundary(e: Entry, theta: float, gompute_kernels: Any) -> None:
    """A class with gpu_layout/to_gpu/from_gpu: the kernel sees ``to_gpu()``'s fields."""
    kern = gompute_kernels.get(e)
    rng = rng_for(e.key, theta)
    p = kp.Polar(r=1.5, theta=theta)
    data = values(np.float32, N, rng)
    before = data.copy()
    kern.run(data, p)
    want = scalar_oracle(e.fn, [before], [p.to_gpu()], np.float32)
    assert_bits(data, want, context=f"{e.name} theta={theta}")


@pytest.mark.parametrize("e", cases([entry("mapfn_f32")]))
def test_map_fn(e: Entry, gompute_kernels: Any) -> None:
    """``g.map_fn``: value and params types read from the annotations."""
    kern = gompute_kernels.get(e)
    spec = e.spec()
    assert (spec.kind, spec.T, spec.params) == ("map", np.float32, e.params)
    rng = rng_for(e.key)
    data = values(np.float32, N, rng, nan=True)
    p = coef(np.float32, rng)
    before = data.copy()
    kern.run(data, p)
    check_elementwise(data, e.fn, [before], [p], np.float32, vectorized=True, context=e.name)


@pytest.mark.parametrize("e", cases([entry("noparams_i16")]))
def test_no_params(e: Entry, gompute_kernels: Any) -> None:
    """``P=None``: ``run(data)`` and ``launch(buf, n, None)``; the function takes no ``p``."""
    kern = gompute_kernels.get(e)
    rng = rng_for(e.key)
    data = values(np.int16, N, rng)
    before = data.copy()
    kern.run(data)
    check_elementwise(data, e.fn, [before], [], np.int16, vectorized=False, context=e.name)
    buf = kern.alloc(N)
    buf.upload(before)
    kern.launch(buf, N, None)
    kern.context.synchronize()
    got = np.empty_like(before)
    buf.download(got)
    buf.free()
    assert_bits(got, data, context=f"{e.name}: launch differs from run")


FUSED = [e for e in entries().values() if e.key.startswith("fused_")]


@pytest.mark.parametrize("size_id", ["1", "bs+1", "3bs+7", "2^20+3"])
@pytest.mark.parametrize("e", cases(FUSED))
def test_fused_map(e: Entry, size_id: str, gompute_kernels: Any) -> None:
    """A map over ``g.Fused([...])`` equals the ops applied one after another."""
    kern = gompute_kernels.get(e)
    t, n = e.t(), size_of(size_id, e.block_size)
    rng = rng_for(e.key, n)
    data = values(t, n, rng, nan=True)
    p = coef(t, rng)
    before = data.copy()
    kern.run(data, p)
    check_elementwise(data, kp.composed, [before], [p], t, vectorized=True,
                      context=f"{e.name} n={n}")
    head = before[:64]
    host = scalar_oracle(e.fn.eval, [head], [p], t)
    assert_bits(host, scalar_oracle(kp.composed, [head], [p], t),
                context=f"{e.name}: Fused.eval on the host differs from the composition")


@pytest.mark.parametrize("size_id", SIZE_IDS)
@pytest.mark.parametrize("e", cases([entry("fusedsum_f64"), entry("fusedmax_i16")]))
def test_fused_pre(e: Entry, size_id: str, gompute_kernels: Any) -> None:
    """A reduce preset whose ``pre`` is a fused pipeline."""
    kern = gompute_kernels.get(e)
    t, n = e.t(), size_of(size_id, e.block_size)
    rng = rng_for(e.key, n)
    data = values(t, n, rng, lo=-10, hi=10)
    p = coef(t, rng)
    check_reduce(e, kern.run(data, p), data, p, f"{e.name} n={n}")

"""Kernel-language semantics end to end: every backend computes what Python computes.

Integer operators wrap at every width; ``//`` and ``%`` are floor division
and floor modulo, including negative operands, ``min // -1`` and division by
zero (0, as NumPy); shifts by any count; NEP 50 weak literals; explicit
casts; ``if/elif/else``, ``for``/``while`` with ``break``/``continue``,
conditional expressions, ``abs``/``min``/``max``, helper calls, module
constants and enum members. Each result is compared bit for bit with the
kernel function run as Python on NumPy scalars.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from . import kernels as k
from ._support import assert_bits, cases, check_elementwise, coef, rng_for, values
from .catalogue import Entry, entries, entry

pytestmark = pytest.mark.gompute()

N = 700
"""Elements per semantics test: several blocks, small enough for the scalar oracle."""


def _lang(prefix: str) -> list[Entry]:
    return [e for e in entries().values() if e.group == "language" and e.key.startswith(prefix)]


def pairs(t: type, rng: np.random.Generator, *, nan: bool = False,
          shifts: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Operands: every pair of edge values, then random pairs (``N`` of each at least)."""
    edge = values(t, 16, rng, nan=nan)[:12]
    if shifts:
        width = np.dtype(t).itemsize * 8
        counts = [0, 1, 3, width - 1, width, width + 3]
        if np.dtype(t).kind == "i":
            counts += [-1, -width]
        edge_b = np.array(counts, dtype=object).astype(t)
    else:
        edge_b = edge
    a0, b0 = zip(*itertools.product(edge, edge_b), strict=True)
    a = np.concatenate([np.array(a0, t), values(t, N, rng, specials=False, nan=nan)])
    b_rand = values(t, N, rng, specials=False, nan=nan)
    if shifts:
        b_rand = (b_rand.astype(np.int64) % (np.dtype(t).itemsize * 8 + 4)).astype(t)
    b = np.concatenate([np.array(b0, t), b_rand])
    return a, b


@pytest.mark.parametrize("op", list(k.IntOp), ids=lambda o: o.name)
@pytest.mark.parametrize("e", cases(_lang("intops_")))
def test_int_ops(e: Entry, op: k.IntOp, gompute_kernels: Any) -> None:
    """Wrapping arithmetic, floor division/modulo (negatives, zero), bit ops, shifts."""
    kern = gompute_kernels.get(e)
    t = e.t("A")
    rng = rng_for(e.key, op.name)
    a, b = pairs(t, rng, shifts=op in (k.IntOp.LSHIFT, k.IntOp.RSHIFT))
    out = np.zeros(a.size, t)
    p = k.IntOpSel(op=op)
    kern.run(a, b, out, p)
    check_elementwise(out, e.fn, [a, b], [p], t, vectorized=False, context=f"{e.name} {op.name}")


@pytest.mark.parametrize("op", list(k.FloatOp), ids=lambda o: o.name)
@pytest.mark.parametrize("e", cases(_lang("floatops_")))
def test_float_ops(e: Entry, op: k.FloatOp, gompute_kernels: Any) -> None:
    """IEEE arithmetic with one rounding per operation (no contraction), NumPy's ``//``/``%``."""
    kern = gompute_kernels.get(e)
    t = e.t("A")
    rng = rng_for(e.key, op.name)
    a, b = pairs(t, rng, nan=op not in (k.FloatOp.MIN, k.FloatOp.MAX))
    out = np.zeros(a.size, t)
    p = k.FloatOpSel(op=op)
    kern.run(a, b, out, p)
    check_elementwise(out, e.fn, [a, b], [p], t, vectorized=False, context=f"{e.name} {op.name}")


@pytest.mark.parametrize("e", cases(_lang("weakint_")))
def test_weak_int_literals(e: Entry, gompute_kernels: Any) -> None:
    """``(x + 100) // 7 - 3 * x``: literals adopt x's width, so the sum wraps first."""
    kern = gompute_kernels.get(e)
    t = e.t()
    rng = rng_for(e.key)
    data = values(t, N, rng)
    p = coef(t, rng)
    before = data.copy()
    kern.run(data, p)
    check_elementwise(data, e.fn, [before], [p], t, vectorized=False, context=e.name)


@pytest.mark.parametrize("e", cases(_lang("weakfloat_") + _lang("casts_")))
def test_weak_float_and_casts(e: Entry, gompute_kernels: Any) -> None:
    """int * 0.5 is f64 (NEP 50); explicit casts truncate floats and wrap integers."""
    kern = gompute_kernels.get(e)
    tin, tout = e.t("In"), e.t("Out")
    rng = rng_for(e.key)
    inp = values(tin, N, rng)
    out = np.zeros(N, tout)
    p = coef(tout, rng)
    kern.run(inp, out, p)
    check_elementwise(out, e.fn, [inp], [p], tout, vectorized=False, context=e.name)


@pytest.mark.parametrize("n_iter", [0, 7, 40])
@pytest.mark.parametrize("mode", list(k.Mode), ids=lambda m: m.name)
@pytest.mark.parametrize("e", cases(_lang("loops_")))
def test_control_flow(e: Entry, mode: k.Mode, n_iter: int, gompute_kernels: Any) -> None:
    """for/while with break/continue, if/elif/else on an enum, ternaries, helpers, constants."""
    kern = gompute_kernels.get(e)
    t = e.t()
    rng = rng_for(e.key, mode.name, n_iter)
    data = np.concatenate([values(t, N // 2, rng), values(t, N // 2, rng, lo=-60, hi=60)])
    p = k.Ctl(n=n_iter, limit=int(rng.integers(0, 100)), mode=mode)
    before = data.copy()
    kern.run(data, p)
    check_elementwise(data, e.fn, [before], [p], t, vectorized=False,
                      context=f"{e.name} mode={mode.name} n={n_iter}")


@pytest.mark.parametrize("mode", [k.Mode.KEEP, k.Mode.NEGATE], ids=lambda m: m.name)
@pytest.mark.parametrize("e", cases(_lang("arrtup_")))
def test_local_arrays_and_tuples(e: Entry, mode: k.Mode, gompute_kernels: Any) -> None:
    """Per-thread arrays (2-D, passed to a helper) and tuples (returned, unpacked, swapped,
    indexed), bit for bit."""
    kern = gompute_kernels.get(e)
    t = e.t()
    rng = rng_for(e.key, mode.name)
    data = np.concatenate([values(t, N, rng, lo=-1000, hi=1000),
                           np.array([0.0, -0.0, 1.0, -2.5, 3.0], t)])
    p = k.Ctl(n=0, limit=0, mode=mode)
    before = data.copy()
    kern.run(data, p)
    check_elementwise(data, e.fn, [before], [p], t, vectorized=False,
                      context=f"{e.name} mode={mode.name}")


@pytest.mark.parametrize("mode", [k.Mode.KEEP, k.Mode.NEGATE], ids=lambda m: m.name)
@pytest.mark.parametrize("e", cases(_lang("fhelpers_")))
def test_float_helpers(e: Entry, mode: k.Mode, gompute_kernels: Any) -> None:
    """Float helpers with weak module constants, a while loop, min/max/abs."""
    kern = gompute_kernels.get(e)
    t = e.t()
    rng = rng_for(e.key, mode.name)
    hi = float(np.finfo(t).max) / 8
    data = np.concatenate([values(t, N // 2, rng, lo=-hi, hi=hi),
                           values(t, N // 2, rng, lo=-300, hi=300),
                           np.array([0.0, -0.0, 99.0, 100.0, 101.0, -1e-3], t)])
    p = k.Ctl(n=0, limit=0, mode=mode)
    before = data.copy()
    kern.run(data, p)
    check_elementwise(data, e.fn, [before], [p], t, vectorized=False,
                      context=f"{e.name} mode={mode.name}")


def test_lambda_combine(gompute_kernels: Any) -> None:
    """A reduce whose combine is a lambda; the result keeps T (no promotion to f64)."""
    e = entry("rsum_f32")
    kern = gompute_kernels.get(e)
    data = np.array([0.1, 0.2, 0.3], np.float32)
    got = kern.run(data, coef(np.float32, rng_for("lambda")))
    assert np.asarray(got).dtype == np.float32
    want = np.float32(np.float32(0.1) + np.float32(0.2)) + np.float32(0.3)
    assert abs(float(got) - float(want)) <= 2 * float(np.spacing(want))
    assert_bits(data, np.array([0.1, 0.2, 0.3], np.float32), context="input modified")

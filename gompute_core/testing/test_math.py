"""``g.math`` end to end over every float type.

Exact functions (``floor ceil trunc fabs copysign fmod sqrt fma`` and the
predicates ``isnan isinf isfinite``) are compared bit for bit (NaN to any
NaN); ``fma`` on inputs where it differs from ``a * b + c`` rounded twice.
Transcendental functions are compared within ``ULPS`` units in the last place
of the kernel function run as Python (NumPy's implementation):
libm, SVML, CUDA's and ROCm's device libraries all promise a few ulp, none
promises correct rounding. Inputs stay in each function's domain and away
from huge arguments where range reduction differs between libraries.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from . import kernels as k
from ._support import assert_bits, assert_ulps, cases, rng_for, scalar_oracle, values
from .catalogue import Entry, entries

pytestmark = pytest.mark.gompute()

ULPS = {np.float16: 1, np.float32: 4, np.float64: 4}
"""Tolerance in ulps per type for transcendental functions."""

EXACT = {k.MathFn.FLOOR, k.MathFn.CEIL, k.MathFn.TRUNC, k.MathFn.FABS, k.MathFn.COPYSIGN,
         k.MathFn.FMOD, k.MathFn.SQRT, k.MathFn.ISNAN, k.MathFn.ISINF, k.MathFn.ISFINITE,
         k.MathFn.FMA_ERROR, k.MathFn.FMA_SQUARE}

FMA = {k.MathFn.FMA_ERROR, k.MathFn.FMA_SQUARE}

N = 600

NUMPY_REF = {
    k.MathFn.SQRT: np.sqrt, k.MathFn.EXP: np.exp, k.MathFn.LOG: np.log, k.MathFn.LOG2: np.log2,
    k.MathFn.LOG10: np.log10, k.MathFn.EXP2: np.exp2, k.MathFn.SIN: np.sin,
    k.MathFn.COS: np.cos, k.MathFn.TAN: np.tan, k.MathFn.TANH: np.tanh,
    k.MathFn.ASIN: np.arcsin, k.MathFn.ACOS: np.arccos, k.MathFn.ATAN: np.arctan,
    k.MathFn.SINH: np.sinh, k.MathFn.COSH: np.cosh, k.MathFn.EXPM1: np.expm1,
    k.MathFn.LOG1P: np.log1p, k.MathFn.FLOOR: np.floor, k.MathFn.CEIL: np.ceil,
    k.MathFn.TRUNC: np.trunc, k.MathFn.FABS: np.fabs,
}
"""Independent references for the oracle itself (``g.math`` on NumPy scalars)."""

_DOMAIN: dict[k.MathFn, tuple[float, float]] = {
    k.MathFn.EXP: (-20, 20), k.MathFn.EXP2: (-30, 30), k.MathFn.EXPM1: (-20, 20),
    k.MathFn.LOG: (1e-6, 1e6), k.MathFn.LOG2: (1e-6, 1e6), k.MathFn.LOG10: (1e-6, 1e6),
    k.MathFn.LOG1P: (-0.9, 1e4), k.MathFn.SIN: (-10, 10), k.MathFn.COS: (-10, 10),
    k.MathFn.TAN: (-1.5, 1.5), k.MathFn.TANH: (-10, 10), k.MathFn.ASIN: (-1, 1),
    k.MathFn.ACOS: (-1, 1), k.MathFn.ATAN: (-100, 100), k.MathFn.ATAN2: (-100, 100),
    k.MathFn.SINH: (-10, 10), k.MathFn.COSH: (-10, 10), k.MathFn.HYPOT: (-1e3, 1e3),
    k.MathFn.ERF: (-4, 4), k.MathFn.ERFC: (-3, 3), k.MathFn.ERFINV: (-1, 1),
    k.MathFn.ERFCINV: (0, 2),
}


def inputs(fn: k.MathFn, t: type, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Operands in ``fn``'s domain (exact functions get every special value, NaN included)."""
    if fn in EXACT:
        a = values(t, N, rng, nan=True)
        b = values(t, N, rng, nan=True)[rng.permutation(N)]
        if fn is k.MathFn.FMOD:
            b = np.where(rng.random(N) < 0.8, values(t, N, rng, lo=-50, hi=50), b).astype(t)
        if fn in FMA:  # mostly finite products and sums, where one rounding shows
            moderate = rng.random(N) < 0.8
            a = np.where(moderate, values(t, N, rng, lo=-30, hi=30), a).astype(t)
            b = np.where(moderate, values(t, N, rng, lo=-30, hi=30), b).astype(t)
        return a, b
    lo, hi = _DOMAIN[fn]
    if t is np.float16:
        lo, hi = max(lo, -8.0), min(hi, 8.0)
    a = values(t, N, rng, lo=lo, hi=hi)
    b = values(t, N, rng, lo=lo, hi=hi)
    edges = np.array([0.0, -0.0, 1.0, -1.0, 0.5], t)
    edges = edges[(edges >= lo) & (edges <= hi)]
    a[: edges.size] = edges
    return a, b


@pytest.mark.parametrize("fn", list(k.MathFn), ids=lambda f: f.name.lower())
@pytest.mark.parametrize("e", cases([e for e in entries().values()
                                     if e.key.startswith("math_")]))
def test_math(e: Entry, fn: k.MathFn, gompute_kernels: Any) -> None:
    """``g.math.<fn>`` matches the Python run (exactly, or within ``ULPS``)."""
    kern = gompute_kernels.get(e)
    t = e.t("A")
    rng = rng_for(e.key, fn.name)
    a, b = inputs(fn, t, rng)
    out = np.zeros(N, t)
    p = k.MathSel(fn=fn)
    kern.run(a, b, out, p)
    want = scalar_oracle(e.fn, [a, b], [p], t)
    context = f"{e.name} {fn.name.lower()}"
    ref = NUMPY_REF.get(fn)
    if ref is not None:
        with np.errstate(all="ignore"):
            assert_ulps(want, ref(a).astype(t), 0 if fn in EXACT else ULPS[t],
                        context=f"{context}: the Python oracle (g.math) against NumPy")
    if fn in EXACT:
        assert_bits(out, want, context=context)
        if fn in FMA:
            assert _twice_rounded_differs(fn, a, b, want), \
                f"{context}: no input where fma differs from a * b + c"
    else:
        assert_ulps(out, want, ULPS[t], context=context)


def _twice_rounded_differs(fn: k.MathFn, a: np.ndarray, b: np.ndarray, want: np.ndarray) -> bool:
    """True when the expected fma differs from ``a * b + c`` rounded twice somewhere (the
    inputs test one rounding)."""
    with np.errstate(all="ignore"):
        twice = a * b - a * b if fn is k.MathFn.FMA_ERROR else a * a + b
    both = np.isfinite(twice) & np.isfinite(want)
    return bool(np.any(twice[both] != want[both]))

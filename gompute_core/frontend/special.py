"""Inverse error functions, written once in the kernel language: ``g.math.erfinv`` and
``g.math.erfcinv`` lower to calls of :func:`erfinv_f64` / :func:`erfcinv_f64` (on doubles;
f32 and f16 arguments are converted to f64 and the result rounded back), so every
backend, the oracle included, runs this same code on its own ``log``, ``sqrt``, ``exp``,
``erf`` and ``erfc``.

The algorithm: M. Giles' single-precision approximation ("Approximating the erfinv
function", GPU Computing Gems, 2011), evaluated in double, seeds one step of Halley's
method on ``erf(x) = y`` (``erfc(x) = z`` in the tails, so that an argument near 1, or a
tiny ``erfcinv`` argument, keeps its precision); below ``z = 1e-7`` (where Giles' tail
polynomial leaves its fitted range) an asymptotic seed ``x**2 = L - log(L)/2 -
log(sqrt(pi))`` with ``L = -log(z)`` takes two Halley steps. Halley's step triples the
correct digits, so the result is as accurate as the platform's ``erf``/``erfc`` (a few
ulp at most); ``erfcinv`` of arguments down to the smallest normal double (2.2e-308)
keeps that accuracy. Subnormal f64 arguments of ``erfcinv`` lose accuracy with the
subnormal ``erfc`` values they are compared with.
"""

from __future__ import annotations

from typing import Any

from . import kmath as gm

TWO_OVER_SQRT_PI = 1.1283791670955126
"""2 / sqrt(pi)."""
LOG_SQRT_PI = 0.5723649429247001
"""log(sqrt(pi))."""


def _giles(w: Any) -> Any:
    """Giles' single-precision polynomial ``p(w)``: ``erfinv(y) ~ p(w) * y`` with
    ``w = -log((1 - y) * (1 + y))`` (fitted for ``w < 16.6``)."""
    if w < 5.0:
        w = w - 2.5
        p = 2.81022636e-08
        p = 3.43273939e-07 + p * w
        p = -3.5233877e-06 + p * w
        p = -4.39150654e-06 + p * w
        p = 0.00021858087 + p * w
        p = -0.00125372503 + p * w
        p = -0.00417768164 + p * w
        p = 0.246640727 + p * w
        return 1.50140941 + p * w
    w = gm.math.sqrt(w) - 3.0
    p = -0.000200214257
    p = 0.000100950558 + p * w
    p = 0.00134934322 + p * w
    p = -0.00367342844 + p * w
    p = 0.00573950773 + p * w
    p = -0.0076224613 + p * w
    p = 0.00943887047 + p * w
    p = 1.00167406 + p * w
    return 2.83297682 + p * w


def _halley(x: Any, u: Any) -> Any:
    """One Halley step for ``erf(x) = y`` or ``erfc(x) = z``, given the Newton step
    ``u = f(x) / f'(x)`` (both have ``f'' / f' = -2x``)."""
    return x - u / (1.0 + x * u)


def _central_step(x: Any, a: Any) -> Any:
    """Halley's step for ``erf(x) = a``."""
    return _halley(x, (gm.math.erf(x) - a) / (TWO_OVER_SQRT_PI * gm.math.exp(-x * x)))


def _tail_step(x: Any, z: Any) -> Any:
    """Halley's step for ``erfc(x) = z``; ``exp(x * x)`` is taken in two halves, which
    stay finite for every ``x`` a double ``z`` can give."""
    h = gm.math.exp(0.5 * x * x)
    return _halley(x, ((z - gm.math.erfc(x)) * h) * h / TWO_OVER_SQRT_PI)


def _central(a: Any) -> Any:
    """``erfinv(a)`` for ``0 <= a <= 0.5``."""
    x = _giles(-gm.math.log1p(-a * a)) * a
    return _central_step(x, a)


def _tail(z: Any) -> Any:
    """``erfcinv(z)`` for ``0 < z < 0.5``."""
    if z > 1e-7:
        x = _giles(-gm.math.log(z * (2.0 - z))) * (1.0 - z)
        return _tail_step(x, z)
    big = -gm.math.log(z)
    x = gm.math.sqrt(big - 0.5 * gm.math.log(big) - LOG_SQRT_PI)
    return _tail_step(_tail_step(x, z), z)


def erfinv_f64(y: Any) -> Any:
    """The inverse error function of a double: ``erf(erfinv(y)) == y`` for ``-1 < y < 1``;
    ``+-inf`` at ``+-1``, NaN outside ``[-1, 1]`` and for NaN."""
    a = gm.math.fabs(y)
    if not a <= 1.0:  # NaN too
        return gm.math.nan
    if a == 1.0:
        return gm.math.copysign(gm.math.inf, y)
    if a <= 0.5:
        return gm.math.copysign(_central(a), y)
    return gm.math.copysign(_tail(1.0 - a), y)


def erfcinv_f64(z: Any) -> Any:
    """The inverse complementary error function of a double: ``erfc(erfcinv(z)) == z``
    for ``0 < z < 2``; ``+inf`` at 0, ``-inf`` at 2, NaN outside ``[0, 2]`` and for NaN."""
    if not (z >= 0.0 and z <= 2.0):  # NaN too
        return gm.math.nan
    if z == 0.0:
        return gm.math.inf
    if z == 2.0:
        return -gm.math.inf
    if z > 1.0:
        return -_below_one(2.0 - z)
    return _below_one(z)


def _below_one(z: Any) -> Any:
    """``erfcinv(z)`` for ``0 < z <= 1``."""
    if z >= 0.5:
        return _central(1.0 - z)
    return _tail(z)

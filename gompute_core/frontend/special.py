"""Inverse error functions, written once in the kernel language: ``g.math.erfinv`` and
``g.math.erfcinv`` lower to calls of :func:`erfinv_f64` / :func:`erfcinv_f64` (on doubles;
f32 and f16 arguments are converted to f64 and the result rounded back), so every
backend, the oracle included, runs this same code on its own ``log``, ``sqrt``, ``exp``
and ``erfc``.

The algorithm: M. Giles' double-precision approximation ("Approximating the erfinv
function", GPU Computing Gems Jade Edition, 2011): ``erfinv(y) = p(w) * y`` with ``w =
-log((1 - y) * (1 + y))`` and ``p`` one of three polynomials (in ``w`` below 6.25, in
``sqrt(w)`` below 16 and above); ``erfcinv(z)`` takes ``w = -log(z * (2 - z))`` from ``z``
itself, so a tiny ``z`` keeps its precision. One logarithm, at most one square root and a
polynomial: about what a GPU vendor's own ``erfcinv`` costs (the earlier algorithm, a
single-precision seed refined by a Halley step on ``erfc``, took 3.6x CuPy's Monte Carlo
example on an H100). Within 3 ulp of the exact value wherever the fit holds (``w <
36``, i.e. ``erfcinv`` arguments from about 1.2e-16 and every ``erfinv`` argument a double
can hold below 1). Below that, an asymptotic seed ``x**2 = L - log(L)/2 - log(sqrt(pi))``
with ``L = -log(z)`` takes two steps of Halley's method on ``erfc(x) = z``, as accurate as
the platform's ``erfc`` (a few ulp); ``erfcinv`` of arguments down to the smallest normal
double (2.2e-308) keeps that accuracy. Subnormal f64 arguments of ``erfcinv`` lose
accuracy with the subnormal ``erfc`` values they are compared with.
"""

from __future__ import annotations

from typing import Any

from . import kmath as gm

TWO_OVER_SQRT_PI = 1.1283791670955126
"""2 / sqrt(pi)."""
LOG_SQRT_PI = 0.5723649429247001
"""log(sqrt(pi))."""
FIT_W = 36.0
"""Giles' polynomials hold for ``w`` below this (``z`` above about 1.2e-16)."""


def _giles(w: Any) -> Any:
    """Giles' double-precision ``p(w)``: ``erfinv(y) ~ p(w) * y`` with ``w = -log((1 - y) *
    (1 + y))`` (``0 <= w < 36``)."""
    if w < 6.25:
        w = w - 3.125
        p = -3.6444120640178196996e-21
        p = -1.685059138182016589e-19 + p * w
        p = 1.2858480715256400167e-18 + p * w
        p = 1.115787767802518096e-17 + p * w
        p = -1.333171662854620906e-16 + p * w
        p = 2.0972767875968561637e-17 + p * w
        p = 6.6376381343583238325e-15 + p * w
        p = -4.0545662729752068639e-14 + p * w
        p = -8.1519341976054721522e-14 + p * w
        p = 2.6335093153082322977e-12 + p * w
        p = -1.2975133253453532498e-11 + p * w
        p = -5.4154120542946279317e-11 + p * w
        p = 1.051212273321532285e-09 + p * w
        p = -4.1126339803469836976e-09 + p * w
        p = -2.9070369957882005086e-08 + p * w
        p = 4.2347877827932403518e-07 + p * w
        p = -1.3654692000834678645e-06 + p * w
        p = -1.3882523362786468719e-05 + p * w
        p = 0.0001867342080340571352 + p * w
        p = -0.00074070253416626697512 + p * w
        p = -0.0060336708714301490533 + p * w
        p = 0.24015818242558961693 + p * w
        p = 1.6536545626831027356 + p * w
        return p
    if w < 16.0:
        w = gm.math.sqrt(w) - 3.25
        p = 2.2137376921775787049e-09
        p = 9.0756561938885390979e-08 + p * w
        p = -2.7517406297064545428e-07 + p * w
        p = 1.8239629214389227755e-08 + p * w
        p = 1.5027403968909827627e-06 + p * w
        p = -4.013867526981545969e-06 + p * w
        p = 2.9234449089955446044e-06 + p * w
        p = 1.2475304481671778723e-05 + p * w
        p = -4.7318229009055733981e-05 + p * w
        p = 6.8284851459573175448e-05 + p * w
        p = 2.4031110387097893999e-05 + p * w
        p = -0.0003550375203628474796 + p * w
        p = 0.00095328937973738049703 + p * w
        p = -0.0016882755560235047313 + p * w
        p = 0.0024914420961078508066 + p * w
        p = -0.0037512085075692412107 + p * w
        p = 0.005370914553590063617 + p * w
        p = 1.0052589676941592334 + p * w
        p = 3.0838856104922207635 + p * w
        return p
    w = gm.math.sqrt(w) - 5.0
    p = -2.7109920616438573243e-11
    p = -2.5556418169965252055e-10 + p * w
    p = 1.5076572693500548083e-09 + p * w
    p = -3.7894654401267369937e-09 + p * w
    p = 7.6157012080783393804e-09 + p * w
    p = -1.4960026627149240478e-08 + p * w
    p = 2.9147953450901080826e-08 + p * w
    p = -6.7711997758452339498e-08 + p * w
    p = 2.2900482228026654717e-07 + p * w
    p = -9.9298272942317002539e-07 + p * w
    p = 4.5260625972231537039e-06 + p * w
    p = -1.9681778105531670567e-05 + p * w
    p = 7.5995277030017761139e-05 + p * w
    p = -0.00021503011930044477347 + p * w
    p = -0.00013871931833623122026 + p * w
    p = 1.0103004648645343977 + p * w
    p = 4.8499064014085844221 + p * w
    return p


def _halley(x: Any, u: Any) -> Any:
    """One Halley step for ``erfc(x) = z``, given the Newton step ``u = f(x) / f'(x)``
    (``f'' / f' = -2x``)."""
    return x - u / (1.0 + x * u)


def _tail_step(x: Any, z: Any) -> Any:
    """Halley's step for ``erfc(x) = z``; ``exp(x * x)`` is taken in two halves, which
    stay finite for every ``x`` a double ``z`` can give."""
    h = gm.math.exp(0.5 * x * x)
    return _halley(x, ((z - gm.math.erfc(x)) * h) * h / TWO_OVER_SQRT_PI)


def _tiny(z: Any) -> Any:
    """``erfcinv(z)`` for ``0 < z`` below Giles' fit (about 1.2e-16): an asymptotic seed
    and two Halley steps."""
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
    w = -gm.math.log((1.0 - a) * (1.0 + a))
    if w < FIT_W:
        return gm.math.copysign(_giles(w) * a, y)
    return gm.math.copysign(_tiny(1.0 - a), y)


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
    """``erfcinv(z)`` for ``0 < z <= 1``: ``erfinv(1 - z)`` with ``w`` from ``z``."""
    w = -gm.math.log(z * (2.0 - z))
    if w < FIT_W:
        return _giles(w) * (1.0 - z)
    return _tiny(z)

"""``g.math``: math functions of the kernel language.

Each function runs on NumPy scalars in the Python oracle and is recognised by
the frontend as an IR intrinsic; names, arities and the NumPy ufunc of each come
from the one table, :mod:`gompute_core.ir.intrinsics`. Semantics (identical on every backend, as far
as each backend's libm allows):

* float arguments keep their type (``g.math.sqrt(np.float32(2))`` is an f32);
* integer, bool and Python-number arguments are converted to ``f64`` first
  (unlike NumPy's ``np.sqrt(np.int8(4))``, which picks f16: one rule is easier
  to reason about and to render);
* functions of several arguments first promote their arguments with NumPy 2 (NEP 50)
  rules, then convert a non-float result type to ``f64``;
* ``isnan``/``isinf``/``isfinite`` return ``bool``;
* ``erf`` and ``erfc`` have no NumPy ufunc: they are computed with :func:`math.erf` /
  :func:`math.erfc` in double precision and rounded back to the argument's float type;
* ``erfinv`` and ``erfcinv`` run the kernel-language functions of :mod:`.special` on the
  argument converted to f64 (the code every backend runs), rounded back to its type;
* ``fma(a, b, c)`` is ``a * b + c`` rounded once: the oracle computes the exact value
  with :class:`fractions.Fraction` and rounds it to the promoted float type (IEEE 754
  round to nearest even, overflow to infinity, zeros signed as IEEE 754 says), so it is
  exact for f16, f32 and f64 alike (Python 3.13's ``math.fma`` would do f64 only).

Constants ``pi``, ``e``, ``inf`` and ``nan`` are Python floats, i.e. weak
literals: ``x * g.math.pi`` with an f32 ``x`` stays f32.
"""

from __future__ import annotations

import math as _pymath
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from ..ir.intrinsics import g_math_entries

__all__ = ["math", "MathNamespace", "INTRINSICS", "PREDICATES", "BINARY_INTRINSICS", "ARITY",
           "fma"]


def _float_arg(x: Any) -> np.floating:
    """``x`` as a NumPy float scalar: floats keep their type, everything else is f64."""
    if isinstance(x, np.floating):
        return x
    if isinstance(x, (bool, int, float, np.integer, np.bool_)):
        return np.float64(x)
    raise TypeError(f"g.math functions take numbers, not {type(x).__name__}")


def _float_args(*args: Any) -> tuple[np.floating, ...]:
    """Promote numbers NumPy-style (NEP 50), then make the common type a float."""
    for v in args:
        if not isinstance(v, (bool, int, float, np.integer, np.bool_, np.floating)):
            raise TypeError(f"g.math functions take numbers, not {type(v).__name__}")
    t = np.result_type(*args).type
    if not issubclass(t, np.floating):
        t = np.float64
    return tuple(t(v) for v in args)


def _unary(ufunc: Callable[[Any], Any], name: str) -> Callable[[Any], Any]:
    def fn(x: Any) -> Any:
        return ufunc(_float_arg(x))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``{name}(x)`` on a float (integers are converted to f64 first)."
    return fn


def _binary(ufunc: Callable[[Any, Any], Any], name: str) -> Callable[[Any, Any], Any]:
    def fn(a: Any, b: Any) -> Any:
        return ufunc(*_float_args(a, b))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``{name}(a, b)`` on the promoted float type of ``a`` and ``b``."
    return fn


def _in_double(fn: Callable[[float], float], name: str) -> Callable[[Any], Any]:
    """``name(x)`` for a function NumPy lacks: Python's ``math.<name>`` in double precision,
    rounded to ``x``'s float type."""
    def in_double(x: Any) -> Any:
        xf = _float_arg(x)
        return type(xf)(fn(float(xf)))

    in_double.__name__ = in_double.__qualname__ = name
    in_double.__doc__ = (f"``{name}(x)`` computed in double precision and rounded to ``x``'s "
                         "float type.")
    return in_double


def round_exact(q: Fraction, t: type[np.floating]) -> np.floating:
    """The rational ``q`` rounded once to float type ``t`` (round to nearest, ties to even;
    gradual underflow; infinity beyond the largest finite value; ``-0.0`` for a negative
    ``q`` that rounds to zero)."""
    info = np.finfo(t)
    p, emin, emax = info.nmant + 1, int(info.minexp), int(info.maxexp)
    if q == 0:
        return t(0.0)
    negative = q < 0
    n, d = abs(q.numerator), q.denominator
    e = n.bit_length() - d.bit_length()  # 2**e <= |q| < 2**(e + 1) after the fix-up
    if (n << max(0, -e)) < (d << max(0, e)):
        e -= 1
    shift = max(e, emin) - p + 1  # the value of the last significand bit
    num, den = (n, d << shift) if shift >= 0 else (n << -shift, d)
    m, r = divmod(num, den)
    if 2 * r > den or (2 * r == den and m & 1):
        m += 1
    if m.bit_length() + shift > emax:  # m * 2**shift >= 2**emax: overflow
        out = t(np.inf)
    else:
        out = t(_pymath.ldexp(m, shift))  # exact: m has at most p bits
    return -out if negative else out


def fma(a: Any, b: Any, c: Any) -> Any:
    """``a * b + c`` with one rounding, on the promoted float type of the three (integers are
    converted to f64 first): the exact value, rounded once (see :func:`round_exact`)."""
    x, y, z = _float_args(a, b, c)
    t = type(x)
    if not (np.isfinite(x) and np.isfinite(y) and np.isfinite(z)):
        if np.isfinite(x) and np.isfinite(y):  # an infinite or NaN addend wins
            return z
        with np.errstate(all="ignore"):  # infinities and NaNs: IEEE arithmetic is exact
            return t(x * y + z)
    exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
    if exact == 0:
        # an exact zero sum is -0.0 only when both the product and the addend are -0.0
        # (a nonzero product cancelled by the addend gives +0.0)
        product_negative = bool(np.signbit(x)) != bool(np.signbit(y))
        zeros = (x == 0 or y == 0) and z == 0
        return t(-0.0) if zeros and product_negative and np.signbit(z) else t(0.0)
    return round_exact(exact, t)


def _library(name: str) -> Callable[[Any], Any]:
    """``name(x)`` computed by the kernel-language function ``special.<name>_f64`` on ``x``
    converted to f64, rounded to ``x``'s float type (what the frontend lowers it to)."""
    def on_double(x: Any) -> Any:
        from . import special

        xf = _float_arg(x)
        with np.errstate(all="ignore"):
            return type(xf)(getattr(special, f"{name}_f64")(np.float64(xf)))

    on_double.__name__ = on_double.__qualname__ = name
    on_double.__doc__ = (f"``{name}(x)`` computed in double precision (the code every backend "
                         "runs, :mod:`gompute_core.frontend.special`) and rounded to ``x``'s "
                         "float type.")
    return on_double


PREDICATES: frozenset[str] = frozenset(m.name for m in g_math_entries() if m.kind == "predicate")
"""Intrinsics returning bool."""

BINARY_INTRINSICS: frozenset[str] = frozenset(m.name for m in g_math_entries() if m.arity == 2)
"""Intrinsics taking two arguments."""

ARITY: dict[str, int] = {m.name: m.arity for m in g_math_entries()}
"""The number of arguments of each ``g.math`` function."""

_EXACT_ORACLES: dict[str, Callable[..., Any]] = {"fma": fma}
"""``g.math`` functions whose oracle is written here (no NumPy ufunc, and Python's ``math``
function in double precision would round twice)."""


class MathNamespace:
    """The ``g.math`` namespace: functions usable both in the oracle and in kernels."""

    pi: float = _pymath.pi
    e: float = _pymath.e
    inf: float = _pymath.inf
    nan: float = _pymath.nan

    def __repr__(self) -> str:
        return "<gompute math namespace>"


math = MathNamespace()
"""``g.math``: see the module docstring for the semantics."""

INTRINSICS: dict[int, str] = {}
"""``id`` of each ``g.math`` function -> IR intrinsic name (the functions live forever)."""

for _entry in g_math_entries():
    _f: Callable[..., Any]
    if _entry.name in _EXACT_ORACLES:
        _f = _EXACT_ORACLES[_entry.name]
    elif _entry.kind == "library":
        _f = _library(_entry.name)
    elif _entry.numpy is None:
        _f = _in_double(getattr(_pymath, _entry.name), _entry.name)
    elif _entry.arity == 1:
        _f = _unary(getattr(np, _entry.numpy), _entry.name)
    else:
        _f = _binary(getattr(np, _entry.numpy), _entry.name)
    setattr(MathNamespace, _entry.name, staticmethod(_f))
    INTRINSICS[id(_f)] = _entry.name

erf: Callable[[Any], Any] = MathNamespace.erf  # type: ignore[attr-defined]
"""The error function (``g.math.erf``)."""

def intrinsic_of(obj: object) -> str | None:
    """The IR intrinsic name of a ``g.math`` function object, or None."""
    name = INTRINSICS.get(id(obj))
    if name is not None and getattr(MathNamespace, name, None) is obj:
        return name
    return None

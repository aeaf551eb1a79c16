"""The one table of math intrinsics: what each is, how the language spells it and how
every renderer computes it.

The frontend builds ``g.math`` (the oracle functions and their lowering) from it,
the IR's :data:`~gompute_core.ir.nodes.Intrinsic` names are exactly its
:func:`ir_names` (a test pins the two), the C renderer takes its function names
and its "f32 through f64" set from it and the numba renderer its NumPy names;
``tests/test_intrinsics.py`` renders one tiny kernel per entry with every renderer.

Kinds:

* ``float``: ``g.math.<name>``: a function of floats, same type in and out
  (integer, bool and Python-number arguments are converted to ``f64`` first; several
  arguments are promoted together first);
* ``predicate``: ``g.math.<name>``: a float in, ``bool`` out;
* ``builtin``: Python's ``abs``/``min``/``max`` on any number, as the builtins
  behave on NumPy scalars (each renderer has its own rule for integers);
* ``operator``: not an IR intrinsic but the float form of an operator (``**``)
  computed by a math library function; listed so that its C spelling and
  precision policy live here too;
* ``library``: ``g.math.<name>`` of one float argument, not an IR intrinsic either: the
  frontend lowers it to a call of a kernel-language function of the core
  (:mod:`gompute_core.frontend.special`) on doubles, so every backend runs the same code
  (``erfinv``, ``erfcinv``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

IntrinsicKind = Literal["float", "predicate", "builtin", "operator", "library"]


@dataclass(frozen=True)
class MathIntrinsic:
    """One math function of the kernel language and its spellings per renderer."""

    #: the IR name (``CallIntrinsic.func``) and the ``g.math`` attribute.
    name: str
    #: number of arguments.
    arity: int
    kind: IntrinsicKind
    #: the NumPy ufunc (``numpy.<numpy>``) the oracle and the numba renderer apply (``None``
    #: for ``builtin`` entries, which are Python's own). A ``float`` entry without one (``erf``)
    #: applies Python's ``math.<name>`` in double precision and rounds the result to the
    #: argument's float type, except ``fma``, whose oracle rounds the exact ``a * b + c``
    #: once (:func:`gompute_core.frontend.kmath.fma`) and whose numba form is LLVM's
    #: ``llvm.fma`` intrinsic.
    numpy: str | None
    #: the C99 ``<math.h>`` function on ``double`` (its ``float`` form appends ``f``; ``abs``
    #: of a float is ``fabs``); ``None`` when C-family renderers compute it with a generated
    #: helper (``min``/``max``; integer ``abs`` too).
    c: str | None
    #: the f32 form is computed in double and rounded once (correctly rounded in practice,
    #: as the CPU's libm, where the f32 device functions may be an ulp or two away).
    f32_via_f64: bool = False
    #: the f16 form is computed in double and rounded once, not in float (``fma``: the
    #: product of two f16 is exact in double and their sum with a third is either exact or
    #: far from an f16 rounding boundary, so the one rounding to f16 is the correct one; in
    #: float the sum would be rounded twice).
    f16_via_f64: bool = False
    #: the operator spelling for ``operator`` entries (``**``).
    operator: str = ""

    @property
    def in_g_math(self) -> bool:
        """True when the kernel language spells it ``g.math.<name>(...)``."""
        return self.kind in ("float", "predicate", "library")


def _float(name: str, numpy: str | None, arity: int = 1, via_f64: bool = True) -> MathIntrinsic:
    return MathIntrinsic(name, arity, "float", numpy, name, via_f64)


INTRINSICS: tuple[MathIntrinsic, ...] = (
    MathIntrinsic("abs", 1, "builtin", None, "fabs"),
    MathIntrinsic("min", 2, "builtin", None, None),
    MathIntrinsic("max", 2, "builtin", None, None),
    _float("sqrt", "sqrt", via_f64=False),
    _float("exp", "exp"),
    _float("log", "log"),
    _float("log2", "log2"),
    _float("log10", "log10"),
    _float("exp2", "exp2"),
    _float("sin", "sin"),
    _float("cos", "cos"),
    _float("tan", "tan"),
    _float("tanh", "tanh"),
    _float("asin", "arcsin"),
    _float("acos", "arccos"),
    _float("atan", "arctan"),
    _float("atan2", "arctan2", arity=2),
    _float("sinh", "sinh"),
    _float("cosh", "cosh"),
    _float("floor", "floor", via_f64=False),
    _float("ceil", "ceil", via_f64=False),
    _float("trunc", "trunc", via_f64=False),
    _float("fabs", "fabs", via_f64=False),
    _float("copysign", "copysign", arity=2, via_f64=False),
    _float("fmod", "fmod", arity=2, via_f64=False),
    _float("hypot", "hypot", arity=2),
    _float("expm1", "expm1"),
    _float("log1p", "log1p"),
    _float("erf", None),
    _float("erfc", None),
    MathIntrinsic("fma", 3, "float", None, "fma", f16_via_f64=True),
    MathIntrinsic("isnan", 1, "predicate", "isnan", "isnan"),
    MathIntrinsic("isinf", 1, "predicate", "isinf", "isinf"),
    MathIntrinsic("isfinite", 1, "predicate", "isfinite", "isfinite"),
    MathIntrinsic("pow", 2, "operator", "power", "pow", True, operator="**"),
    MathIntrinsic("erfinv", 1, "library", None, None),
    MathIntrinsic("erfcinv", 1, "library", None, None),
)
"""Every math intrinsic, in the order of :data:`~gompute_core.ir.nodes.Intrinsic`."""

BY_NAME: dict[str, MathIntrinsic] = {m.name: m for m in INTRINSICS}
"""The table by name (IR intrinsics and operator functions share one namespace)."""


def intrinsic(name: str) -> MathIntrinsic:
    """The entry called ``name`` (``KeyError`` for a name the table does not list)."""
    return BY_NAME[name]


def ir_names() -> tuple[str, ...]:
    """Names a ``CallIntrinsic`` may carry (every entry but the operator and library
    functions)."""
    return tuple(m.name for m in INTRINSICS if m.kind not in ("operator", "library"))


def g_math_entries() -> tuple[MathIntrinsic, ...]:
    """The entries of ``g.math`` (kinds ``float``, ``predicate`` and ``library``)."""
    return tuple(m for m in INTRINSICS if m.in_g_math)


def f16_via_f64() -> frozenset[str]:
    """Names whose f16 form is computed through f64 (see :attr:`MathIntrinsic.f16_via_f64`)."""
    return frozenset(m.name for m in INTRINSICS if m.f16_via_f64)


def f32_via_f64() -> frozenset[str]:
    """Names whose f32 form is computed through f64 (see :attr:`MathIntrinsic.f32_via_f64`)."""
    return frozenset(m.name for m in INTRINSICS if m.f32_via_f64)

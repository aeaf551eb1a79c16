"""Differential fuzz tier: random kernels against their Python oracle.

Each case is a kernel from :mod:`.fuzzgen` (seed and index in every failure message;
``--gompute-fuzz-seed`` reproduces a run, ``--gompute-fuzz-count`` sets its size). A
kernel must either be rejected with a ``KernelSyntaxError`` pointing at a line of its own
file, or compute, on edge inputs (0, -1, min, max, NaN, +-inf, -0.0, subnormals, and every
pair of them) and random ones, exactly what the kernel function computes when run as
Python on NumPy scalars: bit for bit, except where the oracle's value came from a
transcendental ``g.math`` call (the outermost one of the kernel's last ``return``); there
the tolerance is ``fuzzgen.ULPS`` ulps of the float type the call computed in (its
argument's; one ulp of an output type narrower than that), so an f32 ``log`` returned as
f64 is compared at f32 precision and an f64 one at f64 precision, however the result is
converted. Elements where the oracle itself is undefined are not compared: Python raises
(``int(nan)``, a Python int too large for the output, division of Python numbers by zero),
NumPy reports an invalid cast (NaN or an out-of-range float converted to an integer, which
the kernel language leaves undefined), or ``copysign`` reads the sign of a NaN
(unspecified: x86 makes negative NaNs, GPUs positive ones).
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pytest

from ..errors import KernelSyntaxError
from ..types import INT_TYPES, SCALAR_TYPES, short_name
from ._support import rng_for, ulp_distance, values
from .fuzzgen import TRANSCENDENTAL, ULPS, FuzzCase, generate

pytestmark = pytest.mark.gompute()

EDGES = 12
"""Edge values per input type; every pair of them is an element."""

RANDOM = 48
"""Random elements after the edge pairs."""


def inputs(case: FuzzCase) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of edge values of A and B, then random pairs."""
    rng = rng_for("fuzz", case.seed, case.index)
    ea = values(case.A, EDGES, rng, nan=True)
    eb = values(case.B, EDGES, rng, nan=True)
    pa, pb = zip(*itertools.product(ea, eb), strict=True)
    a = np.concatenate([np.array(pa, case.A), values(case.A, RANDOM, rng, specials=False)])
    b = np.concatenate([np.array(pb, case.B), values(case.B, RANDOM, rng, specials=False)])
    return a, b


class UndefinedCast(ArithmeticError):
    """The oracle converted NaN or an out-of-range float to an integer type."""


def _float_to_int(x: Any, t: type) -> None:
    """Raise UndefinedCast where the kernel language leaves ``t(x)`` undefined."""
    if isinstance(x, (float, np.floating)) and t in INT_TYPES:
        info = np.iinfo(t)  # type: ignore[type-var]
        if not (math.isfinite(x) and int(info.min) - 1 < float(x) < int(info.max) + 1):
            raise UndefinedCast(f"{short_name(t)}({x!r})")


class UnspecifiedSign(ArithmeticError):
    """The oracle read the sign of a NaN (``copysign(x, nan)``), which the kernel language
    leaves unspecified: x86 makes negative NaNs, GPUs and ARM positive ones."""


class OracleMath:
    """Stands for ``g.math`` while the oracle runs: ``copysign`` with a NaN sign raises
    UnspecifiedSign; a transcendental function records in ``computed_in`` the float type
    it computed in; everything else is ``g.math``'s."""

    def __init__(self) -> None:
        self.computed_in: type | None = None

    def __getattr__(self, name: str) -> Any:
        import gompute_core as g

        value = getattr(g.math, name)
        if name in TRANSCENDENTAL:
            def transcendental(*args: Any) -> Any:
                result = value(*args)
                self.computed_in = type(result)
                return result

            return transcendental
        if name != "copysign":
            return value

        def copysign(x: Any, y: Any) -> Any:
            if np.isnan(y):
                raise UnspecifiedSign(f"copysign({x!r}, {y!r})")
            return value(x, y)

        return copysign


class OracleTypes:
    """Stands for ``gompute_core`` in a fuzz kernel's globals while the oracle runs: the
    integer casts raise UndefinedCast where the kernel language leaves them undefined
    (NumPy converts silently), ``math`` is :class:`OracleMath`; everything else is
    ``gompute_core``'s."""

    def __init__(self) -> None:
        self.math = OracleMath()

    def __getattr__(self, name: str) -> Any:
        import gompute_core as g

        value = getattr(g, name)
        if not (isinstance(value, type) and value in INT_TYPES):
            return value

        def cast(x: Any) -> Any:
            _float_to_int(x, value)
            return value(x)

        return cast


class Oracle(NamedTuple):
    """The oracle's values (``out_t``), where they are defined, and per element the float
    type its transcendental ``g.math`` call computed in (``None``: none was called)."""

    want: np.ndarray
    defined: np.ndarray
    computed_in: list[type | None]


def oracle(fn: Any, a: np.ndarray, b: np.ndarray, out_t: type) -> Oracle:
    """``fn`` run as Python per element, converted to ``out_t``; where it is defined; and
    what its transcendental call computed in."""
    want = np.zeros(a.size, out_t)
    defined = np.ones(a.size, bool)
    computed_in: list[type | None] = []
    real = fn.__globals__["g"]
    types = fn.__globals__["g"] = OracleTypes()
    try:
        for j in range(a.size):
            types.math.computed_in = None
            with warnings.catch_warnings(record=True) as caught, \
                    np.errstate(all="ignore", invalid="warn"):
                warnings.simplefilter("always")
                try:
                    result = fn(a[j], b[j])
                    _float_to_int(result, out_t)
                    want[j] = np.asarray(result).astype(out_t)[()]
                except (ArithmeticError, ValueError):
                    defined[j] = False
            if any("cast" in str(w.message) for w in caught):
                defined[j] = False
            computed_in.append(types.math.computed_in)
    finally:
        fn.__globals__["g"] = real
    return Oracle(want, defined, computed_in)


def _beyond(got: np.ndarray, want: np.ndarray, computed_in: type) -> np.ndarray:
    """Where ``got`` is farther from ``want`` than a transcendental call computed in
    ``computed_in`` may be: ``ULPS`` ulps of ``computed_in`` when the output type holds it
    exactly (both are converted back to it, exactly), else one ulp of the narrower output
    type (two values within a few ulps of a wider type round at most one ulp apart)."""
    if np.dtype(computed_in).itemsize <= got.dtype.itemsize:
        with np.errstate(all="ignore"):
            return ulp_distance(got.astype(computed_in), want.astype(computed_in)) \
                > ULPS[computed_in]
    return ulp_distance(got, want) > 1


def compare(got: np.ndarray, want: np.ndarray,
            computed_in: Sequence[type | None]) -> list[int]:
    """Indices of the elements where the kernel disagrees with the oracle: bit for bit
    (NaN equal to NaN), within :func:`_beyond`'s tolerance where the oracle's value came
    from a transcendental call computed in a float type (``computed_in``, per element)."""
    bits = f"u{got.dtype.itemsize}"
    far = got.view(bits) != want.view(bits)
    if got.dtype.kind == "f":
        far &= ~(np.isnan(got) & np.isnan(want))
        for t in {t for t in computed_in if t is not None}:
            where = np.array([c is t for c in computed_in], bool)
            far[where] = _beyond(got[where], want[where], t)
    return [int(j) for j in np.flatnonzero(far)]


def defined_inputs(case: FuzzCase, fn: Any
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[type | None]]:
    """The case's inputs where the oracle is defined, with the oracle's values and what
    each computed in: ``(a, b, want, computed_in)``. A kernel runs only there: an undefined
    float-to-int cast is undefined behaviour in compiled code too (LLVM may even loop
    forever)."""
    a, b = inputs(case)
    want, defined, computed_in = oracle(fn, a, b, case.Out)
    return a[defined], b[defined], want[defined], \
        [t for t, d in zip(computed_in, defined, strict=True) if d]


def disagreements(case: FuzzCase, fn: Any, kernel: Any
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[int]]:
    """Run ``kernel`` (the case's zip of ``fn``) on :func:`defined_inputs`:
    ``(a, b, got, want, indices that disagree)``."""
    a, b, want, computed_in = defined_inputs(case, fn)
    got = np.zeros(a.size, case.Out)
    kernel.run(a, b, got, None)
    return a, b, got, want, compare(got, want, computed_in)


def check_case(case: FuzzCase, directory: str, backend: str) -> str:
    """Run one case: ``"rejected"`` or ``"agreed"``; a test failure describing it otherwise."""
    import gompute_core as g

    fn = case.load(directory)
    where = f"{directory}/{case.name}.py"
    repro = (f"fuzz kernel seed {case.seed} index {case.index} "
             f"(rerun with --gompute-fuzz-seed={case.seed}); A={short_name(case.A)} "
             f"B={short_name(case.B)} Out={short_name(case.Out)}\n{case.source}")
    try:
        spec = g.zip(case.name, case.A, case.B, case.Out, None, fn)
        kernel = g.Kernel(spec, backend)
    except KernelSyntaxError as exc:
        if exc.filename != where or not isinstance(exc.lineno, int):
            pytest.fail(f"rejected without a line of the kernel's file ({exc}): {repro}")
        return "rejected"
    with kernel:
        a, b, got, want, bad = disagreements(case, fn, kernel)
    if bad:
        shown = "; ".join(f"a={a[j]!r} b={b[j]!r}: got {got[j]!r} want {want[j]!r}"
                          for j in bad[:5])
        pytest.fail(f"{len(bad)} of {a.size} element(s) differ from the oracle "
                    f"({shown}): {repro}", pytrace=False)
    return "agreed"


def backend_types(info: Any) -> list[type]:
    """The scalar types the backend supports."""
    return [t for t in SCALAR_TYPES if short_name(t) not in set(info.unsupported_types)]


def test_fuzz_kernel(fuzz_index: int, gompute_fuzz_seed: int, gompute_backend: str,
                     gompute_info: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    """One random kernel: rejected at a line of its file, or equal to its oracle."""
    directory = str(tmp_path_factory.mktemp("fuzz", numbered=True))
    case = generate(gompute_fuzz_seed, fuzz_index, backend_types(gompute_info))
    check_case(case, directory, gompute_backend)

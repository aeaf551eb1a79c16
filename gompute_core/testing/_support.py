"""Shared machinery of the conformance tests: cases, sizes, data, oracles, comparisons.

Oracles. The kernel function itself, run as plain Python on NumPy scalars
element by element (``scalar_oracle``), is the reference. For large arrays a
Python loop is too slow, so ``elementwise_oracle`` runs the same function on
whole NumPy arrays when it is straight-line arithmetic (NumPy's array and
scalar semantics agree under NEP 50), and otherwise checks a fixed random
subsample of elements with the scalar loop.

Comparisons. Integer and elementwise float results are compared bit for bit
(``-0.0`` differs from ``0.0``). A NaN produced by arithmetic matches any NaN:
IEEE 754 leaves computed NaN payloads (and signs) to the hardware — x86 gives
a negative default NaN, NVIDIA and AMD GPUs a positive canonical one — so
payloads are compared exactly only where a kernel moves data without
arithmetic (gather, scatter, identity casts), via ``nan_payload=True``.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ..types import FLOAT_TYPES, INT_TYPES, short_name
from .catalogue import Entry

SCALAR_LIMIT = 5000
"""Arrays up to this size are checked against the scalar oracle on every element."""

SUBSAMPLE = 1500
"""Elements checked with the scalar oracle on larger arrays (plus the first and last 64)."""

SIZE_IDS: tuple[str, ...] = ("0", "1", "bs-1", "bs", "bs+1", "3bs+7", "2^20+3")
"""Edge sizes, relative to the spec's block size."""


def size_of(size_id: str, block_size: int) -> int:
    """The element count an id of :data:`SIZE_IDS` stands for."""
    table = {"0": 0, "1": 1, "bs-1": block_size - 1, "bs": block_size,
             "bs+1": block_size + 1, "3bs+7": 3 * block_size + 7, "2^20+3": 2 ** 20 + 3}
    return table[size_id]


def mark(kind: str | None = None, types: Sequence[type | str] = (),
         capability: str | None = None) -> pytest.MarkDecorator:
    """The ``gompute`` marker for a test needing ``kind``, ``types`` and a device
    ``capability``."""
    names = tuple(t if isinstance(t, str) else short_name(t) for t in types)
    return pytest.mark.gompute(kind=kind, types=names, capability=capability)


def cases(entries: Sequence[Entry]) -> list[Any]:
    """``pytest.param`` per catalogue entry, id'd by key and marked with its needs."""
    return [pytest.param(e, id=e.key, marks=mark(e.spec_kind, e.type_names()))
            for e in entries]


def rng_for(*parts: object) -> np.random.Generator:
    """A generator seeded from ``parts`` (deterministic across runs and processes)."""
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))


# ---------------------------------------------------------------- data
def values(t: type, n: int, rng: np.random.Generator, *, specials: bool = True,
           nan: bool = False, lo: float | None = None, hi: float | None = None) -> np.ndarray:
    """``n`` values of type ``t``: full range for ints, mixed magnitudes for floats.

    With ``specials`` the first elements are the type's edge values (0, 1,
    -1, min, max; for floats also -0.0, +-inf, the smallest subnormal and
    the largest finite value, and NaN when ``nan``). ``lo``/``hi`` bound
    the values instead (no specials).
    """
    if t is np.bool_:
        return rng.integers(0, 2, n).astype(np.bool_)
    if lo is not None or hi is not None:
        lo = -1.0 if lo is None else lo
        hi = 1.0 if hi is None else hi
        if t in INT_TYPES:
            return rng.integers(int(lo), int(hi), n, endpoint=True).astype(t)
        return rng.uniform(lo, hi, n).astype(t)
    if t in INT_TYPES:
        info = np.iinfo(t)
        out = rng.integers(info.min, info.max, n, endpoint=True, dtype=t)
        edge = [0, 1, info.max, info.min, info.max - 1, info.min + 1, 7]
        if info.min < 0:
            edge += [-1, -7]
    else:
        fi = np.finfo(t)
        exp = rng.uniform(-3, np.log10(float(fi.max)) / 3, n)
        sign = rng.choice([-1.0, 1.0], n)
        with np.errstate(over="ignore"):
            out = (sign * rng.uniform(1, 10, n) * 10.0 ** exp).astype(t)
        edge = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, float(fi.smallest_subnormal),
                -float(fi.max), float(fi.max), 0.5, -2.5]
        if nan:
            edge.append(np.nan)
    if specials:
        k = min(n, len(edge))
        with np.errstate(over="ignore"):
            kind = object if t in INT_TYPES else np.float64
            out[:k] = np.array(edge[:k], dtype=kind).astype(t)
    return out


def with_payload_nans(arr: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Plant NaNs with distinct payloads and signs (floats only) into ``arr`` in place."""
    t = arr.dtype.type
    if t not in FLOAT_TYPES or arr.size == 0:
        return arr
    bits = arr.view(f"u{arr.dtype.itemsize}")
    nbits = arr.dtype.itemsize * 8
    mant = {16: 10, 32: 23, 64: 52}[nbits]
    exp_mask = ((1 << (nbits - 1 - mant)) - 1) << mant
    where = rng.choice(arr.size, size=min(arr.size, 8), replace=False)
    for j, w in enumerate(where):
        payload = (int(rng.integers(1, 1 << min(mant, 30))) | (j << 3)) & ((1 << mant) - 1)
        sign = (j % 2) << (nbits - 1)
        bits[w] = sign | exp_mask | max(payload, 1)
    return arr


def coef(t: type, rng: np.random.Generator) -> Any:
    """An instance of ``COEF[t]`` with values suited to ``t``."""
    from .kernels import COEF

    if t is np.bool_:
        a, b = bool(rng.integers(0, 2)), bool(rng.integers(0, 2))
    elif t in INT_TYPES:
        info = np.iinfo(t)
        a = rng.integers(info.min, info.max, endpoint=True, dtype=t) | t(1)
        b = rng.integers(info.min, info.max, endpoint=True, dtype=t)
    else:
        a = float(rng.uniform(0.5, 2.0) * rng.choice([-1.0, 1.0]))
        b = float(rng.normal(0, 10))
    return COEF[t](a=t(a), b=t(b))


# ---------------------------------------------------------------- oracles
def cast_to(value: Any, t: type) -> Any:
    """``value`` converted to ``t`` as the frontend's final cast does (wrap, truncate)."""
    with np.errstate(all="ignore"):
        return np.asarray(value).astype(t)[()]


def scalar_oracle(fn: Callable[..., Any], arrays: Sequence[np.ndarray], extra: Sequence[Any],
                  out_type: type, positions: np.ndarray | None = None,
                  index_arg: bool = False) -> np.ndarray:
    """``fn(*elements, *extra)`` per element (at ``positions``, default all), cast to ``out_type``.

    With ``index_arg`` the element's index (a ``u64``) is passed after the elements.
    """
    n = arrays[0].size if arrays else 0
    pos = np.arange(n) if positions is None else positions
    out = np.empty(pos.size, out_type)
    with np.errstate(all="ignore"):
        for j, k in enumerate(pos):
            args = [a[k] for a in arrays]
            if index_arg:
                args.append(np.uint64(k))
            out[j] = cast_to(fn(*args, *extra), out_type)
    return out


def check_elementwise(got: np.ndarray, fn: Callable[..., Any], arrays: Sequence[np.ndarray],
                      extra: Sequence[Any], out_type: type, *, vectorized: bool,
                      index_arg: bool = False, nan_payload: bool = False,
                      context: str = "") -> None:
    """Compare ``got`` with the oracle: all elements (small n or ``vectorized``), else a sample."""
    n = got.size
    if n <= SCALAR_LIMIT:
        want = scalar_oracle(fn, arrays, extra, out_type, index_arg=index_arg)
        assert_bits(got, want, nan_payload=nan_payload, context=context)
        return
    if vectorized:
        with np.errstate(all="ignore"):
            args = list(arrays) + ([np.arange(n, dtype=np.uint64)] if index_arg else [])
            want = np.asarray(fn(*args, *extra))
            want = np.broadcast_to(want, (n,)).astype(out_type)
        assert_bits(got, want, nan_payload=nan_payload, context=context + " (vectorized oracle)")
    rng = rng_for("subsample", n, context)
    pos = np.unique(np.concatenate([np.arange(64), np.arange(n - 64, n),
                                    rng.choice(n, SUBSAMPLE, replace=False)]))
    want = scalar_oracle(fn, arrays, extra, out_type, positions=pos, index_arg=index_arg)
    assert_bits(got[pos], want, nan_payload=nan_payload, positions=pos,
                context=context + " (scalar oracle on a sample)")


# ---------------------------------------------------------------- comparisons
def _uint_view(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    if a.dtype == np.bool_:
        return a.view(np.uint8)
    return a.view(f"u{a.dtype.itemsize}")


def assert_bits(got: np.ndarray, want: np.ndarray, *, nan_payload: bool = False,
                positions: np.ndarray | None = None, context: str = "") -> None:
    """Bit-exact equality of two arrays of one dtype (NaNs: see the module docstring)."""
    assert got.dtype == want.dtype, f"{context}: dtype {got.dtype} != expected {want.dtype}"
    assert got.shape == want.shape, f"{context}: shape {got.shape} != expected {want.shape}"
    diff = _uint_view(got) != _uint_view(want)
    if not nan_payload and got.dtype.kind == "f":
        diff &= ~(np.isnan(got) & np.isnan(want))
    if diff.any():
        bad = np.flatnonzero(diff)
        where = bad if positions is None else positions[bad]
        shown = ", ".join(f"[{w}] got {got[b]!r} ({_hex(got[b])}) want {want[b]!r} "
                          f"({_hex(want[b])})" for b, w in zip(bad[:6], where[:6], strict=True))
        pytest.fail(f"{context}: {bad.size} of {got.size} element(s) differ: {shown}",
                    pytrace=False)


def _hex(x: Any) -> str:
    return hex(int(_uint_view(np.asarray(x).reshape(1))[0]))


def ulp_distance(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Distance in units in the last place between two float arrays of one dtype.

    NaN to NaN is 0, NaN to a number is huge; +0.0 and -0.0 are 0 apart.
    """
    bits = got.dtype.itemsize * 8
    ints = np.dtype(f"i{got.dtype.itemsize}")

    def ordered(a: np.ndarray) -> np.ndarray:
        i = a.view(ints).astype(np.int64)
        return np.where(i < 0, -(i & ((1 << (bits - 1)) - 1)), i)

    d = np.abs(ordered(got).astype(object) - ordered(want).astype(object)).astype(np.float64)
    both_nan = np.isnan(got) & np.isnan(want)
    one_nan = np.isnan(got) ^ np.isnan(want)
    d[both_nan] = 0
    d[one_nan] = np.inf
    return d


def assert_ulps(got: np.ndarray, want: np.ndarray, ulps: int, context: str = "") -> None:
    """Every element within ``ulps`` units in the last place (same infinities, NaN to NaN)."""
    d = ulp_distance(got, want)
    bad = np.flatnonzero(d > ulps)
    if bad.size:
        shown = ", ".join(f"[{b}] got {got[b]!r} want {want[b]!r} ({d[b]:.0f} ulp)"
                          for b in bad[:6])
        pytest.fail(f"{context}: {bad.size} of {got.size} element(s) beyond {ulps} ulp: "
                    f"{shown}", pytrace=False)


def sum_tolerance(values_: np.ndarray) -> tuple[float, float]:
    """``(exact, bound)`` for a float sum of ``values_`` in their own type.

    ``exact`` is the correctly rounded sum (``math.fsum`` in binary64). Any
    summation order of n terms in a type with machine epsilon ``eps`` errs
    by at most ``(n - 1) * eps * sum(|v|)`` (the classic recursive-summation
    bound, with the ``1/(1 - n*eps)`` factor absorbed by using ``eps``
    instead of ``eps / 2``); the bound adds two ulps of the exact sum for the
    final rounding into the type.
    """
    import math

    t = values_.dtype.type
    v64 = values_.astype(np.float64)
    exact = math.fsum(v64.tolist())
    eps = float(np.finfo(t).eps)
    n = values_.size
    bound = max(n - 1, 0) * eps * float(np.abs(v64).sum())
    bound += 2 * float(np.spacing(np.abs(t(exact)))) if np.isfinite(t(exact)) else 0.0
    return exact, bound


def marked_line(path: Path, marker: str) -> str:
    """``file:line`` of the line of ``path`` that ends with ``# <marker>`` (where a checked
    kernel's report must point)."""
    for k, text in enumerate(path.read_text().splitlines(), 1):
        if text.rstrip().endswith(f"# {marker}"):
            return f"{path}:{k}"
    raise AssertionError(f"no line of {path} ends with '# {marker}'")

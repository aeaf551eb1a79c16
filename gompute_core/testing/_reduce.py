"""Reduce oracles shared by the conformance tests (exact, or the float-sum bound)."""

from __future__ import annotations

from typing import Any

import numpy as np

import gompute_core as g

from . import kernels as k
from . import kernels_params as kp
from ._support import sum_tolerance
from .catalogue import Entry


def reduce_oracle(e: Entry, pre_vals: np.ndarray) -> Any:
    """The exact expected result of the reduce entry ``e`` over pre-applied values."""
    t = e.t()
    kind, fn = e.kind, e.fn
    if kind == "sum":
        return np.add.reduce(pre_vals, dtype=t)
    if kind in ("min", "max"):
        if pre_vals.size == 0:
            if np.dtype(t).kind == "f":
                return t(np.inf if kind == "min" else -np.inf)
            info = np.iinfo(t)
            return t(info.max if kind == "min" else info.min)
        return pre_vals.min() if kind == "min" else pre_vals.max()
    if kind == "any":
        return t(1) if np.any(pre_vals != 0) else t(0)
    if kind == "all":
        return t(1) if np.all(pre_vals != 0) else t(0)
    nz = np.flatnonzero(pre_vals != 0)
    if fn is k.first_nonzero:
        return pre_vals[nz[0]] if nz.size else t(0)
    if fn is k.last_nonzero:
        return pre_vals[nz[-1]] if nz.size else t(0)
    if fn is k.xor_combine:
        return np.bitwise_xor.reduce(pre_vals, dtype=t) if pre_vals.size else t(0)
    if fn is k.max_combine:
        return pre_vals.max() if pre_vals.size else t(-np.inf)
    if fn is k.bool_parity:
        return np.bool_(np.count_nonzero(pre_vals) % 2 == 1)
    raise AssertionError(f"no oracle for {e.key}")


def pre_values(e: Entry, data: np.ndarray, p: Any) -> np.ndarray:
    """``pre(x, p)`` of every element (the data itself without ``pre``)."""
    if e.pre is None:
        return data
    pre = kp.composed if isinstance(e.pre, g.Fused) else e.pre
    with np.errstate(all="ignore"):
        return np.asarray(pre(data, p)).astype(e.t())


def is_float_sum(e: Entry) -> bool:
    """Float sums are the only results checked with a tolerance."""
    return np.dtype(e.t()).kind == "f" and (e.kind == "sum" or e.key.startswith("rsum"))


def check_reduce(e: Entry, got: Any, data: np.ndarray, p: Any, context: str) -> None:
    """Compare a reduce result with its oracle (exact, or within the float-sum bound)."""
    t = e.t()
    assert np.asarray(got).dtype == np.dtype(t), \
        f"{context}: result {got!r} is {np.asarray(got).dtype}, expected {np.dtype(t)}"
    pv = pre_values(e, data, p)
    if is_float_sum(e):
        exact, bound = sum_tolerance(pv)
        err = abs(float(got) - exact)
        assert err <= bound, (f"{context}: sum {got!r} is {err:.3g} from the exact {exact!r}; "
                              f"bound (n-1)*eps*sum|x| = {bound:.3g}")
        return
    want = reduce_oracle(e, pv)
    same = got == want or (np.isnan(got) and np.isnan(want)) if np.dtype(t).kind == "f" \
        else got == want
    assert same, f"{context}: got {got!r}, expected {want!r}"

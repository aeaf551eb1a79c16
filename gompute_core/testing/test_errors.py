"""Bad input to ``run``: a typed error naming the argument, and the user's arrays untouched.

Wrong dtype, wrong length, a non-array, a non-contiguous view and the wrong
params object are each an ``InvalidArgument`` (also a ``ValueError``) whose
message names the offending argument as the ``run`` signatures name it
(``data``, ``inp``, ``out``, ``a``, ``b``, ``src``, ``idx``, ``p``). A spec
over a type the backend declares unsupported is refused with ``Unsupported``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import gompute_core as g

from . import kernels as k
from ._support import assert_bits, cases, coef, rng_for, values
from .catalogue import Entry, entries, entry

pytestmark = pytest.mark.gompute()

N = 300

# key -> argument names of run (arrays first, then "p" when the kind takes params)
ARGS: dict[str, tuple[str, ...]] = {
    "map_f32": ("data", "p"),
    "idx_i16": ("data", "p"),
    "cast_i32_f32": ("inp", "out", "p"),
    "zipmix_u32_i32_i64": ("a", "b", "out", "p"),
    "sum_i32": ("data", "p"),
    "rfirst_f64": ("data", "p"),
    "gather_f32_u32": ("src", "idx", "out"),
    "scatter_u64_i64": ("src", "idx", "out"),
}
ERROR_ENTRIES = [entry(key) for key in ARGS]


def _roles(e: Entry) -> dict[str, type]:
    """The dtype of each array argument of ``run``."""
    roles = {"data": "T", "inp": "In", "a": "A", "b": "B", "src": "T", "idx": "Idx"}
    out = {}
    for name in ARGS[e.key]:
        if name == "p":
            continue
        role = roles.get(name) or ("Out" if e.kind in ("map_to", "zip") else "T")
        out[name] = e.t(role)
    return out


def _arguments(e: Entry, rng: np.random.Generator) -> dict[str, Any]:
    """Valid arguments of ``run`` for ``e`` (index arrays in range)."""
    args: dict[str, Any] = {}
    for name, t in _roles(e).items():
        args[name] = values(t, N, rng) if name != "idx" else np.arange(N).astype(t)
    if "p" in ARGS[e.key]:
        args["p"] = coef(e.t("Out") if e.kind in ("map_to", "zip") else e.t(), rng)
    return args


def _expect_invalid(kern: Any, e: Entry, args: dict[str, Any], culprit: str,
                    also: str | None = None) -> None:
    """``run(**args)`` raises InvalidArgument naming ``culprit``; arrays are untouched."""
    copies = {n: v.copy() for n, v in args.items() if isinstance(v, np.ndarray)}
    with pytest.raises(g.InvalidArgument) as info:
        kern.run(*[args[n] for n in ARGS[e.key]])
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    assert re.search(rf"(?<![A-Za-z0-9_]){culprit}(?![A-Za-z0-9_])", message), \
        f"{e.name}: the error does not name {culprit!r}: {message}"
    if also is not None:
        assert also in message, f"{e.name}: the error does not mention {also!r}: {message}"
    for n, before in copies.items():
        assert_bits(args[n], before, nan_payload=True, context=f"{e.name}: {n} modified")


def _other_dtype(t: type) -> type:
    return np.float64 if t is not np.float64 else np.float32


@pytest.mark.parametrize("e", cases(ERROR_ENTRIES))
def test_wrong_dtype(e: Entry, gompute_kernels: Any) -> None:
    """Each array argument with another dtype: never a silent cast."""
    kern = gompute_kernels.get(e)
    for name, t in _roles(e).items():
        args = _arguments(e, rng_for(e.key, name))
        with np.errstate(all="ignore"):
            args[name] = args[name].astype(_other_dtype(t) if name != "idx" else np.float32)
        _expect_invalid(kern, e, args, name)


PAIRED = {"map_to": ("out",), "zip": ("b", "out"), "gather": ("out",), "scatter": ("idx",)}
"""Per kind, the arrays whose length must equal the first array's."""


@pytest.mark.parametrize("e", cases([x for x in ERROR_ENTRIES if x.kind in PAIRED]))
def test_wrong_length(e: Entry, gompute_kernels: Any) -> None:
    """Arrays that pair element by element must have one length: never a truncation."""
    kern = gompute_kernels.get(e)
    for name in PAIRED[e.kind]:
        args = _arguments(e, rng_for(e.key, name, "len"))
        args[name] = args[name][: N - 1].copy()
        _expect_invalid(kern, e, args, name)


@pytest.mark.parametrize("e", cases(ERROR_ENTRIES))
def test_not_an_array(e: Entry, gompute_kernels: Any) -> None:
    """A Python list where an array is expected."""
    kern = gompute_kernels.get(e)
    first = next(iter(_roles(e)))
    args = _arguments(e, rng_for(e.key, "list"))
    args[first] = args[first].tolist()
    _expect_invalid(kern, e, args, first)


@pytest.mark.parametrize("e", cases(ERROR_ENTRIES))
def test_non_contiguous(e: Entry, gompute_kernels: Any) -> None:
    """A strided view: refused naming the argument, or computed correctly on the view."""
    kern = gompute_kernels.get(e)
    first = next(iter(_roles(e)))
    args = _arguments(e, rng_for(e.key, "strided"))
    backing = np.concatenate([args[first], args[first]])
    args[first] = backing[::2]
    before = backing.copy()
    try:
        kern.run(*[args[n] for n in ARGS[e.key]])
    except g.InvalidArgument as exc:
        assert re.search(rf"\b{first}\b", str(exc)), f"{e.name}: does not name {first}: {exc}"
        assert_bits(backing, before, nan_payload=True, context=f"{e.name}: {first} modified")
        return
    assert_bits(backing[1::2], before[1::2], nan_payload=True,
                context=f"{e.name}: elements outside the strided view were written")


WRONG_PARAMS: tuple[tuple[str, Callable[[], Any]], ...] = (
    ("None", lambda: None),
    ("another params class", lambda: k.IntOpSel(op=k.IntOp.ADD)),
    ("a dict", lambda: {"a": 1, "b": 2}),
)


@pytest.mark.parametrize("e", cases([x for x in ERROR_ENTRIES if "p" in ARGS[x.key]]))
def test_wrong_params(e: Entry, gompute_kernels: Any) -> None:
    """The wrong params object: InvalidArgument naming ``p`` and the expected class."""
    kern = gompute_kernels.get(e)
    for _what, make in WRONG_PARAMS:
        args = _arguments(e, rng_for(e.key, "params"))
        args["p"] = make()
        _expect_invalid(kern, e, args, "p", also=e.params.__qualname__)


def test_unsupported_types_refused(gompute_backend: str, gompute_info: Any) -> None:
    """A spec over a type the backend declares unsupported is refused, never run wrongly;
    one over a type it supports opens (a backend declaring every type is checked on each)."""
    declared = set(gompute_info.unsupported_types)
    for t in ("bool", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "f32",
              "f64"):
        if f"map_{t}" not in entries():
            continue
        if t in declared:
            with pytest.raises(g.Unsupported, match=t):
                g.Kernel(entry(f"map_{t}").spec(), gompute_backend)
        else:
            g.Kernel(entry(f"map_{t}").spec(), gompute_backend).close()

"""The ``scan`` kind: the prefix fold of ``pre(x, p)`` (or ``x``) with an associative
``combine``, in place.

Constructors ``g.scan`` and the presets ``g.cumsum``, ``g.cumprod``, ``g.cummax``,
``g.cummin``; ``run(data, p) -> data`` and ``launch(data, n, p)`` on a device
buffer, both in place. Its device program is three raw kernels the core generates
(:mod:`.scan_device`), so every backend with the ``raw`` kernel feature runs it.

**Order of operations** (what a float scan equals, on every backend and thread
count). The data are cut into chunks of :func:`chunk_size` ``(n)`` elements (a
function of ``n`` alone). Inside chunk ``c`` the fold runs left to right:
inclusive ``e_i = pre(x_i)`` at the chunk's first element, then
``e_i = combine(e_{i-1}, pre(x_i))``; exclusive ``e_i = identity`` first, then
``e_i = combine(e_{i-1}, pre(x_{i-1}))``. The chunks' totals are scanned
inclusively by the same rule, recursively (their own chunks of
``chunk_size(count)``), giving ``C_c``, the fold of the totals of chunks
``0..c``; then ``y_i = e_i`` in chunk 0 and ``y_i = combine(C_{c-1}, e_i)`` in
chunk ``c > 0``. For integers (which wrap) and any exactly associative combine
(a matrix product over integers, ...) this is the plain left fold; a float scan
equals :func:`reference` (the same order, in Python).
"""

from __future__ import annotations

from collections.abc import Callable
from types import MethodType
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidArgument
from ..ir.kernel import KernelIR
from ..ir.nodes import Const, Function
from ..lowering import lower_function, merge_functions
from ..presets import PRESET_COMBINE
from ..specs import (
    Spec,
    _check_arity,
    _check_params,
    _check_type,
    _identity_value,
    _new,
    _positional_arity,
    _where,
)
from ..types import is_float
from .base import U64_LIMIT, Kind, launch_count, register

if TYPE_CHECKING:
    from ..backend.buffer import Buffer

CHUNK_MIN, CHUNK_MAX = 32, 1 << 16
"""Bounds of a chunk's length (elements)."""
TARGET_CHUNKS = 1 << 16
"""Chunks per level the chunk length aims at (work for every GPU thread, few levels)."""


def chunk_size(count: int) -> int:
    """The chunk length of a scan level of ``count`` elements (``count`` alone decides)."""
    return min(max(-(-count // TARGET_CHUNKS), CHUNK_MIN), CHUNK_MAX)


def levels(n: int) -> tuple[tuple[int, int, int], ...]:
    """The plan of a scan of ``n >= 1`` elements: ``(count, chunk, chunks)`` per level,
    from the data up to the level that fits in one chunk."""
    out = []
    count = n
    while True:
        chunk = chunk_size(count)
        chunks = -(-count // chunk)
        out.append((count, chunk, chunks))
        if chunks == 1:
            return tuple(out)
        count = chunks


def reference(spec: Spec, data: np.ndarray, p: Any = None) -> np.ndarray:
    """``spec``'s scan of ``data`` in the documented order, as plain Python on NumPy
    scalars (the conformance oracle; slow: for tests)."""
    T, combine = spec.T, spec.combine
    pre = _host_stage(spec)
    xs = [pre(x, p) for x in np.asarray(data, T).reshape(-1)]
    with np.errstate(all="ignore"):
        return np.array(_scan_levels(xs, T, combine, spec.inclusive, T(spec.identity)), T)


def _host_stage(spec: Spec) -> Callable[[Any, Any], Any]:
    pre, T = spec.pre, spec.T
    if pre is None:
        return lambda x, p: T(x)
    if _positional_arity(spec.name, "pre", pre) == 2:
        return lambda x, p: T(pre(x, p))
    return lambda x, p: T(pre(x))


def _scan_levels(xs: list[Any], T: Any, combine: Any, inclusive: bool, ident: Any
                 ) -> list[Any]:
    n = len(xs)
    if n == 0:
        return []
    chunk = chunk_size(n)
    out, totals = list(xs), []
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        if inclusive:
            acc = xs[lo]
            for i in range(lo + 1, hi):
                acc = T(combine(acc, xs[i]))
                out[i] = acc
        else:
            acc = ident
            for i in range(lo, hi):
                out[i] = acc
                acc = T(combine(acc, xs[i]))
        totals.append(acc)
    if len(totals) > 1:
        carries = _scan_levels(totals, T, combine, True, ident)
        for c in range(1, len(totals)):
            for i in range(c * chunk, min(n, (c + 1) * chunk)):
                out[i] = T(combine(carries[c - 1], out[i]))
    return out


def _launch_scan(prog: Any, data: Buffer, n: int, p: Any = None) -> None:
    """``launch(data, n, p)``: the scan of ``data[:n]`` in place, enqueued."""
    if type(n) is not int or not 0 <= n < U64_LIMIT:
        n = launch_count(n, "n")
    prog.check_params(p)
    if n:
        prog.enqueue(prog.operand(data, n), n, p)


def _run_scan(k: Any, data: Any, p: Any = None) -> Any:
    """``run(data, p) -> data``: the scan in place."""
    d = k.checks.array(data, "data", k._types["T"], True, k._at)
    k.checks.params(p, k._P, k.spec.name)
    if d.size:
        k.program.run(data, d, p)
    return data


class ScanKind(Kind):
    """The prefix fold, in place; its device program is the core's raw kernels."""

    name = "scan"
    roles = ("T",)
    entry_args = (("data", "pointer"), ("n", "u64"))
    arrays = (("T", "inout"),)
    pipelines = False
    needs = frozenset({"raw"})

    def lower(self, spec: Spec, common: dict[str, Any]) -> KernelIR:
        """The combine (and ``pre``) in the kernel language: a kernel outside it fails
        here, whatever the backend; the device program is :mod:`.scan_device`'s."""
        T = spec.T
        combine = lower_function(spec.combine, (T, T), None, T, f"{spec.name}_combine")
        pre: tuple[Function, ...] = ()
        if spec.pre is not None:
            pre = lower_function(spec.pre, (T,), common["params"], T, f"{spec.name}_pre")
        return KernelIR(**common, functions=merge_functions(combine, pre),
                        element=f"{spec.name}_combine",
                        pre=f"{spec.name}_pre" if pre else None,
                        identity=Const(spec.identity, T))

    def open(self, device: Any, spec: Spec, checked: bool = False) -> Any:
        """A :class:`~gompute_core.kinds.scan_program.ScanProgram` of ``spec`` on
        ``device``: its raw kernels compiled and loaded."""
        from .scan_program import ScanProgram

        return ScanProgram(device, spec)

    def launch(self, program: Any) -> Callable[..., None]:
        return MethodType(_launch_scan, program)

    def run(self, kernel: Any) -> Callable[..., Any]:
        return MethodType(_run_scan, kernel)


SCAN = register(ScanKind())


def scan(name: str, T: Any, P: type | None, combine: Callable[..., Any], identity: Any,
         pre: Callable[..., Any] | None = None, inclusive: bool = True, *,
         block_size: int = 256) -> Spec:
    """The prefix fold of ``pre(x, p)`` (or ``x``) with an associative ``combine(a, b)``,
    in place; ``inclusive=False`` makes ``y[0] = identity`` and ``y[i]`` the fold of
    the elements before ``i``. The order of operations is the module docstring's."""
    ctor = f"g.scan({name!r})"
    t = _check_type(ctor, "T", T)
    P = _check_params(ctor, P)
    n = _positional_arity(ctor, "combine", combine)
    if n != 2:
        raise InvalidArgument(f"{ctor}: combine {_where(combine)} takes {n} argument(s); "
                              "expected exactly 2: combine(a, b)")
    if pre is not None:
        _check_arity(ctor, "pre", pre, "pre(x, p)", 1, P is not None)
    if not isinstance(inclusive, bool):
        raise InvalidArgument(f"{ctor}: inclusive must be True or False, got {inclusive!r}")
    ident = _identity_value(ctor, identity, t)
    return _new(ctor, name, SCAN, block_size, params=P, T=t, combine=combine,
                identity=ident, pre=pre, inclusive=inclusive)


def scan_multiply(a: Any, b: Any) -> Any:
    """``cumprod``'s combine: ``a * b`` (integers wrap)."""
    return a * b


_PRESETS: dict[str, Callable[[Any, Any], Any]] = {
    "cumsum": PRESET_COMBINE["sum"], "cumprod": scan_multiply,
    "cummax": PRESET_COMBINE["max"], "cummin": PRESET_COMBINE["min"],
}


def _preset(preset: str, name: str, T: Any, P: type | None,
            pre: Callable[..., Any] | None, inclusive: bool, block_size: int) -> Spec:
    ctor = f"g.{preset}({name!r})"
    t = _check_type(ctor, "T", T, allow_bool=False)
    P = _check_params(ctor, P)
    if pre is not None:
        _check_arity(ctor, "pre", pre, "pre(x, p)", 1, P is not None)
    if not isinstance(inclusive, bool):
        raise InvalidArgument(f"{ctor}: inclusive must be True or False, got {inclusive!r}")
    if preset == "cumsum":
        identity: int | float = 0
    elif preset == "cumprod":
        identity = 1
    elif is_float(t):
        identity = float("-inf") if preset == "cummax" else float("inf")
    else:
        info = np.iinfo(t)
        identity = int(info.min) if preset == "cummax" else int(info.max)
    return _new(ctor, name, SCAN, block_size, params=P, T=t, combine=_PRESETS[preset],
                identity=identity, pre=pre, inclusive=inclusive, preset=preset)


def cumsum(name: str, T: Any, P: type | None = None, pre: Callable[..., Any] | None = None,
           inclusive: bool = True, *, block_size: int = 256) -> Spec:
    """Running sum of ``pre(x, p)`` (or ``x``); integers wrap."""
    return _preset("cumsum", name, T, P, pre, inclusive, block_size)


def cumprod(name: str, T: Any, P: type | None = None, pre: Callable[..., Any] | None = None,
            inclusive: bool = True, *, block_size: int = 256) -> Spec:
    """Running product; integers wrap."""
    return _preset("cumprod", name, T, P, pre, inclusive, block_size)


def cummax(name: str, T: Any, P: type | None = None, pre: Callable[..., Any] | None = None,
           inclusive: bool = True, *, block_size: int = 256) -> Spec:
    """Running maximum (``max(a, b)``); identity ``-inf`` or the type's min."""
    return _preset("cummax", name, T, P, pre, inclusive, block_size)


def cummin(name: str, T: Any, P: type | None = None, pre: Callable[..., Any] | None = None,
           inclusive: bool = True, *, block_size: int = 256) -> Spec:
    """Running minimum (``min(a, b)``); identity ``+inf`` or the type's max."""
    return _preset("cummin", name, T, P, pre, inclusive, block_size)

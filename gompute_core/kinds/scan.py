"""The ``scan`` kind: the prefix fold of ``pre(x, p)`` (or ``x``) with an associative
``combine``, in place.

Constructors ``g.scan`` and the presets ``g.cumsum``, ``g.cumprod``, ``g.cummax``,
``g.cummin``; ``run(data, p) -> data`` and ``launch(data, n, p)`` on a device
buffer, both in place. Its device program is raw kernels the core generates
(:mod:`.scan_device`), so every backend with the ``raw`` kernel feature runs it.

**Order of operations** (what a float scan equals, on every backend and thread
count), fixed by the spec's :func:`tiling` (``threads`` = its block size, ``items``
per thread) and ``n`` alone:

1. the data are cut into *tiles* of ``threads * items`` elements, a tile into *runs*
   of ``items`` elements, a tile's runs into *groups* of 32;
2. a run folds left to right: inclusive ``e_0 = pre(x_0)``, ``e_j = combine(e_{j-1},
   pre(x_j))``; exclusive ``e_0 = identity``, ``e_j = combine(e_{j-1}, pre(x_{j-1}))``;
   its total ``R`` is its last ``e`` (exclusive: combined with its last ``pre(x)``);
3. in a group, ``W_k`` is the left fold of the totals of the runs before run ``k``
   (none for the group's first run) and ``G`` the fold of all of them; in a tile,
   ``Q_g`` is the left fold of the totals of the groups before group ``g`` (none for the
   first) and ``A`` the fold of all of them;
4. across tiles, ``P_0 = A_0`` and ``P_t = combine(P_{t-1}, A_t)``: the tiles' totals
   folded left to right; tile ``t``'s carry is ``C_t = P_{t-1}`` (none for tile 0);
5. ``y = combine(c, e)`` with ``c = combine(combine(C_t, Q_g), W_k)``, the parts that
   are "none" left out (``y = e`` when all are).

For integers (which wrap) and any exactly associative combine (a matrix product over
integers, ...) this is the plain left fold; a float scan equals :func:`reference`
(the same order, in Python).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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

GROUP = 32
"""Runs per group (step 1 of the order): a GPU warp's runs."""
TILE_BYTES = 16384
"""The most bytes of a tile (a block's shared memory holds one)."""


@dataclass(frozen=True)
class Tiling:
    """A scan spec's tiles: ``threads`` runs of ``items`` elements (module docstring)."""

    threads: int
    items: int

    @property
    def tile(self) -> int:
        """Elements per tile."""
        return self.threads * self.items

    def tiles(self, n: int) -> int:
        """The tiles of ``n`` elements."""
        return -(-n // self.tile)


def tiling(spec: Spec) -> Tiling:
    """The tiles of scan ``spec``: ``threads`` = its block size; ``items`` the largest
    power of two up to 16 (8 for 8-byte types) that keeps a tile within
    :data:`TILE_BYTES` (a power of two: a run never straddles a 32-element bank row)."""
    size = max(np.dtype(spec.T).itemsize, 4)
    items = 16 if size <= 4 else 8
    while items > 1 and spec.block_size * items * size > TILE_BYTES:
        items //= 2
    return Tiling(spec.block_size, items)


def reference(spec: Spec, data: np.ndarray, p: Any = None) -> np.ndarray:
    """``spec``'s scan of ``data`` in the documented order, as plain Python on NumPy
    scalars (the conformance oracle; slow: for tests)."""
    T, combine, ident = spec.T, spec.combine, spec.T(spec.identity)
    pre = _host_stage(spec)
    xs = [pre(x, p) for x in np.asarray(data, T).reshape(-1)]
    out = list(xs)
    shape = tiling(spec)

    def fold(a: Any, b: Any) -> Any:  # combine(a, b), a part that is None left out
        return b if a is None else a if b is None else T(combine(a, b))

    with np.errstate(all="ignore"):
        carry = None  # C_t
        for lo in range(0, len(xs), shape.tile):
            q = total = None  # Q_g, A
            hi = min(len(xs), lo + shape.tile)
            for g0 in range(lo, hi, GROUP * shape.items):
                w = None  # W_k, then G
                for r in range(g0, min(hi, g0 + GROUP * shape.items), shape.items):
                    c = fold(fold(carry, q), w)
                    acc = None if spec.inclusive else ident
                    for i in range(r, min(hi, r + shape.items)):
                        x = xs[i]
                        if spec.inclusive:
                            acc = fold(acc, x)
                            out[i] = fold(c, acc)
                        else:
                            out[i] = fold(c, acc)
                            acc = T(combine(acc, x))
                    w = fold(w, acc)
                total = fold(total, w)
                q = total
            carry = fold(carry, total)
        return np.array(out, T)


def _host_stage(spec: Spec) -> Callable[[Any, Any], Any]:
    pre, T = spec.pre, spec.T
    if pre is None:
        return lambda x, p: T(x)
    if _positional_arity(spec.name, "pre", pre) == 2:
        return lambda x, p: T(pre(x, p))
    return lambda x, p: T(pre(x))


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
    checkable = True
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
        ``device``: its raw kernels compiled and loaded (``checked``: instrumented, so
        ``pre``'s and ``combine``'s accesses are checked)."""
        from .scan_program import ScanProgram

        return ScanProgram(device, spec, checked=checked)

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

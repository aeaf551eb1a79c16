"""The ``map`` and ``map_indexed`` kinds: ``data[i] = f(data[i][, i], p)`` in place.

Constructors ``g.map``, ``g.map_fn`` and ``g.map_indexed``; entry
``(T* data, u64 n, P p)``; ``launch(buf, n, p)``; ``run(data, p) -> data``.
``map_indexed`` passes the element's index ``i`` (a ``u64``) too, so its ``run``
never cuts the work into chunks and its Dask chunks run a derived spec that adds
the chunk's offset.
"""

from __future__ import annotations

import inspect
import math
import typing
from collections.abc import Callable
from types import MethodType
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgument
from ..specs import (
    Spec,
    _check_arity,
    _check_fused,
    _check_params,
    _check_type,
    _new,
    _where,
)
from ..types import as_scalar_type, short_name
from .base import U64_LIMIT, ElementKind, launch_count, register

if TYPE_CHECKING:
    from ..backend.buffer import Buffer


def _launch_map(prog: Any, buf: Buffer, n: int, p: Any = None) -> None:
    """``launch(buf, n, p)``, hand-inlined: the hot path, measured against pycuda's
    ``prepared_async_call`` (the checks of ``KernelProgram._operand`` written out)."""
    if type(n) is not int or not 0 <= n < U64_LIMIT:
        n = launch_count(n, "n")
    prog._acquire()
    try:
        if p is not prog._last_p:
            prog._set_params(p)
        if n:
            try:
                ok = buf.device is prog.device and not buf._freed and \
                    n * prog._t_size <= buf.nbytes
            except AttributeError:
                ok = False
            if prog._host:
                prog.args.values = (prog._operand(buf, "buf", n, "T"), n)
                prog._launcher(prog.grid3(n), prog._block, 0, prog._stream)
                return
            if not ok:  # a foreign array: its streams are ordered around the launch
                probe = prog._probes.get(type(buf))
                prog._pack(prog._data, 0, prog._other(buf, "buf", n, "T") if probe is None
                           else prog._probed(buf, probe, "buf", n, prog._t_dtype, True), n)
                try:
                    prog._launcher(prog._last_grid3 if n == prog._last_n else
                                   prog.grid3(n), prog._block, 0, prog._stream)
                finally:
                    if prog._signals:
                        prog._signal()
                return
            prog._pack(prog._data, 0, buf.addr, n)
            prog._launcher(prog._last_grid3 if n == prog._last_n else prog.grid3(n),
                           prog._block, 0, prog._stream)
    finally:
        prog._release()


def _run_map(k: Any, data: Any, p: Any = None) -> Any:
    """``run(data, p) -> data``: elementwise in place."""
    d = k.checks.array(data, "data", k._types["T"], True, k._at)
    k.checks.params(p, k._P, k.spec.name)
    if d.size:
        k._runner.elementwise((d,), d.size, p)
    return data


class MapKind(ElementKind):
    """``data[i] = f(data[i], p)`` in place."""

    name = "map"
    roles = ("T",)
    run_args = ("data", "p")
    entry_args = (("data", "pointer"), ("n", "u64"))
    arrays = (("T", "inout"),)
    dask_inputs = (("data", "T"),)

    def launch(self, program: Any) -> Callable[..., None]:
        return MethodType(_launch_map, program)

    def run(self, kernel: Any) -> Callable[..., Any]:
        return MethodType(_run_map, kernel)

    def dask_chunk(self, chunk: Any, spec: Spec, p: Any, blocks: tuple[Any, ...],
                   block_info: Any) -> Any:
        out = blocks[0].copy()  # C-contiguous; a Dask chunk is never written in place
        if out.size:
            chunk.run(spec, out, p)
        return out


class MapIndexedKind(MapKind):
    """``data[i] = f(data[i], i, p)`` in place; ``i`` is a ``u64``."""

    name = "map_indexed"
    pipelines = False
    indexed = True

    def dask_chunk(self, chunk: Any, spec: Spec, p: Any, blocks: tuple[Any, ...],
                   block_info: Any) -> Any:
        out = blocks[0].copy()
        if out.size:
            location = block_info[0]["array-location"]
            shape = block_info[0]["shape"]
            base = location[0][0] * math.prod(shape[1:]) if shape else 0
            derived, Q = chunk.offset_spec(spec)
            q = Q(base=base, inner=p) if spec.params is not None else Q(base=base)
            chunk.run(derived, out, q)
        return out


MAP = register(MapKind())
MAP_INDEXED = register(MapIndexedKind())


# ---- constructors ------------------------------------------------------------------------------
def map(name: str, T: Any, P: type | None, f: Callable[..., Any], *,
        block_size: int = 256) -> Spec:
    """``data[i] = f(data[i], p)`` in place; ``f(x, p) -> T``."""
    ctor = f"g.map({name!r})"
    t = _check_type(ctor, "T", T)
    P = _check_params(ctor, P)
    _check_arity(ctor, "kernel function", f, "f(x, p)", 1, P is not None)
    _check_fused(ctor, f, t, P)
    return _new(ctor, name, MAP, block_size, params=P, T=t, fn=f)


def _annotation(ctor: str, hints: dict[str, Any], fn: Any, pname: str, what: str) -> Any:
    if pname not in hints:
        raise InvalidArgument(f"{ctor}: {_where(fn)} has no annotation for {pname!r}; "
                              f"g.map_fn reads {what} from it (e.g. x: g.f32, p: Scale)")
    return hints[pname]


def map_fn(name: str, f: Callable[..., Any], *, block_size: int = 256) -> Spec:
    """A map whose ``T`` and ``P`` are read from ``f``'s annotations.

    ``def f(x: g.f32, p: Scale) -> g.f32`` (``p`` optional; a return
    annotation, when present, must be ``T``).
    """
    ctor = f"g.map_fn({name!r})"
    if not inspect.isfunction(f):
        raise InvalidArgument(f"{ctor}: expected an annotated Python function, got {f!r}")
    try:
        hints = typing.get_type_hints(f)
    except Exception as exc:
        raise InvalidArgument(f"{ctor}: cannot evaluate the annotations of {_where(f)}: "
                              f"{type(exc).__name__}: {exc}") from None
    names = [p.name for p in inspect.signature(f).parameters.values()]
    if len(names) not in (1, 2):
        raise InvalidArgument(f"{ctor}: {_where(f)} takes {len(names)} argument(s); "
                              "expected f(x: T) or f(x: T, p: P)")
    T = _check_type(ctor, f"annotation of {names[0]!r}",
                    _annotation(ctor, hints, f, names[0], "T"))
    P = None
    if len(names) == 2:
        P = _check_params(ctor, _annotation(ctor, hints, f, names[1], "P"))
    if "return" in hints and as_scalar_type(hints["return"]) is not T:
        raise InvalidArgument(f"{ctor}: {_where(f)} returns {hints['return']!r} but its "
                              f"argument is {short_name(T)}; a map returns T "
                              "(use g.map_to for another output type)")
    return _new(ctor, name, MAP, block_size, params=P, T=T, fn=f)


def map_indexed(name: str, T: Any, P: type | None, f: Callable[..., Any], *,
                block_size: int = 256) -> Spec:
    """``data[i] = f(data[i], i, p)`` in place; ``i`` is a ``u64``."""
    ctor = f"g.map_indexed({name!r})"
    t = _check_type(ctor, "T", T)
    P = _check_params(ctor, P)
    _check_arity(ctor, "kernel function", f, "f(x, i, p)", 2, P is not None)
    return _new(ctor, name, MAP_INDEXED, block_size, params=P, T=t, fn=f)

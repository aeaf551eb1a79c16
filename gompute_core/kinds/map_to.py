"""The ``map_to`` kind: ``out[i] = f(inp[i], p)``, ``f(x: In, p) -> Out``.

Entry ``(const In* in, Out* out, u64 n, P p)``; ``launch(inp, out, n, p)``;
``run(inp, out, p) -> out``.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MethodType
from typing import TYPE_CHECKING, Any

from ..specs import Spec, _check_arity, _check_params, _check_type, _new
from .base import U64_LIMIT, ElementKind, launch_count, register

if TYPE_CHECKING:
    from ..backend.buffer import Buffer


def _launch_map_to(prog: Any, inp: Buffer, out: Buffer, n: int, p: Any = None) -> None:
    if type(n) is not int or not 0 <= n < U64_LIMIT:
        n = launch_count(n, "n")
    with prog._lock:
        if p is not prog._last_p:
            prog._set_params(p)
        if n:
            i = prog._operand(inp, "inp", n, "In")
            o = prog._operand(out, "out", n, "Out")
            i_nbytes, o_nbytes = n * prog._size["In"], n * prog._size["Out"]
            if i.__class__ is not int or i < o + o_nbytes and o < i + i_nbytes:
                prog._overlap(inp, i, "inp", i_nbytes, out, o, o_nbytes, True)
            prog._go(prog.grid(n), (i, o, n))


def _run_map_to(k: Any, inp: Any, out: Any, p: Any = None) -> Any:
    checks = k.checks
    i = checks.array(inp, "inp", k._types["In"], False, k._at)
    o = checks.array(out, "out", k._types["Out"], True, k._at)
    checks.same_shape(inp, "inp", out, "out")
    checks.no_partial_overlap(i, "inp", o, "out")
    checks.params(p, k._P, k.spec.name)
    if i.size:
        k._runner.elementwise((i, o), i.size, p)
    return out


class MapToKind(ElementKind):
    """``out[i] = f(inp[i], p)``."""

    name = "map_to"
    roles = ("In", "Out")
    run_args = ("inp", "out", "p")
    entry_args = (("in", "pointer"), ("out", "pointer"), ("n", "u64"))
    default_role = "Out"
    output_role = "Out"
    arrays = (("In", "in"), ("Out", "out"))
    dask_inputs = (("inp", "In"),)

    def launch(self, program: Any) -> Callable[..., None]:
        return MethodType(_launch_map_to, program)

    def run(self, kernel: Any) -> Callable[..., Any]:
        return MethodType(_run_map_to, kernel)

    def dask_chunk(self, chunk: Any, spec: Spec, p: Any, blocks: tuple[Any, ...],
                   block_info: Any) -> Any:
        inp = chunk.contiguous(blocks[0])
        out = chunk.empty_like(inp, spec.Out)
        if inp.size:
            chunk.run(spec, inp, out, p)
        return out


MAP_TO = register(MapToKind())


def map_to(name: str, In: Any, Out: Any, P: type | None, f: Callable[..., Any], *,
           block_size: int = 256) -> Spec:
    """``out[i] = f(inp[i], p)``; ``f(x: In, p) -> Out``."""
    ctor = f"g.map_to({name!r})"
    tin = _check_type(ctor, "In", In)
    tout = _check_type(ctor, "Out", Out)
    P = _check_params(ctor, P)
    _check_arity(ctor, "kernel function", f, "f(x, p)", 1, P is not None)
    return _new(ctor, name, MAP_TO, block_size, params=P, In=tin, Out=tout, fn=f)

"""The ``zip`` kind: ``out[i] = f(a[i], b[i], p)``, ``f(a: A, b: B, p) -> Out``.

Entry ``(const A* a, const B* b, Out* out, u64 n, P p)``;
``launch(a, b, out, n, p)``; ``run(a, b, out, p) -> out``.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MethodType
from typing import TYPE_CHECKING, Any

from ..specs import Spec, _check_arity, _check_params, _check_type, _new
from .base import U64_LIMIT, ElementKind, launch_count, register

if TYPE_CHECKING:
    from ..backend.buffer import Buffer


def _launch_zip(prog: Any, a: Buffer, b: Buffer, out: Buffer, n: int, p: Any = None) -> None:
    if type(n) is not int or not 0 <= n < U64_LIMIT:
        n = launch_count(n, "n")
    with prog._lock:
        if p is not prog._last_p:
            prog._set_params(p)
        if n:
            x = prog._operand(a, "a", n, "A")
            y = prog._operand(b, "b", n, "B")
            o = prog._operand(out, "out", n, "Out")
            x_nbytes, y_nbytes, o_nbytes = (n * prog._size["A"], n * prog._size["B"],
                                            n * prog._size["Out"])
            if x.__class__ is not int or x < o + o_nbytes and o < x + x_nbytes:
                prog._overlap(a, x, "a", x_nbytes, out, o, o_nbytes, True)
            if y.__class__ is not int or y < o + o_nbytes and o < y + y_nbytes:
                prog._overlap(b, y, "b", y_nbytes, out, o, o_nbytes, True)
            prog._go(prog.grid(n), (x, y, o, n))


def _run_zip(k: Any, a: Any, b: Any, out: Any, p: Any = None) -> Any:
    checks = k.checks
    x = checks.array(a, "a", k._types["A"], False, k._at)
    y = checks.array(b, "b", k._types["B"], False, k._at)
    o = checks.array(out, "out", k._types["Out"], True, k._at)
    checks.same_shape(a, "a", b, "b")
    checks.same_shape(a, "a", out, "out")
    checks.no_partial_overlap(x, "a", o, "out")
    checks.no_partial_overlap(y, "b", o, "out")
    checks.params(p, k._P, k.spec.name)
    if x.size:
        k._runner.elementwise((x, y, o), x.size, p)
    return out


class ZipKind(ElementKind):
    """``out[i] = f(a[i], b[i], p)``."""

    name = "zip"
    roles = ("A", "B", "Out")
    run_args = ("a", "b", "out", "p")
    entry_args = (("a", "pointer"), ("b", "pointer"), ("out", "pointer"), ("n", "u64"))
    default_role = "Out"
    output_role = "Out"
    arrays = (("A", "in"), ("B", "in"), ("Out", "out"))
    dask_inputs = (("a", "A"), ("b", "B"))

    def launch(self, program: Any) -> Callable[..., None]:
        return MethodType(_launch_zip, program)

    def run(self, kernel: Any) -> Callable[..., Any]:
        return MethodType(_run_zip, kernel)

    def dask_chunk(self, chunk: Any, spec: Spec, p: Any, blocks: tuple[Any, ...],
                   block_info: Any) -> Any:
        a, b = chunk.contiguous(blocks[0]), chunk.contiguous(blocks[1])
        out = chunk.empty_like(a, spec.Out)
        if a.size:
            chunk.run(spec, a, b, out, p)
        return out


ZIP = register(ZipKind())


def zip(name: str, A: Any, B: Any, Out: Any, P: type | None, f: Callable[..., Any], *,
        block_size: int = 256) -> Spec:
    """``out[i] = f(a[i], b[i], p)``; ``f(a: A, b: B, p) -> Out``."""
    ctor = f"g.zip({name!r})"
    ta = _check_type(ctor, "A", A)
    tb = _check_type(ctor, "B", B)
    tout = _check_type(ctor, "Out", Out)
    P = _check_params(ctor, P)
    _check_arity(ctor, "kernel function", f, "f(a, b, p)", 2, P is not None)
    return _new(ctor, name, ZIP, block_size, params=P, A=ta, B=tb, Out=tout, fn=f)

"""The ``gather`` and ``scatter`` kinds: indexed copies with no kernel function.

gather: ``out[i] = src[idx[i]]``; scatter: ``out[idx[i]] = src[i]``; indices
outside ``[0, bound)`` (negative included) are skipped. Entry
``(const T* src, const Idx* idx, T* out, u64 n, u64 bound)``, ``bound`` being
``len(src)`` for gather and ``len(out)`` for scatter; one thread per index;
``launch(src, idx, out, n, bound)``; ``run(src, idx, out) -> out``.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MethodType
from typing import TYPE_CHECKING, Any, Literal

from ..ir.entry import EntryArray, IndexedMove
from ..ir.kernel import KernelIR
from ..specs import Spec, _check_type, _new
from .base import Kind, launch_count, register

if TYPE_CHECKING:
    from ..backend.buffer import Buffer


def _launch_move(prog: Any, src: Buffer, idx: Buffer, out: Buffer, n: int,
                 bound: int) -> None:
    n, bound = launch_count(n, "n"), launch_count(bound, "bound")
    if not n:
        return
    # gather reads src[< bound] and writes out[< n]; scatter the other way round
    src_n, out_n = (bound, n) if prog.kind.bounds_src else (n, bound)
    with prog._lock:
        s = prog._operand(src, "src", src_n, "T")
        i = prog._operand(idx, "idx", n, "Idx")
        o = prog._operand(out, "out", out_n, "T")
        out_nbytes = out_n * prog._t_size
        prog._overlap(src, s, "src", src_n * prog._t_size, out, o, out_nbytes, False)
        prog._overlap(idx, i, "idx", n * prog._size["Idx"], out, o, out_nbytes, False)
        prog._go(prog.move_grid(n), (s, i, o, n, bound))


def _checked(k: Any, src: Any, idx: Any, out: Any) -> tuple[Any, ...]:
    checks = k.checks
    s = checks.array(src, "src", k._types["T"], False, k._at)
    i = checks.array(idx, "idx", k._types["Idx"], False, k._at)
    o = checks.array(out, "out", k._types["T"], True, k._at)
    checks.disjoint(s, "src", o, "out")
    checks.disjoint(i, "idx", o, "out")
    return s, i, o


def _run_gather(k: Any, src: Any, idx: Any, out: Any) -> Any:
    s, i, o = _checked(k, src, idx, out)
    k.checks.same_shape(idx, "idx", out, "out")
    if i.size:
        k._runner.move(s, i, o, i.size, s.size)
    return out


def _run_scatter(k: Any, src: Any, idx: Any, out: Any) -> Any:
    s, i, o = _checked(k, src, idx, out)
    k.checks.same_shape(src, "src", idx, "idx")
    if s.size and o.size:
        k._runner.move(s, i, o, s.size, o.size)
    return out


class GatherKind(Kind):
    """``out[i] = src[idx[i]]``."""

    name = "gather"
    roles = ("T", "Idx")
    run_args = ("src", "idx", "out")
    entry_args = (("src", "pointer"), ("idx", "pointer"), ("out", "pointer"), ("n", "u64"),
                  ("bound", "u64"))
    bounds_src = True
    """``bound`` limits the indices into ``src`` (gather), not into ``out`` (scatter)."""
    direction: Literal["gather", "scatter"] = "gather"
    """The entry's :attr:`~gompute_core.ir.entry.IndexedMove.direction`."""

    def lower(self, spec: Spec, common: dict[str, Any]) -> KernelIR:
        types = dict(spec.value_types)
        return KernelIR(**common, entry=self.indexed_move(types["T"], types["Idx"]))

    def indexed_move(self, T: Any, Idx: Any) -> IndexedMove:
        """The entry of this kind's copy of ``T`` elements through ``Idx`` indices over its
        :attr:`~Kind.entry_args`: the pointers are the source, the indices and the output,
        the ``u64`` arguments the count then the bound."""
        src, idx, out = (name for name, arg in self.entry_args if arg == "pointer")
        count, bound = (name for name, arg in self.entry_args if arg == "u64")
        return IndexedMove(count, bound, EntryArray(src, T), EntryArray(idx, Idx),
                           EntryArray(out, T), self.direction)

    def per_block(self, kernel: KernelIR) -> int:
        """One index per thread."""
        return kernel.block_size

    def launch(self, program: Any) -> Callable[..., None]:
        return MethodType(_launch_move, program)

    def run(self, kernel: Any) -> Callable[..., Any]:
        return MethodType(_run_gather, kernel)


class ScatterKind(GatherKind):
    """``out[idx[i]] = src[i]``: ``run`` never chunks it (a later index may land on any
    element of ``out``)."""

    name = "scatter"
    bounds_src = False
    direction: Literal["gather", "scatter"] = "scatter"
    pipelines = False

    def run(self, kernel: Any) -> Callable[..., Any]:
        return MethodType(_run_scatter, kernel)


GATHER = register(GatherKind())
SCATTER = register(ScatterKind())


def gather(name: str, T: Any, Idx: Any, *, block_size: int = 256) -> Spec:
    """``out[i] = src[idx[i]]``; indices outside ``[0, len(src))`` are skipped."""
    ctor = f"g.gather({name!r})"
    t = _check_type(ctor, "T", T)
    idx = _check_type(ctor, "Idx", Idx, allow_bool=False, ints_only=True)
    return _new(ctor, name, GATHER, block_size, params=None, T=t, Idx=idx)


def scatter(name: str, T: Any, Idx: Any, *, block_size: int = 256) -> Spec:
    """``out[idx[i]] = src[i]``; indices outside ``[0, len(out))`` are skipped."""
    ctor = f"g.scatter({name!r})"
    t = _check_type(ctor, "T", T)
    idx = _check_type(ctor, "Idx", Idx, allow_bool=False, ints_only=True)
    return _new(ctor, name, SCATTER, block_size, params=None, T=t, Idx=idx)

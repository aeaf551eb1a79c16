"""Value ranges of integer index expressions, so that an index the kernel computes in a
narrow type renders as plain ``int64`` arithmetic when no step of it can overflow.

The renderer gives every integer operation its C meaning: ``i32 + i32`` renders as
``np.int32(a + b)`` (numba adds in ``int64``; the cast wraps). Inside an index that
costs more than the cast: to LLVM, ``sext(trunc(m * 16 + tx))`` is not an affine function
of the thread's ``tx``, so a loop over the threads cannot load consecutive elements with
one vector load (the SGEMM port's ``sA[k, m * DIM_X + idx]``: 2x its whole kernel). Where
every operand's range is known (constants; ``local_id`` of a declared block shape; the
variable of an enclosing loop with constant bounds that its body does not assign; a
rematerialized value, through its definition) and no step leaves its type, the same value
computed in ``int64`` without casts is the same number.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gompute_core.ir import nodes as ir
from gompute_core.ir.walk import nodes_in
from gompute_core.types import is_int

Range = tuple[int, int]
"""Inclusive bounds."""

GLOBAL_ID_MAX = (2**31 - 1) * 1024
"""A bound on ``global_id``: at most 2**31 - 1 blocks of at most 1024 threads along an
axis (the core checks every launch against the device's limits)."""


def _fits(r: Range, t: object) -> Range | None:
    info = np.iinfo(t)  # type: ignore[call-overload]
    return r if info.min <= r[0] and r[1] <= info.max else None


class Ranges:
    """The ranges of the integer values the renderer knows (see the module docstring)."""

    def __init__(self, remat: dict[str, ir.Expr], block: tuple[int, int, int] | None) -> None:
        self.remat = remat
        self.block = block
        self.loops: dict[str, Range] = {}
        """Variables of the enclosing loops with known bounds."""

    def enter(self, s: ir.ForRange, assigned: set[str]) -> bool:
        """Record the range of ``s``'s variable while its body renders (True when known:
        a positive constant step, known bounds, the variable not assigned in the body)."""
        start, stop = self.of(s.start), self.of(s.stop)
        if not (isinstance(s.step, ir.Const) and s.step.value > 0 and start and stop) or \
                s.var in assigned or start[0] > stop[1] - 1:
            return False
        self.loops[s.var] = (start[0], stop[1] - 1)
        return True

    def leave(self, s: ir.ForRange) -> None:
        """Forget ``s``'s variable (after its body)."""
        del self.loops[s.var]

    def of(self, e: ir.Expr) -> Range | None:
        """The range of integer ``e``, None when unknown or when a step may overflow."""
        if not is_int(e.type):  # type: ignore[arg-type]
            return None
        r: Range | None = None
        if isinstance(e, ir.Const):
            r = (int(e.value), int(e.value))
        elif isinstance(e, ir.Var):
            r = self.loops.get(e.name)
            if r is None and e.name in self.remat:
                r = self.of(self.remat[e.name])
        elif isinstance(e, ir.Geometry):
            if e.func == "local_id" and self.block is not None:
                r = (0, self.block[e.dim] - 1)
            elif e.func == "global_id":
                r = (0, GLOBAL_ID_MAX)
        elif isinstance(e, ir.Cast):
            r = self.of(e.value)
        elif isinstance(e, ir.Binary):
            r = self._binary(e)
        return None if r is None else _fits(r, e.type)

    def _binary(self, e: ir.Binary) -> Range | None:
        a, b = self.of(e.lhs), self.of(e.rhs)
        if a is None or b is None:
            return None
        if e.op == "add":
            return a[0] + b[0], a[1] + b[1]
        if e.op == "sub":
            return a[0] - b[1], a[1] - b[0]
        if e.op == "mul":
            products = [x * y for x in a for y in b]
            return min(products), max(products)
        if e.op in ("floordiv", "mod") and a[0] >= 0 and b[0] == b[1] > 0:
            return (a[0] // b[0], a[1] // b[0]) if e.op == "floordiv" else (0, b[0] - 1)
        return None

    def _varies(self, e: ir.Expr) -> bool:
        """True when ``e`` reads a thread index (through rematerialized values too)."""
        for node in nodes_in(e):
            if isinstance(node, ir.Geometry) and node.func in ("local_id", "global_id"):
                return True
            if isinstance(node, ir.Var) and node.name not in self.loops and \
                    node.name in self.remat and self._varies(self.remat[node.name]):
                return True
        return False

    def _terms(self, e: ir.Expr, sign: str, render: Callable[[ir.Expr], str]
               ) -> list[tuple[bool, str, str]]:
        """The summands of ``e`` as (reads a thread index, sign, text)."""
        if isinstance(e, ir.Cast):
            return self._terms(e.value, sign, render)
        if isinstance(e, ir.Var) and e.name not in self.loops:
            return self._terms(self.remat[e.name], sign, render)
        if isinstance(e, ir.Binary) and e.op in ("add", "sub"):
            flip = {"+": "-", "-": "+"}[sign] if e.op == "sub" else sign
            return self._terms(e.lhs, sign, render) + self._terms(e.rhs, flip, render)
        return [(self._varies(e), sign, self.wide(e, render))]

    def sum(self, e: ir.Expr, render: Callable[[ir.Expr], str], lead: str = "") -> str:
        """``e`` as a sum in ``int64`` (after ``lead``, a first summand, if given), the
        terms that read a thread index last, unparenthesized: LLVM then sees the thread's
        index added to a loop-invariant base, and the loop over the threads loads
        consecutive elements (``k * 65 + (m * 16 + tx)``, the other order, left the
        SGEMM port's ``rA`` loads scalar: 1.6x its whole kernel)."""
        text = lead
        for _, sign, term in sorted(self._terms(e, "+", render), key=lambda t: t[0]):
            text = (f"{text} {sign} {term}" if text else
                    term if sign == "+" else f"-{term}")
        return text

    def wide(self, e: ir.Expr, render: Callable[[ir.Expr], str]) -> str:
        """``e`` (whose range :meth:`of` knows) as ``int64`` arithmetic without casts;
        ``render`` renders a loop variable or a thread index."""
        if isinstance(e, ir.Const):
            return f"np.int64({int(e.value)})"
        if isinstance(e, ir.Var) and e.name not in self.loops:
            return self.wide(self.remat[e.name], render)
        if isinstance(e, (ir.Var, ir.Geometry)):
            return f"np.int64({render(e)})"
        if isinstance(e, ir.Cast):
            return self.wide(e.value, render)
        assert isinstance(e, ir.Binary)
        if e.op in ("add", "sub"):
            return f"({self.sum(e, render)})"
        op = {"mul": "*", "floordiv": "//", "mod": "%"}[e.op]
        return f"({self.wide(e.lhs, render)} {op} {self.wide(e.rhs, render)})"

"""Shared-array accesses that cannot take part in a data race, which checked mode's race
tracking (:func:`~gompute_core.ir.checked.instrument` with ``serial``) leaves unstamped.

A plain access (a ``Load`` or ``Store``; atomics take no part in race tracking) is
*private* when

* its index is the thread's own ``local_id`` components, each dimension at most once and
  every dimension the declared block extends over (``local_id`` itself, or a local
  assigned ``local_id(d)`` once, at the top level of the kernel, before the access): two
  threads of a block never name one element, and
* every plain access to the same array that may run in the same barrier interval has the
  same index (the same dimensions in the same order).

Then no access that can meet it in an interval is another thread's on its element, so it
races with nothing (the transpose's ``tile[ty, tx] = ...`` before its barrier and
``... = tile[tx, ty]`` after it are both private; ``tile[ty, tx]`` and
``tile[ty, tx + 1]`` in one interval are not). Two accesses may share an interval when
some barrier (or the kernel's start) reaches both without passing another barrier: a
data-flow walk over the structured body, loops to a fixed point, ``break``,
``continue`` and ``return`` followed. Anything else is tracked as before; a kernel
without a declared block gets no private accesses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import nodes as ir
from .walk import children, exprs_of

_START = 0
"""The kernel's start, as the first barrier interval's opener (barriers are their ``id``)."""

Openers = frozenset[int]


@dataclass(frozen=True)
class RaceFree:
    """What race tracking may skip: the private accesses (``id`` of their ``Load`` or
    ``Store`` node) and the shared arrays with a plain access that is not private."""

    private: frozenset[int]
    tracked: frozenset[str]


@dataclass
class _Access:
    array: str
    dims: tuple[int, ...] | None
    openers: set[int] = field(default_factory=set)


@dataclass
class _Loop:
    breaks: Openers = frozenset()
    continues: Openers = frozenset()


class _Walk:
    def __init__(self, fn: ir.Function, block: tuple[int, int, int]) -> None:
        self.shared = {n for n, t in fn.locals if isinstance(t, ir.SharedType)}
        self.block = block
        counts: dict[str, int] = {}
        _count_assignments(fn.body, counts)
        self.once = {n for n, k in counts.items() if k == 1}
        self.ids: dict[str, int] = {}
        """Locals holding ``local_id(d)``, from their assignment on."""
        self.accesses: dict[int, _Access] = {}
        self.loops: list[_Loop] = []

    def dims(self, index: tuple[ir.Expr, ...]) -> tuple[int, ...] | None:
        """The ``local_id`` dimension of each index, if ``index`` is private-shaped."""
        dims = []
        for i in index:
            if isinstance(i, ir.Geometry) and i.func == "local_id":
                dims.append(i.dim)
            elif isinstance(i, ir.Var) and i.name in self.ids:
                dims.append(self.ids[i.name])
            else:
                return None
        spans = [d for d in range(3) if self.block[d] > 1]
        if len(set(dims)) != len(dims) or any(d not in dims for d in spans):
            return None
        return tuple(dims)

    def note(self, node: ir.Load | ir.Store, state: Openers) -> None:
        key = id(node)
        if key not in self.accesses:
            self.accesses[key] = _Access(node.base.name, self.dims(node.index))
        self.accesses[key].openers |= state

    def expr(self, e: ir.Expr, state: Openers) -> None:
        if isinstance(e, ir.Load) and e.base.name in self.shared:
            self.note(e, state)
        for c in children(e):
            self.expr(c, state)

    def top(self, stmts: tuple[ir.Stmt, ...]) -> None:
        state: Openers = frozenset({_START})
        for s in stmts:
            state = self.stmt(s, state)
            if (isinstance(s, ir.Assign) and s.name in self.once
                    and isinstance(s.value, ir.Geometry) and s.value.func == "local_id"):
                self.ids[s.name] = s.value.dim

    def body(self, stmts: tuple[ir.Stmt, ...], state: Openers) -> Openers:
        for s in stmts:
            state = self.stmt(s, state)
        return state

    def stmt(self, s: ir.Stmt, state: Openers) -> Openers:
        """The openers reaching the point after ``s`` (empty: nothing falls through)."""
        if isinstance(s, ir.Barrier):
            return frozenset({id(s)})
        if isinstance(s, ir.If):
            self.expr(s.cond, state)
            return self.body(s.body, state) | self.body(s.orelse, state)
        if isinstance(s, ir.While):
            return self.loop(s.body, state, (s.cond,))
        if isinstance(s, ir.ForRange):
            for x in (s.start, s.stop, s.step):
                self.expr(x, state)
            return self.loop(s.body, state, ())
        if isinstance(s, ir.Break):
            self.loops[-1].breaks |= state
            return frozenset()
        if isinstance(s, ir.Continue):
            self.loops[-1].continues |= state
            return frozenset()
        if isinstance(s, ir.Store) and s.base.name in self.shared:
            self.note(s, state)
        for name in ("index", "value", "cond"):
            for x in exprs_of(getattr(s, name, None)):
                self.expr(x, state)
        return frozenset() if isinstance(s, ir.Return) else state

    def loop(self, body: tuple[ir.Stmt, ...], state: Openers,
             conds: tuple[ir.Expr, ...]) -> Openers:
        """A loop from ``state``: its head is reached from before it, from its body's end
        and from a ``continue``; it leaves at its head (the condition false) or by a
        ``break``."""
        head = state
        while True:
            for c in conds:
                self.expr(c, head)
            self.loops.append(_Loop())
            end = self.body(body, head)
            frame = self.loops.pop()
            again = head | end | frame.continues
            if again == head:
                return head | frame.breaks
            head = again


def _count_assignments(stmts: tuple[ir.Stmt, ...], counts: dict[str, int]) -> None:
    for s in stmts:
        names = [s.name] if isinstance(s, ir.Assign) else \
            [s.var] if isinstance(s, ir.ForRange) else []
        for n in names:
            counts[n] = counts.get(n, 0) + 1
        for part in ("body", "orelse"):
            _count_assignments(getattr(s, part, ()), counts)


def race_free(fn: ir.Function, block: tuple[int, int, int] | None) -> RaceFree:
    """The private shared-array accesses of the raw kernel entry ``fn`` (see the module
    docstring) under the declared ``block`` (None: none is private)."""
    if block is None:
        return RaceFree(frozenset(), frozenset(n for n, t in fn.locals
                                               if isinstance(t, ir.SharedType)))
    walk = _Walk(fn, block)
    walk.top(fn.body)
    by_array: dict[str, list[_Access]] = {}
    for a in walk.accesses.values():
        by_array.setdefault(a.array, []).append(a)
    private = frozenset(key for key, a in walk.accesses.items() if a.dims is not None and all(
        b.dims == a.dims for b in by_array[a.array] if a.openers & b.openers))
    tracked = frozenset(a.array for key, a in walk.accesses.items() if key not in private)
    return RaceFree(private, tracked)

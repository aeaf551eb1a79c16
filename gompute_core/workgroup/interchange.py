"""Loop interchange of a phase: its uniform loops run once per block, around loops over
the block's threads, the way PoCL's work-group vectorizer runs a work-group's statements.

A phase (:mod:`.fission`) is a loop over the block's threads around the phase's
statements. When the phase holds a ``for`` loop whose bounds every thread computes alike
(they read block variables, arguments, constants and the variables of enclosing such loops
only: no memory, no call), every thread walks the same iterations, so the thread loop may
move inside it: ``for k in range(4): for t in threads: body(t, k)`` runs each thread's
statements in the thread's own order, and changes only how the threads interleave, which
no stretch of a valid kernel between barriers can observe (a GPU's threads interleave
too). An ``if`` on such a condition moves out the same way. The statements in between
(*leaves*) each run in a loop over the threads, which LLVM vectorizes across threads: the
register-tile update ``rC[n, m] = fma(rA[m], rB[n], rC[n, m])`` of an SGEMM becomes one
vector loop over the block per ``(n, m)``, with the local arrays laid out thread-fastest
(by the CPU backend's renderer).

A thread variable a leaf may read before assigning it (its value comes from another leaf,
or from the same leaf's previous iteration of an enclosing loop) gets one slot per thread
(:attr:`~.fission.Plan.arrays`); the loop variables of the moved loops are one scalar per
block. A small constant loop that updates a register tile stays in its leaf instead,
unrolled (:mod:`.registers`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TypeAlias

from gompute_core.ir import nodes as ir
from gompute_core.ir.walk import assigned_in, holds, names_in, nodes_in

from .fission import Plan, exposed
from .registers import small, unroll


@dataclass(frozen=True)
class Leaf:
    """Statements each thread runs in one loop over the block's threads."""

    stmts: tuple[ir.Stmt, ...]


@dataclass(frozen=True)
class Outer:
    """A uniform ``for`` or ``if`` run once per block around its split body."""

    stmt: ir.ForRange | ir.If
    body: tuple[Node, ...]
    orelse: tuple[Node, ...] = ()


Node: TypeAlias = Leaf | Outer

_THREAD_GEOMETRY = frozenset({"local_id", "global_id"})
"""Geometry builtins whose value differs between the threads of a block."""


def leaves(nodes: tuple[Node, ...]) -> Iterator[Leaf]:
    """Every leaf of ``nodes``, in order."""
    for node in nodes:
        if isinstance(node, Leaf):
            yield node
        else:
            yield from leaves(node.body)
            yield from leaves(node.orelse)


def outer_vars(nodes: tuple[Node, ...]) -> set[str]:
    """The loop variables of the moved loops in ``nodes``."""
    out: set[str] = set()
    for node in nodes:
        if isinstance(node, Outer):
            if isinstance(node.stmt, ir.ForRange):
                out.add(node.stmt.var)
            out |= outer_vars(node.body) | outer_vars(node.orelse)
    return out


def _breaks(stmts: tuple[ir.Stmt, ...]) -> bool:
    """True when ``stmts`` hold a ``break`` or ``continue`` outside any loop of theirs."""
    for s in stmts:
        if isinstance(s, (ir.Break, ir.Continue)):
            return True
        if isinstance(s, ir.If) and (_breaks(s.body) or _breaks(s.orelse)):
            return True
    return False


class _Splitter:
    def __init__(self, thread: frozenset[str], fixed: set[str]) -> None:
        self.thread = thread
        self.fixed = fixed
        """Variables that may not become a moved loop's variable."""

    def uniform(self, exprs: tuple[ir.Expr, ...], outer: set[str]) -> bool:
        """True when every thread computes ``exprs`` alike at any point of the phase: no
        memory, no call, no thread variable and no thread index read directly (checked
        mode's instrumentation reads ``local_id`` in its conditions)."""
        return not holds(exprs, ir.Load, ir.Atomic, ir.CallFunction) and not any(
            isinstance(node, ir.Geometry) and node.func in _THREAD_GEOMETRY
            for node in nodes_in(exprs)) and not (names_in(exprs) & self.thread) - outer

    def movable(self, s: ir.Stmt, outer: set[str]) -> bool:
        if isinstance(s, ir.ForRange):
            return s.var not in self.fixed and not _breaks(s.body) and not small(s) and \
                self.uniform((s.start, s.stop, s.step), outer)
        return isinstance(s, ir.If) and self.uniform((s.cond,), outer)

    def split(self, stmts: tuple[ir.Stmt, ...], outer: set[str]) -> tuple[Node, ...]:
        out: list[Node] = []
        run: list[ir.Stmt] = []
        for s in stmts:
            if not self.movable(s, outer):
                run.append(s)
                continue
            if run:
                out.append(Leaf(tuple(run)))
                run = []
            if isinstance(s, ir.ForRange):
                out.append(Outer(s, self.split(s.body, outer | {s.var})))
            else:
                assert isinstance(s, ir.If)
                out.append(Outer(s, self.split(s.body, outer), self.split(s.orelse, outer)))
        if run:
            out.append(Leaf(tuple(run)))
        return tuple(out)


def _loose(stmts: tuple[ir.Stmt, ...]) -> set[str]:
    """The variables ``stmts`` assign, but those of the small loops they keep
    (:func:`~.registers.small`): every thread leaves such a loop at the same value."""
    out: set[str] = set()
    for s in stmts:
        if isinstance(s, ir.ForRange):
            if not small(s):
                out |= {s.var} | _loose(s.body)
        elif isinstance(s, ir.If):
            out |= _loose(s.body) | _loose(s.orelse)
        elif isinstance(s, ir.While):
            out |= _loose(s.body)
        else:
            out |= assigned_in(s)
    return out


def _nested_clash(nodes: tuple[Node, ...], enclosing: set[str]) -> set[str]:
    """The variables of moved loops that a leaf inside them assigns."""
    out: set[str] = set()
    for node in nodes:
        if isinstance(node, Leaf):
            out |= assigned_in(node.stmts) & enclosing
            continue
        inner = enclosing | ({node.stmt.var} if isinstance(node.stmt, ir.ForRange) else set())
        out |= _nested_clash(node.body, inner) | _nested_clash(node.orelse, inner)
    return out


def _unrolled(nodes: tuple[Node, ...]) -> tuple[Node, ...]:
    """``nodes`` with the small loops of their leaves unrolled (:mod:`.registers`)."""
    return tuple(Leaf(unroll(node.stmts)) if isinstance(node, Leaf) else
                 replace(node, body=_unrolled(node.body), orelse=_unrolled(node.orelse))
                 for node in nodes)


def interchange(stmts: tuple[ir.Stmt, ...], thread: frozenset[str], fixed: set[str]
                ) -> tuple[Node, ...] | None:
    """``stmts`` (a phase's) split into leaves and moved loops and ifs, or None when
    nothing moves and no small loop unrolls (:mod:`.registers`). ``thread`` are the
    kernel's thread variables, ``fixed`` the variables that must stay per thread (slots,
    rematerialized values, any assigned by an assignment). A loop whose variable a leaf
    inside it assigns, or a leaf anywhere outside a small loop (every thread leaves a
    small loop at the same value), stays in its leaf."""
    fixed = set(fixed)
    while True:
        nodes = _Splitter(thread, fixed).split(stmts, set())
        if all(isinstance(node, Leaf) for node in nodes) and not any(
                isinstance(s, ir.ForRange) and small(s) for s in stmts):
            return None
        clash = outer_vars(nodes) & set().union(*(_loose(leaf.stmts)
                                                  for leaf in leaves(nodes)))
        clash |= _nested_clash(nodes, set())
        if not clash:
            return _unrolled(nodes)
        fixed |= clash


def _crossing(nodes: tuple[Node, ...]) -> set[str]:
    """The variables a leaf of ``nodes`` may read before assigning it, but the moved loops'
    variables."""
    out: set[str] = set()
    for leaf in leaves(nodes):
        out |= exposed(leaf.stmts)
    return out - outer_vars(nodes)


def moved(p: Plan) -> dict[int, tuple[Node, ...]]:
    """The phases of ``p`` (by index) that run with their uniform loops and ifs moved out
    of the thread loop, and their split bodies; the thread variables a leaf may read
    before assigning join ``p.arrays`` (and leave the values lockstep loops carry). Only
    in a kernel with barriers (one of independent threads keeps each thread's loops
    whole, its accesses contiguous per thread), in a phase without a lockstep loop, a
    ``return``, or a uniform thread variable (:attr:`~.fission.Plan.uniform`)."""
    if p.done_flags or not holds(p.fn.body, ir.Barrier):
        return {}
    fixed = set(p.arrays) | set(p.remat) | set(p.uniform) | {
        node.name for node in nodes_in(p.fn.body) if isinstance(node, ir.Assign)}
    out: dict[int, tuple[Node, ...]] = {}
    for phase in p.phases:
        if phase.lockstep is not None or holds(phase.stmts, ir.Return) or \
                p.uses[phase.index] & p.uniform:
            continue
        nodes = interchange(phase.stmts, p.thread_vars, fixed)
        if nodes is not None:
            out[phase.index] = nodes
    slots = set().union(*(_crossing(nodes) for nodes in out.values())) & (
        p.thread_vars - set(p.remat) - p.local_arrays)
    if slots - p.arrays:
        p.arrays = p.arrays | slots
        for phase in p.phases:
            if phase.lockstep is not None:
                phase.lockstep = replace(phase.lockstep, carried=tuple(
                    name for name in phase.lockstep.carried if name not in slots))
    return out


"""Loop fission of a raw kernel's body: which statements run once per block, which once
per thread, and where the per-thread loops are split.

A block's threads run as plain loops on one CPU thread (the way PoCL and
KernelAbstractions.jl run work-groups): the body becomes a tree of *block
statements*, run once per block, and *phases*, runs of statements executed by
a loop over the block's threads. A phase ends at every ``barrier()`` (all
threads finish the statements before it, then all start the ones after it,
which is what a barrier guarantees) and at every other block statement.

Block statements (everything else is thread code):

* ``barrier()``;
* a loop holding a barrier (its condition is uniform: the frontend rejects a
  barrier under thread-dependent control), and an ``if`` with a uniform
  condition holding a block statement; their bodies are split recursively;
* an assignment to a *block variable*: a local that is uniform
  (:func:`gompute_core.ir.uniformity.varying_names`) and never assigned in
  thread code, so one scalar per block holds it (``step //= 2`` of a tree
  reduction must run once per block, not once per thread);
* ``return``, ``break`` and ``continue`` outside thread code (a uniform
  ``return`` ends the whole block).

A block assignment whose value reads no memory moves up past the thread
statements before it that do not mention its variable, so that
``stride = grid_dim(0) * block_dim(0)`` between thread statements does not
split a phase. The other locals (*thread variables*) live in one scalar
while a thread runs a phase; one used in several phases, or in a phase that a
block loop repeats, and that some phase may read before assigning it (:func:`exposed`:
the value comes from an earlier phase), gets one slot per thread (an array the block's
phases share), except a *rematerialized* one: assigned once, at the top level, from
launch geometry, constants and values that never change afterwards
(``lid = local_id(0)``), it is computed again at the start of each later
phase that reads it instead of being stored. A *uniform* thread variable (the same in
every thread, but assigned in thread code) that a loop or ``if`` holding a barrier reads
is kept in one scalar per block (:attr:`Plan.uniform`): each thread of a phase that
mentions it starts from the value it had when the phase began, and after the phase it
holds the value every thread computed.

A phase whose top level holds a ``while`` loop with no ``break``/``continue`` of its own
and no ``return`` anywhere in the phase runs that loop in *lockstep* (:class:`Lockstep`); so
does a ``for ... in range(start, stop, step)`` loop whose ``start`` or ``step`` differs
between threads (the grid-stride form ``for i in range(tid, n, stride)``), lowered to the
equivalent ``while`` first (:func:`counted_while`). A ``for`` whose start and step are
uniform stays one counted loop per thread: every thread walks the same indices, so running
the threads side by side would not bring their memory accesses together. Lockstep means:
the statements before the loop and its first iteration run in one pass over the threads, then
rounds over the threads still in the loop each run a few more of their iterations, and a
thread runs the statements after the loop as soon as its loop ends. Each thread still
runs its own statements in its own order (a grid-stride accumulation adds in the
kernel's order); only the interleaving between threads changes, which no barrier-free
stretch of a valid kernel can observe (the threads of a GPU block interleave too). A
thread no longer strides through memory alone: each round reads the neighbouring
elements of all threads together, as a GPU's threads do. The values the loop carries from
one round to the next live in one slot per thread (:attr:`Lockstep.carried`).

A local array (``g.local_array``) is per-thread storage already: each thread of the block
has its own slot of one ``(*shape, threads)`` array (:attr:`Plan.local_arrays`), so it is
never a thread variable's slot nor carried by a lockstep loop.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeAlias

import numpy as np

from gompute_core.errors import Unsupported
from gompute_core.ir import nodes as ir
from gompute_core.ir.uniformity import is_varying, varying_names
from gompute_core.ir.walk import assigned_in, holds, names_in, nodes_in
from gompute_core.types import ScalarType

_LOOPS = (ir.While, ir.ForRange)


@dataclass(frozen=True)
class Lockstep:
    """A phase's ``prefix; while loop.cond: loop.body; suffix`` run with the loop in rounds
    over the threads (see the module docstring)."""

    prefix: tuple[ir.Stmt, ...]
    loop: ir.While
    suffix: tuple[ir.Stmt, ...]
    carried: tuple[str, ...]
    """Thread variables kept in a slot per thread between rounds (the others the loop and
    suffix read are rematerialized, already kept per thread, or assigned in the loop's
    body before any use)."""
    locals: tuple[tuple[str, ScalarType], ...] = ()
    """Variables the lowering of a ``for`` loop added (:func:`counted_while`), with their
    types; thread variables of this phase only."""


@dataclass
class Phase:
    """A run of thread statements executed by a loop over the block's threads."""

    index: int
    stmts: tuple[ir.Stmt, ...]
    repeated: bool
    """True inside a loop held at block level (the phase runs several times per block)."""
    lockstep: Lockstep | None = None
    """How the phase runs its top-level loop in rounds, when it can."""


@dataclass
class BlockIf:
    """An ``if`` with a uniform condition run once per block, its branches split."""

    stmt: ir.If
    body: list[Item]
    orelse: list[Item]


@dataclass
class BlockLoop:
    """A loop holding a barrier, run once per block, its body split."""

    stmt: ir.While | ir.ForRange
    body: list[Item]


Item: TypeAlias = Phase | BlockIf | BlockLoop | ir.Stmt
"""One element of a block-level statement list (the other statements: an assignment to a
block variable, ``barrier()``, ``return``, ``break``, ``continue``)."""


def _reads(obj: object) -> set[str]:
    """Every variable read in ``obj`` (an expression or a tuple of them)."""
    return {node.name for node in nodes_in(obj) if isinstance(node, ir.Var)}


def _exposed(stmts: tuple[ir.Stmt, ...], defined: set[str], out: set[str]) -> set[str]:
    """Add to ``out`` the variables ``stmts`` may read before assigning them, ``defined``
    being assigned on entry; the variables assigned on every path through them."""
    defined = set(defined)
    for s in stmts:
        if isinstance(s, ir.Assign):
            out |= _reads(s.value) - defined
            defined.add(s.name)
        elif isinstance(s, ir.If):
            out |= _reads(s.cond) - defined
            defined |= _exposed(s.body, defined, out) & _exposed(s.orelse, defined, out)
        elif isinstance(s, ir.ForRange):  # no iteration, no assignment of the variable
            out |= _reads((s.start, s.stop, s.step)) - defined
            _exposed(s.body, defined | {s.var}, out)
        elif isinstance(s, ir.While):
            out |= _reads(s.cond) - defined
            _exposed(s.body, defined, out)
        else:
            out |= _reads(s) - defined
    return defined


def exposed(stmts: tuple[ir.Stmt, ...]) -> set[str]:
    """The variables ``stmts`` may read before assigning them: those whose value they may
    take from earlier code."""
    out: set[str] = set()
    _exposed(stmts, set(), out)
    return out


def _reads_memory(e: ir.Expr) -> bool:
    return holds(e, ir.Load, ir.Atomic)


@dataclass
class Plan:
    """The split body of a raw kernel's entry function and where its locals live."""

    fn: ir.Function
    items: list[Item]
    phases: list[Phase]
    thread_vars: frozenset[str]
    arrays: frozenset[str]
    """Thread variables kept in one slot per thread."""
    remat: dict[str, ir.Expr]
    """Rematerialized thread variables and their values, in definition order."""
    done_flags: bool
    """True when a thread's ``return`` must make it skip later phases."""
    uses: dict[int, set[str]] = field(default_factory=dict)
    """Variables each phase mentions (by phase index)."""
    uniform: frozenset[str] = frozenset()
    """Uniform thread variables read by block control: one scalar per block, which each
    thread of a phase mentioning it starts from the phase's entry value."""
    local_arrays: frozenset[str] = frozenset()
    """The local arrays (``g.local_array``) of the body: one array per thread of the block
    (a slot of a ``(*shape, threads)`` array, zeroed when the block starts), never a thread
    variable's slot nor a value a lockstep loop carries."""

    def preamble(self, phase: Phase) -> list[str]:
        """The rematerialized variables ``phase`` reads but does not assign, with their
        dependencies, in definition order."""
        return self.recomputed(self.uses[phase.index] - assigned_in(phase.stmts))

    def recomputed(self, names: set[str]) -> list[str]:
        """The rematerialized variables among ``names``, with their dependencies, in
        definition order."""
        need: set[str] = set()
        todo = [n for n in names if n in self.remat]
        while todo:
            name = todo.pop()
            if name not in need:
                need.add(name)
                todo.extend(n for n in names_in(self.remat[name]) if n in self.remat)
        return [n for n in self.remat if n in need]

    def flat(self) -> Phase | None:
        """The kernel's one phase when its threads never meet, so that they may run as one
        flat loop (:func:`~.raw_flat.render_raw_module`'s ``k_flat``): no shared memory, no
        barrier, no lockstep loop, and no block statement but assignments ahead of the
        phase that depend on neither the block index nor memory (run once per launch)."""
        if len(self.phases) != 1 or any(isinstance(t, ir.SharedType) for _, t in self.fn.locals):
            return None
        phase = self.phases[0]
        if phase.lockstep is not None or self.items[-1] is not phase:
            return None
        for item in self.items[:-1]:
            if not isinstance(item, ir.Assign) or holds(item.value, ir.Load, ir.Atomic,
                                                         ir.CallFunction):
                return None
            if any(isinstance(node, ir.Geometry) and node.func == "block_id"
                   for node in nodes_in(item.value)):
                return None
        return phase


class _Planner:
    def __init__(self, fn: ir.Function, kernel: str) -> None:
        self.fn = fn
        self.kernel = kernel
        self.varying = varying_names(fn)
        self.thread: set[str] = set(self.varying)
        self.block_read: set[str] = set()
        """Uniform thread variables a block statement's condition or bounds read: every
        thread computes the same value, and every thread reaches the block statement (the
        frontend rejects a barrier after a return some threads may take), so one scalar
        per block, last written by any thread, holds it."""
        while True:
            before = len(self.thread)
            self._mark(fn.body)
            if len(self.thread) == before:
                break
        self.phases: list[Phase] = []

    def is_block(self, s: ir.Stmt) -> bool:
        if isinstance(s, (ir.Barrier, ir.Return, ir.Break, ir.Continue)):
            return True
        if isinstance(s, ir.Assign):
            return s.name not in self.thread
        if isinstance(s, _LOOPS):
            return holds(s.body, ir.Barrier)
        if isinstance(s, ir.If):
            if holds(s, ir.Barrier):
                return True
            return not is_varying(s.cond, self.thread) and any(
                self.is_block(c) for c in (*s.body, *s.orelse))
        return False

    def _mark(self, body: Iterable[ir.Stmt]) -> None:
        """Grow the thread variables: what thread code assigns, and block assignments of
        values read from thread variables."""
        for s in body:
            if not self.is_block(s):
                self.thread |= assigned_in(s)
            elif isinstance(s, ir.Assign):
                if names_in(s.value) & self.thread:
                    self.thread.add(s.name)
            elif isinstance(s, ir.If):
                self._mark(s.body)
                self._mark(s.orelse)
            elif isinstance(s, _LOOPS):
                self._mark(s.body)

    def _unsupported(self, what: str) -> Unsupported:
        return Unsupported(f"raw kernel {self.kernel!r} ({self.fn.source}): the CPU backend "
                           f"cannot run {what}")

    def _check_block_control(self, s: ir.If | ir.While | ir.ForRange) -> None:
        if isinstance(s, ir.ForRange):
            exprs: tuple[ir.Expr, ...] = (s.start, s.stop, s.step)
            if s.var in self.thread:
                raise self._unsupported(f"the loop over {s.var!r} holding a barrier: the same "
                                        "variable is assigned in per-thread code")
        else:
            exprs = (s.cond,)
        shared = set().union(*(names_in(e) for e in exprs)) & self.thread
        if shared & self.varying:  # the frontend rejects these first
            raise self._unsupported(
                f"the {type(s).__name__.lower()} holding a barrier whose condition reads "
                f"{sorted(shared & self.varying)}, which differs between threads")
        self.block_read |= shared

    def build(self, body: Iterable[ir.Stmt], repeated: bool) -> list[Item]:
        items: list[Item] = []
        run: list[ir.Stmt] = []
        hoisted: list[ir.Stmt] = []

        def flush() -> None:
            items.extend(hoisted)
            hoisted.clear()
            if run:
                phase = Phase(len(self.phases), tuple(run), repeated)
                self.phases.append(phase)
                items.append(phase)
                run.clear()

        for s in body:
            if not self.is_block(s):
                run.append(s)
            elif isinstance(s, ir.Assign) and not _reads_memory(s.value) and \
                    s.name not in names_in(tuple(run)):
                hoisted.append(s)
            else:
                flush()
                if isinstance(s, ir.If):
                    self._check_block_control(s)
                    items.append(BlockIf(s, self.build(s.body, repeated),
                                         self.build(s.orelse, repeated)))
                elif isinstance(s, _LOOPS):
                    self._check_block_control(s)
                    items.append(BlockLoop(s, self.build(s.body, True)))
                else:
                    items.append(s)
        flush()
        return items

    def rematerialized(self) -> dict[str, ir.Expr]:
        counts: dict[str, int] = {}
        for node in nodes_in(self.fn.body):
            if isinstance(node, ir.Assign):
                counts[node.name] = counts.get(node.name, 0) + 1
            elif isinstance(node, ir.ForRange):
                counts[node.var] = counts.get(node.var, 0) + 2
        stable = {name for name, _ in self.fn.args if name not in counts}
        out: dict[str, ir.Expr] = {}
        for s in self.fn.body:
            if not isinstance(s, ir.Assign) or counts[s.name] != 1:
                continue
            if s.name not in self.thread:
                stable.add(s.name)
            elif not _reads_memory(s.value) and names_in(s.value) <= stable:
                out[s.name] = s.value
                stable.add(s.name)
        return out


def _exits(body: tuple[ir.Stmt, ...]) -> bool:
    """True when ``body`` holds a ``break`` or ``continue`` of the loop it is the body of
    (not one inside a nested loop)."""
    for s in body:
        if isinstance(s, (ir.Break, ir.Continue)):
            return True
        if isinstance(s, ir.If) and (_exits(s.body) or _exits(s.orelse)):
            return True
    return False


def _fresh_each_iteration(body: tuple[ir.Stmt, ...]) -> set[str]:
    """Variables assigned at ``body``'s top level before anything else in it mentions
    them (each iteration computes them anew)."""
    seen: set[str] = set()
    fresh: set[str] = set()
    for s in body:
        if isinstance(s, ir.Assign) and s.name not in seen and s.name not in names_in(s.value):
            fresh.add(s.name)
        seen |= names_in(s)
    return fresh


def _invariant(e: ir.Expr, assigned: set[str]) -> bool:
    """True when ``e`` has the same value wherever a loop whose body assigns ``assigned``
    evaluates it: no memory read, no call, none of those variables."""
    return not holds(e, ir.Load, ir.Atomic, ir.CallFunction) and not names_in(e) & assigned


def _i64(e: ir.Expr) -> ir.Expr:
    return e if e.type is np.int64 else ir.Cast(e, np.int64)


def _u64(e: ir.Expr) -> ir.Expr:
    return ir.Cast(e, np.uint64)


def _trips(start: ir.Expr, stop: ir.Expr, step: ir.Expr) -> ir.Expr:
    """The number of values of ``range(start, stop, step)`` (``i64`` bounds) as a ``u64``,
    exact for any bounds (the distance is taken in ``u64``, where it cannot overflow), 0
    for a zero step."""
    u64, zero, one = np.uint64, ir.Const(0, np.uint64), ir.Const(1, np.uint64)

    def count(lo: ir.Expr, hi: ir.Expr, magnitude: ir.Expr) -> ir.Expr:
        """``lo < hi ? (hi - lo - 1) // magnitude + 1 : 0`` in ``u64``."""
        gap = ir.Binary("sub", ir.Binary("sub", _u64(hi), _u64(lo), u64), one, u64)
        n = ir.Binary("add", ir.Binary("floordiv", gap, magnitude, u64), one, u64)
        return ir.Select(ir.Compare("lt", lo, hi, np.bool_), n, zero, u64)

    up = count(start, stop, _u64(step))
    down = count(stop, start, ir.Binary("sub", zero, _u64(step), u64))
    if isinstance(step, ir.Const):
        return up if step.value > 0 else down
    i64_zero = ir.Const(0, np.int64)
    return ir.Select(ir.Compare("gt", step, i64_zero, np.bool_), up, ir.Select(
        ir.Compare("lt", step, i64_zero, np.bool_), down, zero, u64), u64)


def counted_while(s: ir.ForRange, taken: set[str]) -> tuple[
        tuple[ir.Stmt, ...], ir.While, tuple[tuple[str, ScalarType], ...]]:
    """``for v in range(start, stop, step): body`` as the same loop in ``while`` form:
    ``(setup, loop, new variables)``, the setup being ``v_next = start; v_left =
    trips`` (``i64`` and ``u64``; also ``v_step = step`` when the body could change the
    step's value) and the loop ``while v_left != 0: v = T(v_next); v_next += step;
    v_left -= 1; body``. Python's semantics hold: the bounds are evaluated once, in
    order, the loop runs the same iterations whatever the body assigns to ``v``, ``v``
    keeps its last value after the loop (and is untouched when there is none), and no
    arithmetic overflows: the trip count is exact (:func:`_trips`). The new names avoid
    ``taken`` and are added to it. ``s.body`` must not ``break`` or ``continue`` itself."""
    new: list[tuple[str, ScalarType]] = []

    def fresh(role: str, t: ScalarType) -> ir.Var:
        name, k = f"{s.var}_{role}", 1
        while name in taken:
            k += 1
            name = f"{s.var}_{role}{k}"
        taken.add(name)
        new.append((name, t))
        return ir.Var(name, t)

    changed = assigned_in(s.body) | {s.var}
    setup: list[ir.Stmt] = []
    bounds: list[ir.Expr] = []
    for role, e in (("next", s.start), ("stop", s.stop), ("step", s.step)):
        e = _i64(e)
        if role == "next" or not _invariant(e, changed):
            v = fresh(role, np.int64)
            setup.append(ir.Assign(v.name, e))
            e = v
        bounds.append(e)
    nxt, stop, step = bounds
    left = fresh("left", np.uint64)
    setup.append(ir.Assign(left.name, _trips(nxt, stop, step)))
    t = s.start.type
    value = nxt if t is np.int64 else ir.Cast(nxt, t)  # type: ignore[arg-type]
    body = (ir.Assign(s.var, value),
            ir.Assign(nxt.name, ir.Binary("add", nxt, step, np.int64)),
            ir.Assign(left.name, ir.Binary("sub", left, ir.Const(1, np.uint64), np.uint64)),
            *s.body)
    loop = ir.While(ir.Compare("ne", left, ir.Const(0, np.uint64), np.bool_), body)
    return tuple(setup), loop, tuple(new)


def _lockstep(fn: ir.Function, phase: Phase, thread: frozenset[str], varying: frozenset[str],
              arrays: frozenset[str], remat: dict[str, ir.Expr]) -> Lockstep | None:
    """The lockstep form of ``phase``'s first eligible top-level loop, if any: a ``while``,
    or a ``for`` whose start or step varies between threads, lowered to a ``while``."""
    if holds(phase.stmts, ir.Return):
        return None
    types = dict([*fn.args, *fn.locals])
    for k, s in enumerate(phase.stmts):
        prefix = phase.stmts[:k]
        added: tuple[tuple[str, ScalarType], ...] = ()
        if isinstance(s, ir.ForRange) and not _exits(s.body) and (
                is_varying(s.start, varying) or is_varying(s.step, varying)):
            setup, s, added = counted_while(s, set(types))
            prefix += setup
            types.update(added)
        if not isinstance(s, ir.While) or _exits(s.body):
            continue
        suffix = phase.stmts[k + 1:]
        later = names_in((s, suffix)) & (thread | {name for name, _ in added})
        fresh = _fresh_each_iteration(s.body) - names_in(s.cond) - names_in(suffix)
        carried = later - fresh - arrays - set(remat)
        if not all(isinstance(types.get(n), ScalarType) for n in carried):
            return None
        return Lockstep(prefix, s, suffix, tuple(n for n in types if n in carried), added)
    return None


def plan(fn: ir.Function, kernel: str) -> Plan:
    """Split ``fn`` (a raw kernel's entry) into block statements and phases."""
    planner = _Planner(fn, kernel)
    items = planner.build(fn.body, False)
    phases = planner.phases
    remat = planner.rematerialized()
    uses = {p.index: names_in(p.stmts) for p in phases}
    in_phases: dict[str, list[Phase]] = {}
    for p in phases:
        for name in uses[p.index] & planner.thread:
            in_phases.setdefault(name, []).append(p)
    returns = any(holds(p.stmts, ir.Return) for p in phases)
    done = returns and (len(phases) > 1 or any(p.repeated for p in phases))
    uniform = frozenset(planner.block_read)
    local = frozenset(name for name, t in fn.locals if isinstance(t, ir.LocalType))
    remat = {name: value for name, value in remat.items() if name not in uniform}
    carried_in = set().union(*(exposed(p.stmts) for p in phases))
    arrays = frozenset(name for name, ps in in_phases.items() if name not in remat and (
        len(ps) > 1 or ps[0].repeated) and name not in uniform and name not in local
        and name in carried_in)
    thread = frozenset(planner.thread)
    for p in phases:
        p.lockstep = _lockstep(fn, p, thread, planner.varying, arrays | local, remat)
    return Plan(fn, items, phases, thread, arrays, remat, done, uses, uniform, local)

"""Checked mode: a raw kernel's IR rewritten so that every array access checks itself.

:func:`instrument` turns a raw kernel's :class:`~gompute_core.ir.kernel.KernelIR` into
another raw kernel, written in the ordinary IR nodes only (so every renderer, the CPU's,
the C family's and any third party's, runs it with no code of its own):

* the entry gains arguments after the user's: one ``u64`` extent (element count) per
  ``GlobalPtr`` parameter, passed by the host, then the *fault record*, a small device
  array of :data:`RECORD_WORDS` ``u64`` words (type :class:`FaultRecord`);
* every ``Load``, ``Store`` and ``Atomic`` of a global or shared array, every
  ``LocalLoad`` and ``LocalStore`` of a local array, and every ``Index`` of a params
  array, first checks its index against the extent (one unsigned
  comparison: a negative index is a huge one). Out of range, a store or atomic is not
  performed and a load reads 0; the first fault of the launch (a compare-and-swap of word
  0 from 0) writes the access's site, the index, the extent and the thread into the
  record, which the host reads at the next synchronization. The kernel goes on running:
  it never touches memory outside its arrays;
* with ``serial=True`` (a backend that runs the threads of a block one after another, the
  CPU) each shared array also gets three shadow arrays (:class:`ShadowType`) stamping the
  last writer and the first two readers of each element with the site, the thread and the
  *barrier interval* (a block counter bumped after every ``barrier()``): two threads
  writing, or one writing and another reading, one element in one interval is a data
  race, recorded the same way. An access that can race with nothing (indexed by the
  thread's own ``local_id``, as every access that may share its interval:
  :mod:`.private`) is not stamped, and an array with no other access has no shadows.
  And every thread counts itself in before each ``barrier()`` (a bare ``return`` stamps
  the returning thread and line): a barrier that fewer than all the block's threads
  reached is recorded after it.

Index expressions are evaluated twice (the check, then the access) when they are pure; an
index that holds an atomic is first assigned to a new local where the access is evaluated
unconditionally, and is :class:`~gompute_core.errors.Unsupported` elsewhere (inside a
conditional expression or a loop condition). Atomics are bounds-checked but take no part
in race tracking (two atomics never race; an atomic against a plain access is not seen).

:func:`instrument` also returns the *sites* (:class:`Site`): what each access is and
where it is written, so the host can name the kernel's array and line in the error.
Another kind of array is one more case of :func:`_extents` (its extent along each
dimension) and of the access nodes :meth:`_Instrumenter.expr` and ``stmt`` rewrite.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from ..errors import Unsupported
from . import nodes as ir
from .checked_calls import HelperFaults, checked_call, holds_check, returns
from .kernel import RAW, KernelIR
from .private import race_free
from .walk import EXPRS, READS, children, holds, reorderable

RECORD_WORDS = 12
"""Words of the fault record: 0 the fault's code (0: none), 1 the index (or element),
2 the extent (or the other access's stamp), 3-5 ``block_id``, 6-8 ``local_id``, 9 the
dimension (or the race's kind), 10-11 ``block_dim(0)``, ``block_dim(1)``."""
BOUNDS, RACE, BARRIER = 0, 1, 2
"""Fault kinds (``code >> 32``)."""
RACE_KINDS = ("write after write", "write after read", "read after write")
"""What word 9 of a race record means: this access, then the other thread's."""
_TID_BITS, _EPOCH_BITS = 11, 32
_MAX_SITES = (1 << 20) - 1

u64, i64 = np.uint64, np.int64


@dataclass(frozen=True)
class FaultRecord(ir.PointerType):
    """The type of the fault record argument (a ``GlobalPtr[u64]`` the core allocates)."""


@dataclass(frozen=True)
class ShadowType(ir.SharedType):
    """The type of a shared array's race-tracking shadow (one ``i64`` stamp per element)."""


CHECK_STATE = (FaultRecord, ShadowType)
"""The types of checked mode's own arrays: an atomic on one leaves values uniform (its old
value only feeds an expression that is always False)."""


@dataclass(frozen=True)
class Site:
    """One checked access: ``access`` (``"read"``, ``"write"``, ``"atomic"``) of ``array``
    (a parameter, a shared array, or a params path like ``p.taps``) at ``where``
    (``file:line``), whose extents along each dimension are ``shape`` (None: passed at
    launch, a pointer's element count)."""

    access: Literal["read", "write", "atomic", "barrier", "return"]
    array: str
    where: str
    shape: tuple[int, ...] | None


@dataclass(frozen=True)
class Instrumented:
    """A checked kernel: its IR, its sites (site ``k`` has code ``k + 1``) and the pointer
    parameters whose extents follow the user's arguments, in order."""

    kernel: KernelIR
    sites: tuple[Site, ...]
    extents: tuple[str, ...]
    serial: bool


def _c(value: int, t: type = i64) -> ir.Const:
    return ir.Const(value, t)  # type: ignore[arg-type]


def _bin(op: ir.BinaryOp, a: ir.Expr, b: ir.Expr, t: type = i64) -> ir.Binary:
    return ir.Binary(op, a, b, t)  # type: ignore[arg-type]


def _cmp(op: ir.CompareOp, a: ir.Expr, b: ir.Expr) -> ir.Compare:
    return ir.Compare(op, a, b, np.bool_)  # type: ignore[arg-type]


def _and(a: ir.Expr, b: ir.Expr) -> ir.Logical:
    return ir.Logical("and", a, b, np.bool_)  # type: ignore[arg-type]


def _geo(func: ir.GeometryFunc, dim: int) -> ir.Geometry:
    return ir.Geometry(func, dim, i64)  # type: ignore[arg-type]


def _u(e: ir.Expr) -> ir.Expr:
    return e if e.type is u64 else ir.Cast(e, u64)  # type: ignore[arg-type]


def _zero(t: ir.IRType) -> ir.Const:
    return ir.Const(False if t is np.bool_ else 0.0 if np.issubdtype(t, np.floating)  # type: ignore[arg-type]
                    else 0, t)  # type: ignore[arg-type]


def _path(e: ir.Expr) -> str:
    if isinstance(e, ir.Var):
        return e.name
    if isinstance(e, ir.Field):
        return f"{_path(e.base)}.{e.name}"
    if isinstance(e, ir.Index):
        return f"{_path(e.base)}[]"
    return "?"


def _extents(base: ir.Var, extent_args: dict[str, ir.Var]) -> tuple[ir.Expr, ...]:
    """The extent of ``base`` along each dimension: a pointer's is its extent argument, an
    array declared in the kernel (shared; a local array is one more ``shape``) its shape."""
    t = base.type
    if isinstance(t, ir.PointerType):
        return (extent_args[base.name],)
    shape = getattr(t, "shape", None)
    if shape is None:
        raise Unsupported(f"checked mode: no extent known for {base.name!r} of type {t!r}")
    return tuple(_c(d, u64) for d in shape)


class _Instrumenter:
    """Rewrites one function: the entry (``helper`` None), or a helper function, whose faults
    go to the :class:`~gompute_core.ir.checked_calls.HelperFaults` it returns them through.
    ``block`` is the kernel's declared block shape (race tracking's private accesses)."""

    def __init__(self, fn: ir.Function, serial: bool, prefix: str, sites: list[Site],
                 calls: dict[str, ir.TupleType], helper: HelperFaults | None = None,
                 block: tuple[int, int, int] | None = None) -> None:
        self.p = prefix
        self.fn = fn
        self.serial = serial
        self.sites = sites
        self.calls = calls
        """The instrumented helpers, by name, and their new return types."""
        self.helper = helper
        self.fault = ir.Var(f"{prefix}fault", FaultRecord(u64))
        self.extent_args = {n: ir.Var(f"{prefix}n_{n}", u64) for n, t in fn.args
                            if isinstance(t, ir.PointerType)}  # type: ignore[arg-type]
        self.new_locals: list[tuple[str, ir.IRType]] = []
        self.shared = {n: t for n, t in fn.locals if isinstance(t, ir.SharedType)}
        self.shadows: dict[str, tuple[ir.Var, ir.Var, ir.Var]] = {}
        self.cleared: list[tuple[ir.Var, int]] = []
        """Checked mode's shared arrays, zeroed at the start of each block, and sizes."""
        self.arrive = ir.Var(f"{prefix}arrive", ShadowType(i64, (3,)))  # type: ignore[arg-type]
        """The block's arrivals at barriers entered in odd and in even barrier intervals
        (two counters: a thread checks the barrier it passed while others may already count
        themselves in at the next), and the stamp of the last ``return``."""
        self.private: frozenset[int] = frozenset()
        """Shared-array accesses that race with nothing (:mod:`.private`): not stamped."""
        if serial:
            races = race_free(fn, block)
            self.private = races.private
            for n, t in self.shared.items():
                if n not in races.tracked:
                    continue
                st = ShadowType(i64, (t.size,))  # type: ignore[arg-type]
                trio = tuple(ir.Var(f"{prefix}{role}_{n}", st) for role in ("w", "r1", "r2"))
                self.shadows[n] = trio  # type: ignore[assignment]
                self.cleared += [(v, t.size) for v in trio]
            if holds(fn.body, ir.Barrier):
                self.cleared.append((self.arrive, 3))
            self.new_locals += [(v.name, v.type) for v, _ in self.cleared]
        self.epoch = ir.Var(f"{prefix}epoch", i64)  # type: ignore[arg-type]
        self.temps = 0
        self.reorder = False
        """Whether the statement being rewritten lets an index that reads memory be
        evaluated before it (:func:`~.walk.reorderable`)."""

    # -- the fault record ---------------------------------------------------------------
    def site(self, access: Literal["read", "write", "atomic", "barrier", "return"],
             base: ir.Expr | None, where: str,
             shape: tuple[int, ...] | None) -> int:
        array = "" if base is None else _path(base)
        self.sites.append(Site(access, array, where or self.fn.source, shape))
        if len(self.sites) > _MAX_SITES:
            raise Unsupported(f"checked mode: kernel {self.fn.name!r} has more than "
                              f"{_MAX_SITES} array accesses")
        return len(self.sites)

    def won(self, code: int | ir.Expr) -> ir.Expr:
        """True in the thread whose compare-and-swap of word 0 from 0 to ``code`` wins."""
        value = _c(code, u64) if isinstance(code, int) else code
        cas = ir.Atomic("cas", self.fault, (_c(0),), value, _c(0, u64), u64)  # type: ignore[arg-type]
        return _cmp("eq", cas, _c(0, u64))

    @staticmethod
    def words(words: dict[int, ir.Expr]) -> dict[int, ir.Expr]:
        """``words`` and the thread's (block and thread ids, the block's x and y sizes)."""
        return {**words, **{3 + d: _u(_geo("block_id", d)) for d in range(3)},
                **{6 + d: _u(_geo("local_id", d)) for d in range(3)},
                10: _u(_geo("block_dim", 0)), 11: _u(_geo("block_dim", 1))}

    def record(self, code: int | ir.Expr, words: dict[int, ir.Expr]) -> ir.Expr:
        """A bool expression that is always False and, when it wins the record (word 0 was
        0), writes ``words`` and the thread into it (by atomic exchanges: an expression
        cannot store)."""
        acc: ir.Expr | None = None
        for k, w in sorted(self.words(words).items()):
            a = ir.Atomic("exch", self.fault, (_c(k),), w, None, u64)  # type: ignore[arg-type]
            acc = a if acc is None else _bin("bitor", acc, a, u64)
        assert acc is not None
        return _and(self.won(code),
                    _cmp("eq", _bin("bitand", acc, _c(0, u64), u64), _c(1, u64)))

    def record_stmt(self, code: int | ir.Expr, words: dict[int, ir.Expr]) -> ir.Stmt:
        """:meth:`record` as a statement (plain stores after the winning compare-and-swap:
        less code on the cold path, so the hot one optimizes as before); in a helper, the
        first fault of the call kept for its caller."""
        if self.helper is not None:
            return self.helper.keep(code, words)
        stores = tuple(ir.Store(self.fault, (_c(k),), w)
                       for k, w in sorted(self.words(words).items()))
        return ir.If(self.won(code), stores, ())

    def bounds(self, index: tuple[ir.Expr, ...], extents: tuple[ir.Expr, ...], site: int
               ) -> tuple[ir.Expr, ir.Expr, ir.Stmt]:
        """(every index in range, the record of the first that is not as an expression and
        as a statement)."""
        ok: ir.Expr | None = None
        fault: ir.Expr | None = None
        stmt: ir.Stmt | None = None
        for d in reversed(range(len(index))):
            inside = _cmp("lt", _u(index[d]), extents[d])
            code = (BOUNDS << 32) | site
            words = {1: _u(index[d]), 2: extents[d], 9: _c(d, u64)}
            rec_stmt = self.record_stmt(code, words)
            # a helper has no record to write from an expression: its accesses are hoisted
            rec = _c(False, np.bool_) if self.helper is not None else self.record(code, words)
            ok = inside if ok is None else _and(inside, ok)
            fault = rec if fault is None else ir.Select(inside, fault, rec, np.bool_)  # type: ignore[arg-type]
            stmt = rec_stmt if stmt is None else ir.If(inside, (stmt,), (rec_stmt,))
        assert ok is not None and fault is not None and stmt is not None
        return ok, fault, stmt

    # -- race tracking ------------------------------------------------------------------
    def thread1(self) -> ir.Expr:
        """The thread's index in its block, plus one (0 means no thread)."""
        lid = [_geo("local_id", d) for d in range(3)]
        dim = [_geo("block_dim", d) for d in range(2)]
        flat = _bin("add", _bin("mul", _bin("add", _bin("mul", lid[2], dim[1]), lid[1]),
                                dim[0]), lid[0])
        return _bin("add", flat, _c(1))

    def interval(self) -> ir.Expr:
        """The barrier interval's field of a stamp (masks and a multiplication: no shift,
        whose IR semantics cost a range check)."""
        return _bin("mul", _bin("bitand", self.epoch, _c((1 << _EPOCH_BITS) - 1)),
                    _c(1 << _TID_BITS))

    def stamp(self, site: int) -> ir.Expr:
        head = _c(site << (_EPOCH_BITS + _TID_BITS))
        return _bin("bitor", _bin("bitor", head, self.interval()), self.thread1())

    def same_interval(self, stamp: ir.Expr) -> ir.Expr:
        field = ((1 << _EPOCH_BITS) - 1) << _TID_BITS
        return _cmp("eq", _bin("bitand", stamp, _c(field)), self.interval())

    def other_thread(self, stamp: ir.Expr) -> ir.Expr:
        """True when ``stamp`` is of this barrier interval and another thread."""
        tid = _bin("bitand", stamp, _c((1 << _TID_BITS) - 1))
        return _and(self.same_interval(stamp), _cmp("ne", tid, self.thread1()))

    def race(self, site: int, flat: ir.Expr, other: ir.Expr, kind: int) -> ir.Expr:
        return self.record((RACE << 32) | site, {1: _u(flat), 2: _u(other), 9: _c(kind, u64)})

    def race_stmt(self, site: int, flat: ir.Expr, other: ir.Expr, kind: int) -> ir.Stmt:
        return self.record_stmt((RACE << 32) | site,
                                {1: _u(flat), 2: _u(other), 9: _c(kind, u64)})

    def flat(self, base: ir.Var, index: tuple[ir.Expr, ...]) -> ir.Expr:
        shape = base.type.shape  # type: ignore[union-attr]
        flat = index[0]
        for d in range(1, len(index)):
            flat = _bin("add", _bin("mul", flat, _c(shape[d])), index[d])
        return flat

    def tracked(self, node: ir.Load | ir.LocalLoad | ir.Store | ir.LocalStore) -> bool:
        """Whether ``node`` (an access of any array) is race-stamped."""
        return node.base.name in self.shadows and id(node) not in self.private

    def write_checks(self, base: ir.Var, index: tuple[ir.Expr, ...], site: int
                     ) -> list[ir.Stmt]:
        w, r1, r2 = self.shadows[base.name]
        k = self.flat(base, index)
        lw, l1, l2 = (ir.Load(v, (k,), i64) for v in (w, r1, r2))  # type: ignore[arg-type]
        return [
            ir.If(self.other_thread(lw), (self.race_stmt(site, k, lw, 0),), ()),
            ir.If(self.other_thread(l1), (self.race_stmt(site, k, l1, 1),),
                  (ir.If(self.same_interval(l2), (self.race_stmt(site, k, l2, 1),),
                         ()),)),
            ir.Store(w, (k,), self.stamp(site)),
        ]

    def read_checks(self, base: ir.Var, index: tuple[ir.Expr, ...], site: int
                    ) -> tuple[ir.Stmt, ...]:
        """Statements that check a read against the last writer and stamp the element's
        readers (the first, and the latest other than the first)."""
        w, r1, r2 = self.shadows[base.name]
        k = self.flat(base, index)
        lw, l1 = ir.Load(w, (k,), i64), ir.Load(r1, (k,), i64)  # type: ignore[arg-type]
        tid1 = _bin("bitand", l1, _c((1 << _TID_BITS) - 1))
        stamp = self.stamp(site)
        return (ir.If(self.other_thread(lw), (self.race_stmt(site, k, lw, 2),), ()),
                ir.If(self.same_interval(l1),
                      (ir.If(_cmp("ne", tid1, self.thread1()), (ir.Store(r2, (k,), stamp),),
                             ()),),
                      (ir.Store(r1, (k,), stamp),)))

    def read_hook(self, base: ir.Var, index: tuple[ir.Expr, ...], site: int) -> ir.Expr:
        """:meth:`read_checks` as a bool expression, always False, for a read inside a
        conditional expression or a loop condition (stamping through atomic exchanges)."""
        w, r1, r2 = self.shadows[base.name]
        k = self.flat(base, index)
        lw, l1 = ir.Load(w, (k,), i64), ir.Load(r1, (k,), i64)  # type: ignore[arg-type]
        stamp = self.stamp(site)
        tid1 = _bin("bitand", l1, _c((1 << _TID_BITS) - 1))
        update = ir.Select(self.same_interval(l1),
                           ir.Select(_cmp("ne", tid1, self.thread1()),
                                     ir.Atomic("exch", r2, (k,), stamp, None, i64), _c(0), i64),  # type: ignore[arg-type]
                           ir.Atomic("exch", r1, (k,), stamp, None, i64), i64)  # type: ignore[arg-type]
        return ir.Logical("or", _and(self.other_thread(lw), self.race(site, k, lw, 2)),  # type: ignore[arg-type]
                          _cmp("eq", update, _c(-1)), np.bool_)

    # -- expressions --------------------------------------------------------------------
    def expr(self, e: ir.Expr, hoist: list[ir.Stmt] | None) -> ir.Expr:
        """``e`` with its accesses checked; ``hoist`` collects assignments to run before the
        statement (None where ``e`` is evaluated conditionally)."""
        if self.helper is not None and hoist is not None and \
                isinstance(e, (ir.Select, ir.Logical)) and self.helper.checks(e):
            return self.helper.linearize(self, e, hoist)
        if isinstance(e, ir.Select):
            return ir.Select(self.expr(e.cond, hoist), self.expr(e.if_true, None),
                             self.expr(e.if_false, None), e.type)
        if isinstance(e, ir.Logical):
            return ir.Logical(e.op, self.expr(e.lhs, hoist), self.expr(e.rhs, None), e.type)
        if isinstance(e, ir.CallFunction) and e.func in self.calls:
            args = tuple(self.expr(a, hoist) for a in e.args)
            return checked_call(self, replace(e, args=args, type=self.calls[e.func]), e.type,
                                hoist)
        if isinstance(e, (ir.Load, ir.LocalLoad, ir.Atomic)):
            return self.access(e, hoist)
        if isinstance(e, ir.Index):
            return self.index(e, hoist)
        if isinstance(e, (ir.Const, ir.Var, ir.Geometry)):
            return e
        changes = {}
        for name in e.__dataclass_fields__:
            child = getattr(e, name)
            if isinstance(child, tuple):
                changes[name] = tuple(self.expr(c, hoist) for c in child)
            elif isinstance(child, EXPRS):
                changes[name] = self.expr(child, hoist)
        return replace(e, **changes)  # type: ignore[type-var]

    def temp(self, t: ir.IRType) -> ir.Var:
        """A new local of type ``t``."""
        self.temps += 1
        name = f"{self.p}t{self.temps}"
        self.new_locals.append((name, t))
        return ir.Var(name, t)

    def indices(self, index: tuple[ir.Expr, ...], hoist: list[ir.Stmt] | None, where: str
                ) -> tuple[ir.Expr, ...]:
        """``index`` checked, each component that holds an atomic (or, where the statement
        allows it, that reads memory) assigned to a new local in ``hoist``: evaluated
        once, not in the check and again in the access (which kept numba from optimizing
        the histogram's ``atomic_add(h, values[i], 1)``: 3-4x its unchecked time)."""
        out = []
        for i in index:
            i = self.expr(i, hoist)
            atomic = _holds_atomic(i)
            if atomic and hoist is None:
                raise Unsupported(
                    f"checked mode ({where}): an index computed by an atomic inside a "
                    "conditional expression or a loop condition cannot be checked; "
                    "assign the atomic's result to a variable first")
            if hoist is not None and (atomic or self.reorder and holds(i, READS)):
                var = self.temp(i.type)
                hoist.append(ir.Assign(var.name, i))
                i = var
            out.append(i)
        return tuple(out)

    def access(self, e: ir.Load | ir.LocalLoad | ir.Atomic, hoist: list[ir.Stmt] | None
               ) -> ir.Expr:
        where = getattr(e, "where", "")
        index = self.indices(e.index, hoist, where)
        shape = getattr(e.base.type, "shape", None)
        read = isinstance(e, (ir.Load, ir.LocalLoad))
        site = self.site("read" if read else "atomic", e.base, where, shape)
        ok, fault, fault_stmt = self.bounds(index, _extents(e.base, self.extent_args), site)
        if read:
            inner: ir.Expr = replace(e, index=index)
            if hoist is not None:  # checked (and race-stamped) before the statement
                checks = self.read_checks(e.base, index, site) if self.tracked(e) else ()
                hoist.append(ir.If(ok, checks, (fault_stmt,)))
                return ir.Select(ok, inner, _zero(e.type), e.type)
            if self.tracked(e):
                inner = ir.Select(self.read_hook(e.base, index, site), _zero(e.type), inner,
                                  e.type)
        else:
            cmp = None if e.compare is None else self.expr(e.compare, hoist)
            inner = replace(e, index=index, value=self.expr(e.value, hoist), compare=cmp)
        return ir.Select(ok, inner, ir.Select(fault, _zero(e.type), _zero(e.type), e.type),
                         e.type)

    def index(self, e: ir.Index, hoist: list[ir.Stmt] | None) -> ir.Expr:
        base = self.expr(e.base, hoist)
        (i,) = self.indices((e.index,), hoist, e.where)
        length = base.type.length  # type: ignore[union-attr]
        site = self.site("read", base, e.where, (length,))
        ok, fault, fault_stmt = self.bounds((i,), (_c(length, u64),), site)
        zero = _zero(e.type) if isinstance(e.type, type) else None
        if self.helper is not None:
            assert hoist is not None  # a helper's conditional expressions are linearized
            hoist.append(ir.If(ok, (), (fault_stmt,)))
            fault = _c(False, np.bool_)
        if zero is None:  # an array of arrays: index 0 stands in (the record is written)
            return replace(e, base=base, index=ir.Select(_or_fault(ok, fault), i, _c(0, i.type),
                                                         i.type))
        return ir.Select(ok, replace(e, base=base, index=i),
                         ir.Select(fault, zero, zero, e.type), e.type)

    # -- statements ---------------------------------------------------------------------
    def body(self, stmts: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        out: list[ir.Stmt] = []
        for s in stmts:
            out.extend(self.stmt(s))
        return tuple(out)

    def stmt(self, s: ir.Stmt) -> list[ir.Stmt]:
        hoist: list[ir.Stmt] = []
        self.reorder = reorderable(s)
        if isinstance(s, (ir.Store, ir.LocalStore)):
            where = getattr(s, "where", "")
            index = self.indices(s.index, hoist, where)
            value = self.expr(s.value, hoist)
            shape = getattr(s.base.type, "shape", None)
            site = self.site("write", s.base, where, shape)
            ok, _, fault_stmt = self.bounds(index, _extents(s.base, self.extent_args), site)
            done: list[ir.Stmt] = [replace(s, index=index, value=value)]
            if self.tracked(s):
                done = self.write_checks(s.base, index, site) + done
            return [*hoist, ir.If(ok, tuple(done), (fault_stmt,))]
        if isinstance(s, ir.Assign):
            value = self.expr(s.value, hoist)  # fills ``hoist`` first
            return [*hoist, ir.Assign(s.name, value)]
        if isinstance(s, ir.Evaluate):
            value = self.expr(s.value, hoist)
            return [*hoist, ir.Evaluate(value)]
        if isinstance(s, ir.If):
            cond = self.expr(s.cond, hoist)
            return [*hoist, ir.If(cond, self.body(s.body), self.body(s.orelse))]
        if isinstance(s, ir.While):
            if self.helper is not None and self.helper.checks(s.cond):
                return [self.helper.while_loop(self, s)]
            return [ir.While(self.expr(s.cond, None), self.body(s.body))]
        if isinstance(s, ir.Return) and self.helper is not None and s.value is not None:
            return self.helper.returned(self, self.expr(s.value, hoist), hoist)
        if isinstance(s, ir.ForRange):
            start, stop, step = (self.expr(x, hoist) for x in (s.start, s.stop, s.step))
            return [*hoist, ir.ForRange(s.var, start, stop, step, self.body(s.body))]
        if isinstance(s, ir.Return) and self.serial and self.cleared:
            stamp = self.stamp(self.site("return", None, s.where, None))
            return [ir.Store(self.arrive, (_c(2),), stamp), s]
        if isinstance(s, ir.Barrier) and self.serial:
            return self.barrier(s)
        return [s]

    def barrier(self, s: ir.Barrier) -> list[ir.Stmt]:
        """Count the thread in, wait, open the next barrier interval, and check that every
        thread of the block came (a thread that returned did not)."""
        site = self.site("barrier", None, s.where, None)
        threads = self.threads()
        # entered in interval e, counted in slot e % 2; after it (interval e + 1) the slot
        # holds the arrivals of the (e + 1) // 2 barriers entered in intervals of e's parity
        parity = _bin("bitand", self.epoch, _c(1))
        after = _bin("bitand", _bin("sub", self.epoch, _c(1)), _c(1))
        arrivals = ir.Load(self.arrive, (after,), i64)  # type: ignore[arg-type]
        earlier = _bin("mul", _bin("sub", _bin("floordiv", self.epoch, _c(2)), _c(1)), threads)
        came = _bin("sub", arrivals, earlier)
        last_return = ir.Load(self.arrive, (_c(2),), i64)  # type: ignore[arg-type]
        record = self.record_stmt((BARRIER << 32) | site, {1: _u(came), 2: _u(threads),
                                                          9: _u(last_return)})
        # the block's threads run one after another: a plain increment counts exactly
        count = _bin("add", ir.Load(self.arrive, (parity,), i64), _c(1))  # type: ignore[arg-type]
        return [ir.Store(self.arrive, (parity,), count), s,
                ir.Assign(self.epoch.name, _bin("add", self.epoch, _c(1))),
                ir.If(_cmp("ne", came, threads), (record,), ())]

    def threads(self) -> ir.Expr:
        """The block's thread count."""
        return _bin("mul", _bin("mul", _geo("block_dim", 0), _geo("block_dim", 1)),
                    _geo("block_dim", 2))

    def prologue(self) -> list[ir.Stmt]:
        """With ``serial``: the block's first thread zeroes checked mode's shared arrays
        (one plain loop each: the threads run one after another), a barrier, and the first
        barrier interval."""
        k = ir.Var(f"{self.p}k", i64)  # type: ignore[arg-type]
        self.new_locals.append((k.name, i64))
        clear = tuple(ir.ForRange(k.name, _c(0), _c(size), _c(1), (ir.Store(v, (k,), _c(0)),))
                      for v, size in self.cleared)
        return [ir.If(_cmp("eq", self.thread1(), _c(1)), clear, ()), ir.Barrier(),
                ir.Assign(self.epoch.name, _c(1))]


def _or_fault(ok: ir.Expr, fault: ir.Expr) -> ir.Expr:
    return ir.Logical("or", ok, fault, np.bool_)  # type: ignore[arg-type]


def _holds_atomic(e: ir.Expr) -> bool:
    if isinstance(e, ir.Atomic) and not isinstance(e.base.type, CHECK_STATE):
        return True
    return any(_holds_atomic(c) for c in children(e))


def instrument(kir: KernelIR, serial: bool = False) -> Instrumented:
    """``kir`` (a raw kernel) with every array access checked, its helpers' included
    (:mod:`.checked_calls`); ``serial`` adds shared-memory race and barrier tracking (only
    where a block's threads run one after another)."""
    if kir.kind != RAW or not kir.functions:
        raise Unsupported(f"checked mode instruments raw kernels written in Python; "
                          f"{kir.name!r} is not one")
    names = {n for f in kir.functions for n, _ in (*f.args, *f.locals)}
    prefix = "ck_"
    while any(n.startswith(prefix) for n in names):
        prefix = "c" + prefix
    sites: list[Site] = []
    calls: dict[str, ir.TupleType] = {}
    functions = []
    for f in kir.functions[:-1]:  # callees before callers
        if not holds_check(f.body, calls):
            functions.append(f)
            continue
        faults = HelperFaults(prefix, calls)
        hins = _Instrumenter(f, False, prefix, sites, calls, faults)
        body = (*faults.prologue(), *hins.body(f.body))
        calls[f.name] = returns(f)
        functions.append(replace(f, ret=calls[f.name], body=body,
                                 locals=(*f.locals, *faults.locals(), *hins.new_locals)))
    fn = kir.functions[-1]
    ins = _Instrumenter(fn, serial, prefix, sites, calls, block=kir.block)
    body = ins.body(fn.body)
    if ins.cleared:
        body = (*ins.prologue(), *body)
        ins.new_locals.append((ins.epoch.name, i64))  # type: ignore[arg-type]
    args = (*fn.args, *((v.name, v.type) for v in ins.extent_args.values()),
            (ins.fault.name, ins.fault.type))
    entry = replace(fn, args=args, locals=(*fn.locals, *ins.new_locals), body=body)
    checked = replace(kir, functions=(*functions, entry))
    return Instrumented(checked, tuple(sites), tuple(ins.extent_args), serial)

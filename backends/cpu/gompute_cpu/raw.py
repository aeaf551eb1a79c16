"""A raw kernel rendered for the CPU: a block's threads as loops, blocks in parallel.

The module a raw :class:`~gompute_core.ir.kernel.KernelIR` becomes defines:

* ``k_block(_b0, _b1, _b2, _GX, _GY, _GZ, _BX, _BY, _BZ, <shared and per-thread arrays>,
  A...)``: one block, its body split (:mod:`~gompute_core.workgroup`) into block
  statements (run once) and phases (each a loop over the block's threads, ``_tx``
  fastest; the flat thread index is ``_t``); a phase in lockstep
  (:class:`~gompute_core.workgroup.Lockstep`) is a first pass
  over the threads (the statements before its loop and the loop's first iteration; a
  thread whose loop is already over runs the statements after it), then rounds over the
  threads whose ``_act[_t]`` flag says their loop goes on, each running up to
  ``_ROUND`` more of a thread's iterations (its carried values in ``_ls_<name>[_t]``)
  and, when its loop ends, the statements after it; a phase of a kernel with barriers
  whose uniform loops and ifs move out of the thread loop (:mod:`~gompute_core.workgroup`) runs
  them once, around a loop over the threads for each run of statements between them;
* ``k_serial(_GX, _GY, _GZ, _BX, _BY, _BZ, _first, _last, _chunks, A...)`` and
  ``k_parallel`` (the same over ``prange``): the blocks ``_first`` to ``_last - 1`` (in
  launch order, x fastest; a launch may come in slices) in ``_chunks`` contiguous ranges
  (the block's index counted up without a division per block), each range allocating the
  block's shared arrays and per-thread slots once and reusing them for its blocks
  (shared memory starts uninitialized on every device anyway);
* for a kernel whose threads never meet (``Plan.flat``), also
  ``k_flat(_GX, _GY, _GZ, _BX, _BY, _BZ, _first, _last, A...)``: the threads ``_first``
  to ``_last - 1`` of a 1-D launch as one ``prange`` loop (:class:`~.raw_flat.FlatRenderer`).

``A...`` are the kernel's arguments in signature order, a params record as its leaves
(:mod:`.params`): pointers as 1-D arrays of their element type, scalars as NumPy
scalars. A ``k_block`` of more than 30 parameters takes them as one tuple
(:func:`~.render.call`), so a kernel may have any number of arguments. Geometry:
``local_id(d)`` is ``_tx/_ty/_tz``, ``block_id(d)`` ``_b0/_b1/_b2``, ``block_dim``/
``grid_dim`` the launch's, ``global_id(d)`` = ``block_id(d) * block_dim(d) +
local_id(d)``, all ``int64``. A declared block shape
becomes constants (the launch is checked against it). Loads and stores index the
arrays directly (2-D shared arrays are flat, row-major); atomics (and ``threadfence()``,
a ``seq_cst`` fence) call the hardware operations of :mod:`.atomics`, so blocks running
on different cores update global memory correctly. A thread's ``return`` ends its
iteration of the thread loop (``continue``; through a flag out of its own loops), and
when later phases exist
sets its ``_done[_t]`` flag, which every phase checks first. A uniform thread variable
read by block control (``Plan.uniform``) is saved as ``_e_<name>`` before
a phase that mentions it and restored at the start of each of its threads.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from gompute_core.errors import Unsupported
from gompute_core.ir import nodes as ir
from gompute_core.ir.kernel import KernelIR
from gompute_core.ir.uniformity import is_varying
from gompute_core.ir.walk import assigned_in, holds, names_in, nodes_in
from gompute_core.types import ScalarType
from gompute_core.workgroup import (
    BlockIf,
    BlockLoop,
    Item,
    Lockstep,
    Node,
    Outer,
    Phase,
    Plan,
    accumulates,
    moved,
    plan,
    tiles,
)

from .params import is_aggregate
from .ranges import Ranges
from .render import FunctionRenderer, arg_names, call, define, tname, var, zero

_AXES = "xyz"
_GEOMETRY_NAMES = ("_GX", "_GY", "_GZ", "_BX", "_BY", "_BZ")
_ROUND = 8
"""Iterations of its loop a thread runs per visit in a lockstep round: enough to spread
the cost of loading and storing its carried values and flag, few enough that a round
still reads the threads' neighbouring elements together. Measured on the block sum's
grid-stride loops (grid 64 and 1024, 2**24 f32) against a hand-written numba sum, 1 / 2
threads: 1 per visit 1.4x; 2: 1.3-1.4x / 1.1-1.5x; 4: 1.0-1.1x / 1.0-1.3x; 8: 0.9-1.1x /
0.95-1.1x; 16: 1.7-1.8x threaded."""


class RawRenderer(FunctionRenderer):
    """Renders a raw kernel's entry function as ``k_block`` (see the module docstring)."""

    def __init__(self, kir: KernelIR, helpers: set[tuple[str, ScalarType]]) -> None:
        fn = kir.functions[-1]
        super().__init__(fn, helpers)
        self.kir = kir
        self.plan: Plan = plan(fn, kir.name)
        self.moved = moved(self.plan)
        self.ranges = Ranges(self.plan.remat, kir.block)
        """Phases run with their uniform loops outside the thread loops
        (:func:`~gompute_core.workgroup.moved`)."""
        self.atomics: set[str] = set()
        self.in_thread = False
        self.loop_depth = 0
        self.flat = False
        """True while rendering ``k_flat``: the thread is ``_gx`` of a 1-D launch."""
        self.shared = [(name, t) for name, t in fn.locals if isinstance(t, ir.SharedType)]
        self.local_arrays: list[tuple[str, ir.LocalType]] = [
            (name, t) for name, t in fn.locals if isinstance(t, ir.LocalType)]
        """The body's local arrays: in ``k_block`` one slot per thread of a ``(*shape,
        _nt)`` array, threads fastest, so that a loop over the threads reads consecutive
        elements (zeroed when the block starts; a helper gets the thread's slot, a strided
        view), in ``k_flat`` one array per thread."""
        self.lowered = list(dict.fromkeys(local for p in self.plan.phases
                                          if p.lockstep is not None
                                          for local in p.lockstep.locals))
        """The variables of ``for`` loops lowered to ``while`` loops for lockstep (two
        phases may lower loops over the same variable to the same names and types)."""
        self.regs: dict[tuple[str, tuple[int, ...]], str] = {}
        """The local-array elements the leaf being rendered keeps in scalars
        (:func:`~gompute_core.workgroup.registers.tiles`)."""
        self.types_by_name = dict([*fn.args, *fn.locals, *self.lowered])
        self.types.update(self.lowered)

    # storage -----------------------------------------------------------------------------

    def name_of(self, name: str) -> str:
        if name in self.plan.arrays:
            return f"{var(name)}[_t]"
        if name in self.plan.local_arrays and not self.flat:  # passed to a helper
            rank = len(dict(self.local_arrays)[name].shape)
            return f"{var(name)}[{':, ' * rank}{self.thread_row()}]"
        return var(name)

    def thread_row(self) -> str:
        """The index of the running thread's slot: ``_t``; in block control (a condition
        of a loop or ``if`` holding a barrier, which the frontend allows only when every
        thread computes the same value) thread 0's."""
        return "_t" if self.in_thread else "0"

    def scratch(self) -> list[tuple[str, str]]:
        """(name, allocation) of every array a block uses: shared arrays, per-thread slots
        and the done flags."""
        out = [(var(n), f"np.empty({t.size}, {tname(t.elem)})") for n, t in self.shared]
        out += [(var(n), f"np.empty(({', '.join(map(str, t.shape))}, _nt), {tname(t.elem)})")
                for n, t in self.local_arrays]
        for name, t in self.fn.locals:
            if name in self.plan.arrays:
                out.append((var(name), f"np.empty(_nt, {tname(t)})"))  # type: ignore[arg-type]
        if self.plan.done_flags:
            out.append(("_done", "np.zeros(_nt, np.bool_)"))
        locksteps = [p.lockstep for p in self.plan.phases if p.lockstep is not None]
        carried = set().union(*(ls.carried for ls in locksteps))
        for name, t in self.types_by_name.items():
            if name in carried:
                out.append((f"_ls_{name}", f"np.empty(_nt, {tname(t)})"))  # type: ignore[arg-type]
        if locksteps:
            out.append(("_act", "np.zeros(_nt, np.bool_)"))
        return out

    # expressions -------------------------------------------------------------------------

    def local_element(self, base: ir.Var, index: tuple[ir.Expr, ...]) -> str:
        """The element ``base[index]`` of a local array: in ``k_flat`` the thread's own
        array, in ``k_block`` the thread's slot of the block's array."""
        parts = [self.expr(i) for i in index]
        if self.flat:
            return f"{var(base.name)}[{', '.join(parts)}]"
        return f"{var(base.name)}[{', '.join([*parts, self.thread_row()])}]"

    def register(self, base: ir.Var, index: tuple[ir.Expr, ...]) -> str | None:
        """The scalar holding ``base[index]`` in the leaf being rendered, if any."""
        if not self.regs or not all(isinstance(i, ir.Const) for i in index):
            return None
        return self.regs.get((base.name, tuple(i.value for i in index)))  # type: ignore[misc,union-attr]

    def visit_LocalLoad(self, e: ir.LocalLoad) -> str:
        return self.register(e.base, e.index) or self.local_element(e.base, e.index)

    def visit_LocalStore(self, s: ir.LocalStore, depth: int) -> None:
        target = self.register(s.base, s.index) or self.local_element(s.base, s.index)
        self.emit(depth, f"{target} = {self.expr(s.value)}")

    def slot(self, name: str, index: tuple[int, ...]) -> str:
        """The running thread's element ``index`` of local array ``name`` through its flat
        view ``_f_<name>`` (constant offsets from ``_t`` when the block is declared)."""
        shape = dict(self.local_arrays)[name].shape
        flat = int(np.ravel_multi_index(index, shape))
        return f"_f_{name}[{flat} * (_BX * _BY * _BZ) + _t]"

    def visit_Geometry(self, e: ir.Geometry) -> str:
        axis = _AXES[e.dim]
        if self.flat and e.func in ("local_id", "global_id", "block_id"):
            if e.dim:
                return "np.int64(0)"
            return {"global_id": "_gx", "local_id": "(_gx % _BX)",
                    "block_id": "(_gx // _BX)"}[e.func]
        if e.func == "local_id":
            return f"_t{axis}"
        if e.func == "global_id":
            return f"(_g{e.dim} + _t{axis})"
        if e.func == "block_id":
            return f"_b{e.dim}"
        return f"_{'B' if e.func == 'block_dim' else 'G'}{axis.upper()}"

    def element(self, base: ir.Var, index: tuple[ir.Expr, ...]) -> tuple[str, str]:
        """(array, flat index) of ``base[index...]`` (2-D shared arrays are row-major)."""
        t = base.type
        if isinstance(t, ir.SharedType) and len(index) == 2:
            row = f"{self.expr(index[0])} * {t.shape[1]}"
            col = index[1]
            if not isinstance(col, (ir.Var, ir.Const)) and self.ranges.of(col) is not None:
                return var(base.name), self.ranges.sum(col, self.expr, row)
            flat = f"{row} + {self.expr(col)}"
        else:
            flat = self.expr(index[0])
        return var(base.name), flat

    def visit_Cast(self, e: ir.Cast) -> str:
        """An integer widened to ``int64`` (an index) whose range is known: computed in
        ``int64`` without wraparound casts (:mod:`.ranges`)."""
        if e.type is np.int64 and not isinstance(e.value, (ir.Var, ir.Const)) and \
                self.ranges.of(e.value) is not None:
            return self.ranges.wide(e.value, self.expr)
        return super().visit_Cast(e)

    def subscript(self, base: ir.Var, index: tuple[ir.Expr, ...]) -> str:
        """``base[index...]`` for a load or store. A 1-D index whose range is known not to
        be negative (:mod:`.ranges`: ``global_id(0)`` and what is computed from it) is
        cast to ``uint64``: numba then drops its negative-index wraparound, which LLVM
        cannot fold when the index comes from a parallel loop's counter (Black-Scholes as a
        flat kernel gathered its inputs: 1.25x numba's time). Same element: the value is
        not negative."""
        array, flat = self.element(base, index)
        if len(index) == 1:
            r = self.ranges.of(index[0])
            if r is not None and r[0] >= 0:
                flat = f"np.uint64({flat})"
        return f"{array}[{flat}]"

    def visit_Load(self, e: ir.Load) -> str:
        return self.subscript(e.base, e.index)

    def visit_Atomic(self, e: ir.Atomic) -> str:
        self.atomics.add(e.op)
        array, index = self.element(e.base, e.index)
        values = [self.expr(e.value)] if e.compare is None else \
            [self.expr(e.compare), self.expr(e.value)]
        return f"_atomic_{e.op}({array}, {index}, {', '.join(values)})"

    # statements --------------------------------------------------------------------------

    def visit_Store(self, s: ir.Store, depth: int) -> None:
        self.emit(depth, f"{self.subscript(s.base, s.index)} = {self.expr(s.value)}")

    def visit_Evaluate(self, s: ir.Evaluate, depth: int) -> None:
        self.emit(depth, self.expr(s.value))

    def visit_Fence(self, s: ir.Fence, depth: int) -> None:
        self.atomics.add("fence")
        self.emit(depth, "_atomic_fence()")

    def _unsupported_jump(self, what: str) -> Unsupported:
        return Unsupported(f"raw kernel {self.kir.name!r} ({self.fn.source}): {what} under "
                           "thread-dependent control leaves a loop that holds a barrier; "
                           "the CPU backend (like a GPU) cannot run it")

    def visit_Return(self, s: ir.Return, depth: int) -> None:
        if not self.in_thread:
            self.emit(depth, "return")
            return
        if self.plan.done_flags:
            self.emit(depth, "_done[_t] = True")
        if self.loop_depth:
            self.emit(depth, "_ret = True")
            self.emit(depth, "break")
        else:
            self.emit(depth, "continue")

    def visit_Break(self, s: ir.Break, depth: int) -> None:
        if self.in_thread and not self.loop_depth:
            raise self._unsupported_jump("a break")
        self.emit(depth, "break")

    def visit_Continue(self, s: ir.Continue, depth: int) -> None:
        if self.in_thread and not self.loop_depth:
            raise self._unsupported_jump("a continue")
        self.emit(depth, "continue")

    def _thread_loop(self, s: ir.While | ir.ForRange, depth: int) -> None:
        self.loop_depth += 1
        if isinstance(s, ir.While):
            super().visit_While(s, depth)
        else:
            self.ranged_body(s, s.body, self.for_header(s, depth))
        self.loop_depth -= 1
        if holds(s.body, ir.Return):
            self.emit(depth, "if _ret:")
            self.emit(depth + 1, "break" if self.loop_depth else "continue")

    def visit_While(self, s: ir.While, depth: int) -> None:
        self._thread_loop(s, depth)

    def visit_ForRange(self, s: ir.ForRange, depth: int) -> None:
        self._thread_loop(s, depth)

    # phases and block statements ---------------------------------------------------------

    def thread_loops(self, depth: int, flat: bool, x_range: str = "", bx: str = "_BX") -> int:
        """Emit the loops over the block's threads (x fastest; ``x_range`` narrows x;
        ``bx`` is the block's x size); the body's depth."""
        block = self.kir.block
        for axis in reversed(_AXES):
            size = bx if axis == "x" else f"_B{axis.upper()}"
            if block is not None and block[_AXES.index(axis)] == 1:
                continue
            span = x_range if axis == "x" and x_range else size
            self.emit(depth, f"for _t{axis} in range({span}):")
            depth += 1
        if flat:
            self.emit(depth, f"_t = (_tz * _BY + _ty) * {bx} + _tx")
        return depth

    def _local_x(self, e: ir.Expr) -> bool:
        """True for ``local_id(0)`` or a variable rematerialized from it."""
        if isinstance(e, ir.Var):
            e = self.plan.remat.get(e.name, e)
        return isinstance(e, ir.Geometry) and e.func == "local_id" and e.dim == 0

    def narrowed(self, p: Phase, depth: int) -> tuple[str, tuple[ir.Stmt, ...]]:
        """A phase that is one ``if local_id(0) < u`` (or ``== u``), ``u`` uniform, as the
        range of x its threads take (emitted before the loops) and the if's body; else
        ``("", statements)``. The threads the condition excludes do nothing, so they are
        not visited: the halving steps of a tree reduction touch only the live half."""
        whole = ("", p.stmts)
        if len(p.stmts) != 1 or (self.kir.block is not None and self.kir.block[0] == 1):
            return whole
        s = p.stmts[0]
        if not (isinstance(s, ir.If) and not s.orelse and isinstance(s.cond, ir.Compare)
                and s.cond.op in ("lt", "eq") and self._local_x(s.cond.lhs)):
            return whole
        bound = s.cond.rhs
        if is_varying(bound, self.plan.thread_vars) or holds(bound, ir.Load, ir.Atomic):
            return whole
        self._tmp += 1
        u = f"_u{self._tmp}"
        self.emit(depth, f"{u} = np.int64({self.expr(bound)})")
        if s.cond.op == "lt":
            return f"min({u}, _BX)", s.body
        return f"max({u}, 0), min({u} + 1, _BX)", s.body

    def save_uniform(self, p: Phase, depth: int) -> None:
        """Before the passes over ``p``: the entry values of the uniform thread variables
        it mentions (``Plan.uniform``), which each thread starts from."""
        for name in sorted(self.plan.uses[p.index] & self.plan.uniform):
            self.emit(depth, f"_e_{name} = {var(name)}")

    def thread_start(self, p: Phase, recomputed: list[str], depth: int) -> None:
        """A thread's first lines in a pass over ``p``: skip it when done, start from the
        entry values of uniform thread variables, recompute the rematerialized values
        ``recomputed`` (thread code from here on)."""
        if self.plan.done_flags:
            self.emit(depth, "if _done[_t]:")
            self.emit(depth + 1, "continue")
        for name in sorted(self.plan.uses[p.index] & self.plan.uniform):
            self.emit(depth, f"{var(name)} = _e_{name}")
        self.in_thread = True
        for name in recomputed:
            self.emit(depth, f"{self.name_of(name)} = {self.expr(self.plan.remat[name])}")

    def statements(self, stmts: tuple[ir.Stmt, ...], depth: int) -> None:
        """Render ``stmts`` (nothing when empty)."""
        for s in stmts:
            self.visit(s, depth)

    def lockstep(self, p: Phase, ls: Lockstep, depth: int) -> None:
        """A phase with its loop in lockstep: the first pass, then the rounds. ``_act`` is
        all False outside a lockstep phase (zeros when allocated; the first pass sets only
        the threads whose loop goes on, the rounds clear each as its loop ends), so the
        first pass never writes it for the others."""
        cond = self.expr(ls.loop.cond)
        self.save_uniform(p, depth)
        self.emit(depth, "_live = np.int64(0)")
        inner = self.thread_loops(depth, True)
        self.thread_start(p, self.plan.preamble(p), inner)
        self.statements(ls.prefix, inner)
        self.emit(inner, f"if {cond}:")
        self.block(ls.loop.body, inner + 1)
        self.emit(inner + 1, f"if {cond}:")
        self.emit(inner + 2, "_act[_t] = True")
        self.emit(inner + 2, "_live += np.int64(1)")
        for name in ls.carried:
            self.emit(inner + 2, f"_ls_{name}[_t] = {var(name)}")
        self.emit(inner + 2, "continue")
        self.statements(ls.suffix, inner)
        self.in_thread = False
        self.emit(depth, "while _live:")
        self.emit(depth + 1, "_live = np.int64(0)")
        inner = self.thread_loops(depth + 1, True)
        self.emit(inner, "if _act[_t]:")
        self.thread_start(p, self.plan.recomputed(names_in((ls.loop, ls.suffix))), inner + 1)
        for name in ls.carried:
            self.emit(inner + 1, f"{var(name)} = _ls_{name}[_t]")
        self.emit(inner + 1, "_more = np.int64(1)")
        self.emit(inner + 1, f"for _round in range({_ROUND}):")
        self.block(ls.loop.body, inner + 2)
        self.emit(inner + 2, f"if not {cond}:")
        self.emit(inner + 3, "_more = np.int64(0)")
        self.emit(inner + 3, "break")
        self.emit(inner + 1, "if _more:")
        self.emit(inner + 2, "_live += np.int64(1)")
        for name in ls.carried:
            self.emit(inner + 2, f"_ls_{name}[_t] = {var(name)}")
        self.emit(inner + 1, "else:")
        self.emit(inner + 2, "_act[_t] = False")
        self.statements(ls.suffix, inner + 2)
        self.in_thread = False

    def thread_body(self, p: Phase, stmts: tuple[ir.Stmt, ...], depth: int) -> None:
        """A thread's run of ``stmts`` of phase ``p`` (inside the loop over threads)."""
        if any(isinstance(s, (ir.While, ir.ForRange)) and holds(s.body, ir.Return)
               for s in nodes_in(stmts)):
            self.emit(depth, "_ret = False")
        self.thread_start(p, self.plan.preamble(p), depth)
        self.block(stmts, depth)
        self.in_thread = False

    def ranged_body(self, s: ir.ForRange, body: tuple[ir.Stmt, ...] | tuple[Node, ...],
                    depth: int, p: Phase | None = None) -> None:
        """The body of ``s`` (statements, or a moved phase's nodes of phase ``p``) with its
        variable's range known (:mod:`.ranges`)."""
        known = self.ranges.enter(s, assigned_in(s.body))
        if p is None:
            self.block(body, depth)  # type: ignore[arg-type]
        else:
            self.moved_phase(p, body, depth)  # type: ignore[arg-type]
        if known:
            self.ranges.leave(s)

    def moved_phase(self, p: Phase, nodes: tuple[Node, ...], depth: int) -> None:
        """A phase with its uniform loops and ifs outside the thread loops: each leaf a
        loop over the threads (one flat loop when it reads no thread index). The x loop
        runs to ``_NX``, the launch's block size: to LLVM an unknown trip count, so it
        vectorizes that loop (contiguous across x) instead of unrolling it fully and
        vectorizing the y loop with scatters (the SGEMM port's ``rA`` loads: 8x slower).
        A leaf's local-array elements of constant index live in scalars while a thread runs
        it (``workgroup.registers``: loaded from the slots ``_f_<name>[i * threads + _t]`` first,
        stored back last); a leaf that accumulates into them loops x to ``_BX`` (a constant
        where the block is declared: the SGEMM port's step 2x faster than to ``_NX``)."""
        for node in nodes:
            if isinstance(node, Outer):
                if isinstance(node.stmt, ir.ForRange):
                    self.ranged_body(node.stmt, node.body, self.for_header(node.stmt, depth), p)
                    continue
                self.emit(depth, f"if {self.expr(node.stmt.cond)}:")
                self.moved_phase(p, node.body, depth + 1)
                if node.orelse:
                    self.emit(depth, "else:")
                    self.moved_phase(p, node.orelse, depth + 1)
                continue
            recomputed = self.plan.recomputed(names_in(node.stmts) - assigned_in(node.stmts))
            regs, stored = tiles(node.stmts, self.plan.local_arrays)
            if any(isinstance(e, ir.Geometry) and e.func in ("local_id", "global_id")
                   for e in nodes_in((node.stmts, *(self.plan.remat[n] for n in recomputed)))):
                inner = self.thread_loops(depth, True, bx="_BX" if accumulates(
                    node.stmts, stored) else "_NX")
            else:
                self.emit(depth, "for _t in range(_BX * _BY * _BZ):")
                inner = depth + 1
            self.thread_start(p, recomputed, inner)
            for (name, index), reg in regs.items():
                self.emit(inner, f"{reg} = {self.slot(name, index)}")
            self.regs = regs
            self.block(node.stmts, inner)
            self.regs = {}
            for name, index in sorted(stored):
                self.emit(inner, f"{self.slot(name, index)} = {regs[name, index]}")
            self.in_thread = False

    def phase(self, p: Phase, depth: int) -> None:
        """One phase: a loop over the threads running its statements."""
        if p.index in self.moved:
            self.moved_phase(p, self.moved[p.index], depth)
            return
        if p.lockstep is not None:
            self.lockstep(p, p.lockstep, depth)
            return
        uses = self.plan.uses[p.index]
        flat = self.plan.done_flags or bool(uses & (self.plan.arrays | self.plan.local_arrays))
        self.save_uniform(p, depth)
        x_range, stmts = self.narrowed(p, depth)
        self.thread_body(p, stmts, self.thread_loops(depth, flat, x_range))

    def items(self, items: list[Item], depth: int) -> None:
        """Render block-level items (``pass`` when none emits a line)."""
        start = len(self.lines)
        for item in items:
            if isinstance(item, Phase):
                self.phase(item, depth)
            elif isinstance(item, BlockIf):
                self.emit(depth, f"if {self.expr(item.stmt.cond)}:")
                self.items(item.body, depth + 1)
                if item.orelse:
                    self.emit(depth, "else:")
                    self.items(item.orelse, depth + 1)
            elif isinstance(item, BlockLoop):
                if isinstance(item.stmt, ir.While):
                    self.emit(depth, f"while {self.expr(item.stmt.cond)}:")
                    self.items(item.body, depth + 1)
                else:
                    self.items(item.body, self.for_header(item.stmt, depth))
            elif not isinstance(item, ir.Barrier):  # a barrier only ends a phase
                self.visit(item, depth)
        if len(self.lines) == start:
            self.emit(depth, "pass")

    def launch_shape(self, geometry: list[str]) -> None:
        """The declared block shape as constants, and the sign bit cleared from the
        (never negative) ``geometry`` values and the block shape given at launch: LLVM
        then proves that indices built from them are not negative, so numba's
        negative-index wraparound folds away and phases vectorize (4x on the block sum
        with one element per thread)."""
        block = self.kir.block
        if block is not None:
            for axis, size in zip(_AXES, block, strict=True):
                self.emit(1, f"_B{axis.upper()} = np.int64({size})")
        else:
            geometry = [*geometry, "_BX", "_BY", "_BZ"]
        for name in geometry:
            self.emit(1, f"{name} = {name} & _NONNEGATIVE")

    def scalar_locals(self, names: Iterable[str], depth: int) -> None:
        """Start the scalar locals among ``names`` from zero (numba types a variable from
        its first assignment, on every path)."""
        for name in names:
            t = self.types_by_name[name]
            if not isinstance(t, (ir.SharedType, ir.LocalType)) and name not in self.plan.arrays:
                if is_aggregate(t):
                    raise Unsupported(f"{self.fn.source}: a params-record local in a raw kernel")
                self.emit(depth, f"{var(name)} = {zero(t)}")

    def render_block(self) -> str:
        """The ``k_block`` function."""
        fn, block = self.fn, self.kir.block
        scratch = [name for name, _ in self.scratch()]
        self.emit(0, "_NONNEGATIVE = np.int64(0x7FFFFFFFFFFFFFFF)\n\n")
        self.emit(0, "@njit(inline=\"always\", **_OPT)")
        self.lines.extend(define("k_block", ["_b0", "_b1", "_b2", *_GEOMETRY_NAMES,
                                             *scratch, *arg_names(fn)]))
        if self.moved:
            self.emit(1, "_NX = _BX & _NONNEGATIVE")
        self.launch_shape(["_b0", "_b1", "_b2", "_GX", "_GY", "_GZ"])
        for d, axis in enumerate(_AXES):
            self.emit(1, f"_g{d} = _b{d} * _B{axis.upper()}")
            if block is not None and block[d] == 1:
                self.emit(1, f"_t{axis} = np.int64(0)")
        if self.plan.done_flags:
            self.emit(1, "_done[:] = False")
        for name, _ in self.local_arrays:  # every thread's array starts zeroed
            self.emit(1, f"{var(name)}[:] = 0")
            if self.moved:  # flat, for the leaves' register tiles
                self.emit(1, f"_f_{name} = {var(name)}.reshape({var(name)}.size)")
        if any(holds(p.stmts, ir.Return) for p in self.plan.phases):
            self.emit(1, "_ret = False")
        self.scalar_locals([name for name, _ in [*fn.locals, *self.lowered]], 1)
        self.items(self.plan.items, 1)
        return "\n".join(self.lines) + "\n"

    def render_entries(self) -> str:
        """``k_serial`` and ``k_parallel``: the blocks in chunks, scratch arrays per chunk."""
        geometry = ", ".join(_GEOMETRY_NAMES)
        args = ", ".join(arg_names(self.fn))
        scratch = self.scratch()
        allocs = "".join(f"        {name} = {alloc}\n" for name, alloc in scratch)
        block = call("k_block", ["_b0", "_b1", "_b2", *_GEOMETRY_NAMES,
                                 *(n for n, _ in scratch), *arg_names(self.fn)])
        out = []
        for name, opts, loop in (("k_serial", "_OPT", "range"),
                                 ("k_parallel", "_PAR", "prange")):
            out.append(
                f"@njit(**{opts})\ndef {name}({geometry}, _first, _last, _chunks"
                f"{', ' if args else ''}{args}):\n"
                f"    _nb = _last - _first\n    _nt = _BX * _BY * _BZ\n"
                f"    for _c in {loop}(_chunks):\n{allocs}"
                f"        _lo = _first + _c * _nb // _chunks\n"
                f"        _b0 = _lo % _GX\n"
                f"        _b1 = (_lo // _GX) % _GY\n"
                f"        _b2 = _lo // (_GX * _GY)\n"
                f"        for _b in range(_lo, _first + (_c + 1) * _nb // _chunks):\n"
                f"            {block}\n"
                f"            _b0 += 1\n"
                f"            if _b0 == _GX:\n"
                f"                _b0 = np.int64(0)\n"
                f"                _b1 += 1\n"
                f"                if _b1 == _GY:\n"
                f"                    _b1 = np.int64(0)\n"
                f"                    _b2 += 1\n")
        return "\n\n".join(out)

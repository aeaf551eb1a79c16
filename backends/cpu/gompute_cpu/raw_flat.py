"""The CPU module of a raw kernel: ``k_block`` and its entry points (:mod:`.raw`), and for a
kernel whose threads never meet, ``k_flat`` (:class:`FlatRenderer`)."""

from __future__ import annotations

from gompute_core.ir import nodes as ir
from gompute_core.ir.kernel import KernelIR
from gompute_core.ir.uniformity import is_varying
from gompute_core.ir.walk import holds
from gompute_core.types import ScalarType
from gompute_core.workgroup import Phase

from .kernels import assemble
from .raw import _GEOMETRY_NAMES, RawRenderer
from .render import FunctionRenderer, arg_names, tname, var


class FlatRenderer(RawRenderer):
    """Renders ``k_flat``: the threads of a 1-D launch as one ``prange`` loop."""

    def _global_x(self, e: ir.Expr) -> bool:
        """True for ``global_id(0)`` or a variable rematerialized from it."""
        if isinstance(e, ir.Var):
            e = self.plan.remat.get(e.name, e)
        return isinstance(e, ir.Geometry) and e.func == "global_id" and e.dim == 0

    def _guard_bound(self, cond: ir.Expr) -> str | None:
        """For ``global_id(0) < u`` (``u`` uniform, read from neither memory nor a call),
        also in its ``i64 < u64`` form ``g < 0 or u64(g) < u``, the end of the threads of
        the slice ``_first`` to ``_last - 1`` that pass it; else None."""
        if isinstance(cond, ir.Logical) and cond.op == "or" and isinstance(
                cond.lhs, ir.Compare) and cond.lhs.op == "lt" and self._global_x(
                cond.lhs.lhs) and isinstance(cond.rhs, ir.Compare) and cond.rhs.op == "lt" \
                and isinstance(cond.rhs.lhs, ir.Cast) and self._global_x(cond.rhs.lhs.value):
            unsigned = True  # global_id(0) is never negative: the first test is false
            bound = cond.rhs.rhs
        elif isinstance(cond, ir.Compare) and cond.op == "lt" and self._global_x(cond.lhs):
            unsigned = False
            bound = cond.rhs
        else:
            return None
        if is_varying(bound, self.plan.thread_vars) or holds(bound, ir.Load, ir.Atomic,
                                                             ir.CallFunction):
            return None
        if unsigned:
            stop = f"np.int64(min(np.uint64(_last), np.uint64({self.expr(bound)})))"
        else:
            stop = f"min(_last, np.int64({self.expr(bound)}))"
        return f"max(_first, {stop})"

    def flat_guarded(self, p: Phase) -> tuple[str, tuple[ir.Stmt, ...]]:
        """Where the threads of a flat phase that do anything end, and what they run: a
        phase that is assignments that read nothing but the launch and locals, then one
        ``if global_id(0) < u`` without ``else`` (:meth:`_guard_bound`), takes only the
        threads that pass it and runs the ``if``'s body unconditionally: the others only
        assign their own locals, which nothing reads. That keeps the loop free of a
        branch around its whole body (with the branch, Black-Scholes took 1.13-1.15x
        numba's CPU time, without it 1.01-1.02x, 2**20 options). Else the slice's end
        and ``p``'s statements."""
        whole = "_last", p.stmts
        *head, last = p.stmts
        if not (isinstance(last, ir.If) and not last.orelse) or not all(
                isinstance(s, ir.Assign) and not holds(s.value, ir.Load, ir.Atomic,
                                                       ir.CallFunction) for s in head):
            return whole
        bound = self._guard_bound(last.cond)
        return whole if bound is None else (bound, (*head, *last.body))

    def render_flat(self, p: Phase) -> str:
        """``k_flat``: a kernel whose threads never meet (``Plan.flat``) as
        one parallel loop over the threads ``_first`` to ``_last - 1`` of a 1-D launch
        (``_gx`` is ``global_id(0)``; a launch may come in slices). Its block statements
        run once per slice, before the loop; each thread starts its locals afresh (numba
        then keeps them private to the loop's iterations)."""
        self.flat = True
        locals_ = [name for name, _ in [*self.fn.locals, *self.lowered]]
        thread = [name for name in locals_ if name in self.plan.thread_vars]
        self.emit(0, "@njit(**_PAR)")
        names = [*_GEOMETRY_NAMES, "_first", "_last", *arg_names(self.fn)]
        self.emit(0, f"def k_flat({', '.join(names)}):")
        self.launch_shape(["_GX", "_GY", "_GZ", "_first"])
        self.scalar_locals([name for name in locals_ if name not in thread], 1)
        for item in self.plan.items[:-1]:
            self.visit(item, 1)
        stop, stmts = self.flat_guarded(p)
        self.emit(1, f"for _gx in prange(_first, {stop}):")
        self.scalar_locals(thread, 2)
        for name, t in self.local_arrays:  # zeroed, as the oracle's numpy.zeros
            self.emit(2, f"{var(name)} = np.zeros({t.shape}, {tname(t.elem)})")
        self.thread_body(p, stmts, 2)
        return "\n".join(self.lines) + "\n"


def render_raw_module(kir: KernelIR) -> str:
    """The complete Python module of the raw kernel ``kir`` (``Unsupported`` for f16 or a
    construct the CPU cannot run, naming the kernel)."""
    helpers: set[tuple[str, ScalarType]] = set()
    sources = [FunctionRenderer(fn, helpers).render("_FN") for fn in kir.functions[:-1]]
    renderer = RawRenderer(kir, helpers)
    parts = [renderer.render_block(), renderer.render_entries()]
    atomics = renderer.atomics
    flat = renderer.plan.flat()
    if flat is not None:
        flat_renderer = FlatRenderer(kir, helpers)
        parts.append(flat_renderer.render_flat(flat))
        atomics |= flat_renderer.atomics
    imports = [f"from gompute_cpu.atomics import atomic_{op} as _atomic_{op}"
               for op in sorted(atomics)]
    return assemble(kir, helpers, [*(["\n".join(imports)] if imports else []), *sources,
                                   *parts])

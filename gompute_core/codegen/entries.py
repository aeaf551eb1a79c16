"""Params struct declarations and the entry point of every kind.

An element loop (:class:`~gompute_core.ir.entry.ElementLoop`: map, map_indexed, map_to,
zip; rendered from its structure, never from the kind's name) uses 16-byte vector
accesses when every pointer is 16-byte aligned, several vectors in flight per thread
(``UNROLL``), a grid-stride loop over a grid the host sizes to the device, and a scalar
tail. A block reduce (:class:`~gompute_core.ir.entry.BlockReduce`: reduce) folds
``pre``-mapped elements with the same vector
loads into one accumulator per lane, then a shared-memory tree per block and
one partial per block; custom (possibly non-commutative) combines keep element
order: contiguous chunks per block and thread, and a neighbour-pairing tree.
An indexed move (:class:`~gompute_core.ir.entry.IndexedMove`: gather, scatter) is a
scalar grid-stride loop that skips indices outside ``[0, bound)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..abi.entry_args import has_params
from ..errors import Unsupported
from ..ir import nodes as ir
from ..ir.entry import BlockReduce, ElementLoop, IndexedMove
from ..ir.kernel import KernelIR
from ..types import is_signed
from .cexpr import fn_name
from .ctypes_ import mem_type, reg_type, size_of, struct_cname

if TYPE_CHECKING:
    from .renderer import CRenderer

UNROLL = 4
"""Vectors each thread of an elementwise or reduce entry loads before computing (memory-level
parallelism); the kinds' grid rule counts with it."""

def _field_decl(t: ir.IRType, name: str) -> str:
    if isinstance(t, ir.ArrayType):
        dims = ""
        while isinstance(t, ir.ArrayType):
            dims += f"[{t.length}]"
            t = t.elem
        base = struct_cname(t) if isinstance(t, ir.StructType) else mem_type(t)
        return f"{base} {name}{dims}"
    if isinstance(t, ir.StructType):
        return f"{struct_cname(t)} {name}"
    return f"{mem_type(t)} {name}"


def _nested_structs(t: ir.IRType, out: list[ir.StructType]) -> None:
    while isinstance(t, ir.ArrayType):
        t = t.elem
    if isinstance(t, ir.StructType):
        for f in t.layout.fields:  # type: ignore[attr-defined]
            _nested_structs(f.type, out)
        if all(s.layout.name != t.layout.name for s in out):  # type: ignore[attr-defined]
            out.append(t)


def params_decls(params: ir.StructType, r: CRenderer) -> str:
    """C declarations of ``params`` and every struct nested in it, innermost first,
    each followed by compile-time assertions (:meth:`CRenderer.static_assert`) on every
    field offset, the size and alignment. An empty params struct (only the top level can
    be empty) gets no size/alignment assertions: it never crosses (the entry takes no
    params argument, see :func:`has_params`), and C/C++ give an empty struct a size of 0
    or 1. Members and type references are spelt by the dialect ``r``."""
    structs: list[ir.StructType] = []
    _nested_structs(params, structs)
    out = ""
    for st in structs:
        lay = st.layout
        name = struct_cname(st)
        members = "".join(f"  {_field_decl(f.type, r.member(f.name))};\n"
                          for f in lay.fields)  # type: ignore[attr-defined]
        out += r.aggregate("struct", name, "\n" + members) + "\n"
        for f in lay.fields:  # type: ignore[attr-defined]
            m = r.member(f.name)
            off = r.offsetof.format(t=name, m=m)
            out += r.static_assert(f"{off} == {f.offset}",
                                   f"params ABI: {lay.name}.{f.name} offset",  # type: ignore[attr-defined]
                                   f"{name}_{m}_offset")
        if not lay.fields:  # type: ignore[attr-defined]
            continue
        out += r.static_assert(f"sizeof({name}) == {lay.size}",  # type: ignore[attr-defined]
                               f"params ABI: sizeof {lay.name}", f"{name}_size")  # type: ignore[attr-defined]
        out += r.static_assert(f"{r.alignof(name)} == {lay.align}",  # type: ignore[attr-defined]
                               f"params ABI: alignof {lay.name}", f"{name}_align")  # type: ignore[attr-defined]
    return out




class EntryWriter:
    """Writes the ``extern "C"`` entry point of one kernel."""

    def __init__(self, renderer: CRenderer, kir: KernelIR) -> None:
        self.r, self.k = renderer, kir
        self.w = renderer.writer
        self.bs = kir.block_size
        self.geometry = {name: spelling.format(d=0, axis="x")
                         for name, spelling in renderer.geometry.items()}
        """The dialect's launch geometry along x (an entry's one dimension)."""

    # ---- pieces ------------------------------------------------------------------
    def head(self, args: list[str]) -> str:
        """The entry's signature line, params last when present."""
        if has_params(self.k):
            args = [*args, f"{struct_cname(self.k.params)} p"]  # type: ignore[arg-type]
        bounds = self.r.launch_bounds.format(threads=self.bs, x=self.bs, y=1, z=1)
        return (f"{self.r.kernel_qualifier} {bounds}"
                f"{self.r.entry_symbol(self.k)}({', '.join(args)})")

    def ptr(self, t: ir.IRType, name: str, const: bool) -> str:
        """A restrict pointer parameter to storage of ``t``."""
        return (f"{self.r.pointer_space}{'const ' if const else ''}{mem_type(t)}* "
                f"{self.r.restrict}{name}")

    def call(self, fname: str, args: list[str]) -> str:
        """Call IR function ``fname``, appending ``p`` when it takes the params."""
        f = self.k.function(fname)
        if len(f.args) > len(args):
            args = [*args, "p" if has_params(self.k) else "gp_empty"]
        return f"{fn_name(fname)}({', '.join(args)})"

    def prologue(self) -> str:
        """Thread id, thread count and (for empty params) the empty params value."""
        g = self.geometry
        out = (f"  const gp_u64 gp_tid = (gp_u64){g['block_id']} * {g['block_dim']} + "
               f"{g['local_id']};\n"
               f"  const gp_u64 gp_nth = (gp_u64){g['grid_dim']} * {g['block_dim']};\n")
        if self.k.params is not None and not has_params(self.k):
            out += (f"  const {struct_cname(self.k.params)} gp_empty = "
                    f"{self.r.zero_initializer()};\n")
        return out

    # ---- element loop ----------------------------------------------------------------
    def element_loop(self, loop: ElementLoop) -> str:
        """``loop`` (map, map_indexed, map_to, zip and any kind built on it): the
        vector loop over the 16-byte-aligned prefix, then a scalar grid-stride tail."""
        arrays = loop.arrays()
        params = [self.ptr(arrays[name], name, not loop.writes(name)) if arg == "pointer"
                  else f"gp_u64 {name}" for name, arg in self.k.entry_args]
        ins = [(a.name, a.type) for a in loop.inputs]
        out = (loop.output.name, loop.output.type)

        def compute(get: dict[str, str], idx: str) -> str:
            args = [self.w.load(get[name], t) for name, t in ins]
            if loop.indexed:
                args.append(idx)
            return self.w.store(self.call(loop.function, args), out[1])

        n = loop.count
        src = self.head(params) + " {\n" + self.prologue() + "  gp_u64 gp_i = gp_tid;\n"
        if self.r.vector_loads != "scalar":
            src += self._element_vectors(n, ins, out, compute)
        get = {name: f"{name}[gp_i]" for name in arrays}
        src += (f"  for (; gp_i < {n}; gp_i += gp_nth) {out[0]}[gp_i] = {compute(get, 'gp_i')};\n"
                "}\n")
        return src

    def vector_union(self, name: str, vt: str, t: ir.IRType, lanes: int) -> str:
        """The union ``name`` viewing one vector ``vt`` as ``lanes`` elements of ``t``."""
        return self.r.aggregate("union", name, f" {vt} v; {mem_type(t)} e[{lanes}]; ")

    def vector_cast(self, vt: str, name: str, const: bool) -> str:
        """Pointer ``name`` cast to a pointer to vector type ``vt`` (same address space)."""
        return f"(({self.r.pointer_space}{'const ' if const else ''}{vt}*){name})"

    # The pieces of a vector loop, in the dialect's form (:attr:`CRenderer.vector_loads`):
    # ``r`` is an array of ``unroll`` vectors, each ``lanes`` elements of ``t``.
    def _vectors(self, r: str, t: ir.IRType, lanes: int, unroll: int, union: str) -> str:
        """The declaration of ``r`` (``union``: the union type's name)."""
        if self.r.vector_loads == "memcpy":
            return f"{mem_type(t)} {r}[{unroll}][{lanes}];"
        return f"{union} {r}[{unroll}];"

    def _lane(self, r: str) -> str:
        """Element ``l`` of vector ``u`` of ``r``."""
        return f"{r}[u][l]" if self.r.vector_loads == "memcpy" else f"{r}[u].e[l]"

    def _load_vector(self, r: str, ptr: str, t: ir.IRType, lanes: int) -> str:
        """Vector ``u`` of ``r`` loaded from vector ``gp_i + u * gp_nth`` of ``ptr``."""
        at, nbytes = "gp_i + u * gp_nth", lanes * size_of(t)
        if self.r.vector_loads == "memcpy":
            return f"memcpy({r}[u], {ptr} + ({at}) * {lanes}, {nbytes});"
        vt = self.r.vector_types[nbytes]
        return f"{r}[u].v = {self.vector_cast(vt, ptr, True)}[{at}];"

    def _store_vector(self, ptr: str, r: str, t: ir.IRType, lanes: int) -> str:
        """Vector ``u`` of ``r`` stored to vector ``gp_i + u * gp_nth`` of ``ptr``."""
        at, nbytes = "gp_i + u * gp_nth", lanes * size_of(t)
        if self.r.vector_loads == "memcpy":
            return f"memcpy({ptr} + ({at}) * {lanes}, {r}[u], {nbytes});"
        vt = self.r.vector_types[nbytes]
        return f"{self.vector_cast(vt, ptr, False)}[{at}] = {r}[u].v;"

    def _element_vectors(self, n: str, ins: list[tuple[str, ir.IRType]],
                         out: tuple[str, ir.IRType],
                         compute: Callable[[dict[str, str], str], str]) -> str:
        """The 16-byte vector loop over the aligned prefix of ``n`` elements (``gp_i``
        continues after it)."""
        arrays = dict([*ins, out])
        lanes = 16 // max(size_of(t) for t in arrays.values())
        aligned = " && ".join(f"(((gp_u64){a}) & 15) == 0" for a in arrays)
        src = f"  if ({aligned}) {{\n    const gp_u64 gp_nv = {n} / {lanes};\n"
        if self.r.vector_loads == "union":
            for n, t in arrays.items():
                vt = self.r.vector_types[lanes * size_of(t)]
                src += f"    {self.vector_union(f'gp_V_{n}', vt, t, lanes)}\n"
        for unroll in (UNROLL, 1):
            cond = f"gp_i + {unroll - 1} * gp_nth < gp_nv" if unroll > 1 else "gp_i < gp_nv"
            src += f"    for (; {cond}; gp_i += {unroll} * gp_nth) {{\n"
            for a, t in ins:
                src += (f"      {self._vectors(f'r_{a}', t, lanes, unroll, f'gp_V_{a}')}\n"
                        f"      {self.r.unroll_pragma}\n"
                        f"      for (int u = 0; u < {unroll}; ++u) "
                        f"{self._load_vector(f'r_{a}', a, t, lanes)}\n")
            on, ot = out
            if on not in dict(ins):
                src += f"      {self._vectors(f'r_{on}', ot, lanes, unroll, f'gp_V_{on}')}\n"
            get = {a: self._lane(f"r_{a}") for a in arrays}
            idx = f"(gp_i + u * gp_nth) * {lanes} + l"
            src += (f"      {self.r.unroll_pragma}\n"
                    f"      for (int u = 0; u < {unroll}; ++u) {{\n"
                    f"        {self.r.unroll_pragma}\n"
                    f"        for (int l = 0; l < {lanes}; ++l) "
                    f"{self._lane(f'r_{on}')} = {compute(get, idx)};\n"
                    f"        {self._store_vector(on, f'r_{on}', ot, lanes)}\n"
                    f"      }}\n    }}\n")
        return src + f"    gp_i = gp_nv * {lanes} + gp_tid;\n  }}\n"

    # ---- block reduce ----------------------------------------------------------------
    def block_reduce(self, node: BlockReduce) -> str:
        """``node`` (reduce and any kind built on it): one partial per block. Reassociable
        (presets): vector loads folded into one accumulator per lane over a grid-stride
        loop, then a shared-memory tree. Otherwise the combine need only be associative, so
        order is kept: block ``b`` folds the contiguous ``b``-th chunk, each thread a
        contiguous slice of it, and the tree pairs neighbours (``t`` with ``t + s`` for
        ``t`` a multiple of ``2s``)."""
        r, w = self.r, self.w
        t = node.input.type
        c = reg_type(t)
        arrays = node.arrays()
        params = [self.ptr(arrays[name], name, not node.writes(name)) if arg == "pointer"
                  else f"gp_u64 {name}" for name, arg in self.k.entry_args]
        src = self.head(params) + " {\n" + self.prologue()
        src += f"  {r.shared_qualifier} {c} gp_smem[{self.bs}];\n"
        src += (self._reduce_fold_unordered(node) if node.reassociate
                else self._reduce_fold_ordered(node))

        def comb(a: str, b: str) -> str:
            return self._comb(node, a, b)

        g = self.geometry
        src += (f"  const unsigned gp_t = {g['local_id']}, gp_bd = {g['block_dim']};\n"
                f"  gp_smem[gp_t] = gp_a;\n  {r.block_barrier};\n")
        if node.reassociate:
            src += (f"  unsigned gp_s = 1;\n  while (gp_s < gp_bd) gp_s <<= 1;\n"
                    f"  for (gp_s >>= 1; gp_s > 0; gp_s >>= 1) {{\n"
                    f"    if (gp_t < gp_s && gp_t + gp_s < gp_bd) "
                    f"gp_smem[gp_t] = {comb('gp_smem[gp_t]', 'gp_smem[gp_t + gp_s]')};\n"
                    f"    {r.block_barrier};\n  }}\n")
        else:
            src += (f"  for (unsigned gp_s = 1; gp_s < gp_bd; gp_s <<= 1) {{\n"
                    f"    if ((gp_t & (2 * gp_s - 1)) == 0 && gp_t + gp_s < gp_bd) "
                    f"gp_smem[gp_t] = {comb('gp_smem[gp_t]', 'gp_smem[gp_t + gp_s]')};\n"
                    f"    {r.block_barrier};\n  }}\n")
        return src + (f"  if (gp_t == 0) {node.partials.name}[{g['block_id']}] = "
                      f"{w.store('gp_smem[0]', node.partials.type)};\n}}\n")

    def _pre(self, node: BlockReduce, x: str) -> str:
        v = self.w.load(x, node.input.type)
        return self.call(node.pre, [v]) if node.pre else v

    def _comb(self, node: BlockReduce, a: str, b: str) -> str:
        return self.call(node.combine, [a, b])

    def _reduce_fold_ordered(self, node: BlockReduce) -> str:
        g = self.geometry
        c = reg_type(node.input.type)
        n, data = node.count, node.input.name
        return (f"  const gp_u64 gp_chunk = ({n} + {g['grid_dim']} - 1) / {g['grid_dim']};\n"
                f"  const gp_u64 gp_lo = ((gp_u64){g['block_id']} * gp_chunk < {n}) ? "
                f"(gp_u64){g['block_id']} * gp_chunk : {n};\n"
                f"  const gp_u64 gp_hi = ({n} - gp_lo < gp_chunk) ? {n} : gp_lo + gp_chunk;\n"
                f"  const gp_u64 gp_per = (gp_hi - gp_lo + {g['block_dim']} - 1) / "
                f"{g['block_dim']};\n"
                f"  gp_u64 gp_i = gp_lo + (gp_u64){g['local_id']} * gp_per;\n"
                f"  if (gp_i > gp_hi) gp_i = gp_hi;\n"
                f"  const gp_u64 gp_end = (gp_hi - gp_i < gp_per) ? gp_hi : gp_i + gp_per;\n"
                f"  {c} gp_a = {self.w.expr(node.identity)};\n"
                f"  for (; gp_i < gp_end; ++gp_i) gp_a = "
                f"{self._comb(node, 'gp_a', self._pre(node, f'{data}[gp_i]'))};\n")

    def _reduce_fold_unordered(self, node: BlockReduce) -> str:
        r = self.r
        t = node.input.type
        c = reg_type(t)
        lanes = 16 // size_of(t)
        vt = r.vector_types[16]
        n, data = node.count, node.input.name

        def comb(a: str, b: str) -> str:
            return self._comb(node, a, b)

        def pre(x: str) -> str:
            return self._pre(node, x)

        src = (f"  {c} gp_acc[{lanes}];\n"
               f"  {r.unroll_pragma}\n  for (int l = 0; l < {lanes}; ++l) "
               f"gp_acc[l] = {self.w.expr(node.identity)};\n"
               f"  gp_u64 gp_i = gp_tid;\n")
        if r.vector_loads != "scalar":
            src += (f"  if ((((gp_u64){data}) & 15) == 0) {{\n"
                    f"    const gp_u64 gp_nv = {n} / {lanes};\n")
            if r.vector_loads == "union":
                src += f"    {self.vector_union('gp_V', vt, t, lanes)}\n"
            for unroll in (UNROLL, 1):
                cond = f"gp_i + {unroll - 1} * gp_nth < gp_nv" if unroll > 1 else "gp_i < gp_nv"
                src += (f"    for (; {cond}; gp_i += {unroll} * gp_nth) {{\n"
                        f"      {self._vectors('r', t, lanes, unroll, 'gp_V')}\n"
                        f"      {r.unroll_pragma}\n"
                        f"      for (int u = 0; u < {unroll}; ++u) "
                        f"{self._load_vector('r', data, t, lanes)}\n"
                        f"      {r.unroll_pragma}\n      for (int u = 0; u < {unroll}; ++u) {{\n"
                        f"        {r.unroll_pragma}\n"
                        f"        for (int l = 0; l < {lanes}; ++l) "
                        f"gp_acc[l] = {comb('gp_acc[l]', pre(self._lane('r')))};\n"
                        f"      }}\n    }}\n")
            src += f"    gp_i = gp_nv * {lanes} + gp_tid;\n  }}\n"
        return src + (f"  {c} gp_a = gp_acc[0];\n"
                      f"  {r.unroll_pragma}\n  for (int l = 1; l < {lanes}; ++l) "
                      f"gp_a = {comb('gp_a', 'gp_acc[l]')};\n"
                      f"  for (; gp_i < {n}; gp_i += gp_nth) "
                      f"gp_a = {comb('gp_a', pre(f'{data}[gp_i]'))};\n")

    # ---- gather / scatter ------------------------------------------------------------
    def indexed_move(self, node: IndexedMove) -> str:
        """gather: ``out[i] = src[idx[i]]``; scatter: ``out[idx[i]] = src[i]``."""
        ti = node.idx.type
        arrays = node.arrays()
        params = [self.ptr(arrays[name], name, not node.writes(name)) if arg == "pointer"
                  else f"gp_u64 {name}" for name, arg in self.k.entry_args]
        n, bound = node.count, node.bound
        src, idx, out = node.src.name, node.idx.name, node.out.name
        check = (f"gp_j >= 0 && (gp_u64)gp_j < {bound}" if is_signed(ti)
                 else f"(gp_u64)gp_j < {bound}")
        move = (f"{out}[gp_i] = {src}[gp_j]" if node.direction == "gather"
                else f"{out}[gp_j] = {src}[gp_i]")
        return (self.head(params) + " {\n" + self.prologue()
                + f"  for (gp_u64 gp_i = gp_tid; gp_i < {n}; gp_i += gp_nth) {{\n"
                f"    const {reg_type(ti)} gp_j = {idx}[gp_i];\n"
                f"    if ({check}) {move};\n  }}\n}}\n")

    def render(self) -> str:
        """The entry point for the kernel's kind."""
        entry = self.k.entry
        if isinstance(entry, ElementLoop):
            return self.element_loop(entry)
        if isinstance(entry, BlockReduce):
            return self.block_reduce(entry)
        if isinstance(entry, IndexedMove):
            return self.indexed_move(entry)
        raise Unsupported(f"{self.r.name}: kernel {self.k.name!r} ({self.k.kind}) has no "
                          "entry structure and no entry template")

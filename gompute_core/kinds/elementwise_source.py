"""The elementwise kind's device entries, written as raw kernels in the kernel language.

An elementwise spec needs no entry of its own in any backend: for each variant it runs,
this module writes the source of a ``@g.raw_kernel`` function calling the spec's element
function, and every backend that runs raw kernels compiles it as it compiles any other.
Each entry comes in two forms: one element per thread (``i = global_id(0); if i < n``),
launched with ``ceil(n / block)`` blocks, and a grid-stride loop (``_gs``), used only when
that many blocks exceed the device's grid cap (``Device.max_grid_blocks``: CUDA's and
HIP's few waves, never the CPU's, which runs a loop-free kernel as one flat parallel
loop). And two shapes:

* ``flat``: every operand contiguous over one dimension: ``o0[i] = f(a0[i], a1[i], s)``
  (the loop the compilers vectorize);
* ``nd`` with ``d`` dimensions: the flat index is decomposed into ``d`` coordinates once
  per element (from the innermost dimension out), and each operand is addressed by its
  own offset and strides. Shape, strides and offsets travel in a params record
  (``ElementwiseMeta``, one class per spec and ``d``; the spec's own params are its field
  ``user``), so the entry's argument count does not grow with ``d``.

Array pointers are the operands' spans from their lowest-addressed element
(:mod:`.elementwise_layout`), so every index is non-negative.
"""

from __future__ import annotations

import linecache
from typing import TYPE_CHECKING, Any

from ..abi import params as make_params
from ..abi.resolve import Array
from ..raw.builtins import block_dim, global_id, grid_dim
from ..raw.kernel import RawKernelDef, block_shape, signature_of
from ..raw.types import GlobalPtr
from ..types import i64, u64

if TYPE_CHECKING:
    from .elementwise import ElementwiseSpec

_MODULE = "gompute_core.kinds.elementwise_source"


def variant_name(spec: ElementwiseSpec, ndim: int | None, strided_grid: bool = False) -> str:
    """The entry symbol of a variant: ``<name>_flat`` or ``<name>_nd<d>``, with ``_gs`` for
    the grid-stride form."""
    base = f"{spec.name}_flat" if ndim is None else f"{spec.name}_nd{ndim}"
    return f"{base}_gs" if strided_grid else base


def meta_class(spec: ElementwiseSpec, ndim: int) -> type:
    """The params record of the ``nd`` variant with ``ndim`` dimensions."""
    count = spec.array_count
    fields: dict[str, Any] = {"shape": Array[i64, ndim], "strides": Array[i64, count * ndim],
                              "offsets": Array[i64, count]}
    if spec.params is not None:
        fields["user"] = spec.params
    qual = f"{variant_name(spec, ndim)}_meta"
    cls = type(qual, (), {"__annotations__": fields, "__module__": _MODULE,
                          "__qualname__": qual})
    return make_params(cls)


def _source(spec: ElementwiseSpec, ndim: int | None, entry: str, strided_grid: bool) -> str:
    """The raw kernel's text (see the module docstring). Its parameters are ``in<k>`` (the
    spec's inputs, arrays and scalars in order), ``out<k>``, ``n``, then the params."""
    arrays = [f"in{k}" for k in range(len(spec.ins)) if not spec.is_scalar(k)]
    arrays += [f"out{k}" for k in range(len(spec.outs))]
    args = [f"in{k}: _{'T' if spec.is_scalar(k) else 'P'}{k}" for k in range(len(spec.ins))]
    args += [f"out{k}: _O{k}" for k in range(len(spec.outs))]
    args.append("n: _i64")
    decompose: list[str] = []
    if ndim is None:
        if spec.params is not None:
            args.append("p: _Params")
        index = dict.fromkeys(arrays, "i")
        user = "p"
    else:
        args.append("m: _Meta")
        index = {a: " + ".join([f"m.offsets[{j}]"] + [f"_c{d} * m.strides[{j * ndim + d}]"
                                                       for d in range(ndim)])
                 for j, a in enumerate(arrays)}
        decompose.append("        _q = i")
        for d in range(ndim - 1, 0, -1):
            decompose += [f"        _c{d} = _q % m.shape[{d}]",
                          f"        _q = _q // m.shape[{d}]"]
        decompose.append("        _c0 = _q")
        user = "m.user"
    call_args = [f"in{k}" if spec.is_scalar(k) else f"in{k}[{index[f'in{k}']}]"
                 for k in range(len(spec.ins))]
    if spec.indexed:
        call_args.append("_u64(i)")
    if spec.params is not None:
        call_args.append(user)
    call = f"_fn({', '.join(call_args)})"
    outs = [f"out{k}" for k in range(len(spec.outs))]
    if len(outs) == 1:
        body = [f"        out0[{index['out0']}] = {call}"]
    else:
        results = [f"_r{k}" for k in range(len(outs))]
        body = [f"        {', '.join(results)} = {call}"]
        body += [f"        {o}[{index[o]}] = {r}" for o, r in zip(outs, results, strict=True)]
    lines = [f"def {entry}({', '.join(args)}):", "    i = _global_id(0)"]
    if strided_grid:
        lines += ["    stride = _grid_dim(0) * _block_dim(0)", "    while i < n:", *decompose,
                  *body, "        i += stride"]
    else:  # one element per thread: no loop (the CPU runs such a kernel as one flat loop)
        lines += ["    if i < n:", *decompose, *body]
    return "\n".join(lines) + "\n"


def make_variant(spec: ElementwiseSpec, ndim: int | None, strided_grid: bool = False
                 ) -> RawKernelDef:
    """The raw kernel of one variant (``ndim`` None: ``flat``; ``strided_grid``: the
    grid-stride loop for launches larger than the device's grid), not registered by name
    (its spec is)."""
    entry = variant_name(spec, ndim, strided_grid)
    text = _source(spec, ndim, entry, strided_grid)
    filename = f"<gompute elementwise {entry}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    env: dict[str, Any] = {"_fn": spec.fn, "_i64": i64, "_u64": u64, "_global_id": global_id,
                           "_grid_dim": grid_dim, "_block_dim": block_dim}
    for k, t in enumerate(spec.ins):
        env[f"_T{k}"] = t
        env[f"_P{k}"] = GlobalPtr[t]
    for k, t in enumerate(spec.outs):
        env[f"_O{k}"] = GlobalPtr[t]
    if ndim is None:
        env["_Params"] = spec.params
    else:
        env["_Meta"] = meta_class(spec, ndim)
    namespace: dict[str, Any] = {}
    exec(compile(text, filename, "exec"), env, namespace)  # noqa: S102 - our own text
    fn = namespace[entry]
    signature, params_class = signature_of(fn)
    shape = block_shape(spec.block_size, entry)
    return RawKernelDef(entry, fn, shape, signature, params_class, (), spec.defined_at,
                        spec.defined_in)

"""Scale-out on Dask: run a spec over the chunks of ``dask.array`` arrays.

``map_blocks`` runs the elementwise kinds (map, map_indexed, map_to, zip) on
every chunk, ``reduce`` runs a reduce (custom or preset) through
``dask.array.reduction`` and ``gather`` gathers from a chunked source. Every
chunk goes through ``Kernel.run`` with whatever array the chunk is (a NumPy
array; a CuPy array where the backend takes device arrays), on a kernel
handle opened once per worker process and kept (:func:`worker_kernel`).

Results equal one ``Kernel.run`` over the whole array (the same bits for maps,
map_indexed, gather and integer or custom reduces; float sums may round
differently because partials are added in another order, as on any backend):

* map_indexed sees each element's GLOBAL flat index: a chunk at flat offset
  ``base`` runs a derived spec ``f(x, i + base, p)`` (see :func:`offset_spec`);
* a reduce folds the per-chunk partials with the spec's combine in chunk
  order (``Spec.fold``), so an associative, non-commutative combine gives the
  single-process answer; empty chunks give the identity;
* a reduce of a map's ``map_blocks`` result runs one fused kernel per chunk
  (:func:`fused_reduce_spec`), and a preset's partials of device (CuPy) chunks
  stay on the device until the aggregate step, so a chunk task never waits for
  the GPU.

Specs and params travel to workers by pickling: a spec by reference to the
module that made it (``Spec.__reduce__``), params as their frozen dataclass.
Needs ``pip install "gompute-core[dask]"``. See ``docs/dask.md``.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import numpy as np

try:
    import dask.array as da
    from dask.array.utils import meta_from_array
    from dask.base import normalize_token
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("gompute_core.dask needs Dask: pip install 'gompute-core[dask]' "
                      "(dask[array] and distributed)") from exc

from .abi.params import params as params_class
from .errors import InvalidArgument
from .kinds import MAP, kinds
from .kinds import reduce as _reduce_kind
from .kinds.map import map_indexed
from .runtime import checks
from .runtime.kernel import AutoKernel, Kernel
from .specs import Spec, _positional_arity
from .types import short_name, u64

__all__ = ["map_blocks", "reduce", "gather", "worker_kernel", "close_worker_kernels",
           "offset_spec", "fused_reduce_spec"]

Device = int | Callable[[], int]
"""A device ordinal, or a function a worker calls to get its ordinal."""

MAX_SPLIT_EVERY = 1024
"""A reduce's default ``split_every``: all partials of up to this many chunks per axis in
one aggregate task (each tree level is another round of tasks)."""


@normalize_token.register(Spec)
def _tokenize_spec(spec: Spec) -> tuple[str, str, str]:
    """Dask's task key of a spec: its unique name and where it was made (not its functions)."""
    return ("gompute-spec", spec.name, spec.defined_at)


# ------------------------------------------------------------------ per-process kernel cache
_handles: dict[tuple[Spec, str | None, int], tuple[Kernel, threading.Lock]] = {}
_handles_lock = threading.Lock()


def worker_kernel(spec: Spec, backend: str | None = None,
                  device: Device | None = None) -> tuple[Kernel, threading.Lock]:
    """The kernel handle of ``spec`` in this process and the lock that serialises its runs.

    Opened on first use and kept: ``g.Kernel(spec, backend, device)``, or
    ``g.AutoKernel(spec)`` (device 0) when ``backend`` is None. ``device`` may be
    a function called here (in the worker) to pick the ordinal. A handle's
    cached buffers are not safe for concurrent ``run`` calls, hence the lock.
    """
    ordinal = _ordinal(device)
    key = (spec, backend, ordinal)
    with _handles_lock:
        entry = _handles.get(key)
        if entry is None:
            kernel = AutoKernel(spec) if backend is None else Kernel(spec, backend, ordinal)
            entry = (kernel, threading.Lock())
            _handles[key] = entry
    return entry


def close_worker_kernels() -> int:
    """Close and forget every handle this process opened; returns how many."""
    with _handles_lock:
        entries = list(_handles.values())
        _handles.clear()
    for kernel, lock in entries:
        with lock:
            kernel.close()
    return len(entries)


def _ordinal(device: Device | None) -> int:
    if device is None:
        return 0
    value = device() if callable(device) else device
    return checks.count(value, "device")


def _check_target(backend: str | None, device: Device | None) -> None:
    if backend is not None and not isinstance(backend, str):
        raise InvalidArgument(f"backend: expected a backend name or None, got {backend!r}")
    if device is None:
        return
    if backend is None:
        raise InvalidArgument("device: choosing a device needs backend= too (without a "
                              "backend, g.AutoKernel uses each worker's device 0)")
    if not callable(device):
        checks.count(device, "device")


def _library(chunk: Any) -> Any:
    """The array library (module) of ``chunk``'s type: ``numpy``, ``cupy``, ..."""
    return sys.modules.get(type(chunk).__module__.partition(".")[0], np)


def _contiguous(chunk: Any) -> Any:
    """``chunk`` C-contiguous, by its own array library (NumPy's ``ascontiguousarray`` does
    not dispatch to CuPy: it would copy a CuPy chunk to the host, which CuPy refuses)."""
    make = getattr(_library(chunk), "ascontiguousarray", None)
    return make(chunk) if make is not None else np.ascontiguousarray(chunk)


def _run(spec: Spec, backend: str | None, device: Device | None, *args: Any) -> Any:
    kernel, lock = worker_kernel(spec, backend, device)
    with lock:
        return kernel.run(*args)


# ------------------------------------------------------------------ map_indexed offsets
_offset_specs: dict[Spec, tuple[Spec, type]] = {}
_derived_lock = threading.Lock()


def offset_spec(spec: Spec) -> tuple[Spec, type]:
    """A map_indexed spec computing ``spec.fn(x, i + q.base, q.inner)`` and its params class.

    The kernel's ``i`` counts from 0 in every chunk; the derived spec adds the
    chunk's global flat offset ``q.base`` (a ``u64``) so each element sees the
    index it has in the whole array. The params class ``<P>AtBase`` holds
    ``base`` and, when the spec has params, ``inner: P``. Made once per process
    and registered as ``<name>_at_base``.
    """
    with _derived_lock:
        found = _offset_specs.get(spec)
        if found is not None:
            return found
        fn, P = spec.fn, spec.params
        fields: dict[str, Any] = {"base": u64}
        if P is not None:
            fields["inner"] = P

            def shifted(x: Any, i: Any, q: Any) -> Any:
                return fn(x, i + q.base, q.inner)
        elif _positional_arity(spec.name, "kernel function", fn) == 3:
            def shifted(x: Any, i: Any, q: Any) -> Any:
                return fn(x, i + q.base, q)  # p is unused by a spec without params
        else:
            def shifted(x: Any, i: Any, q: Any) -> Any:
                return fn(x, i + q.base)
        base_name = P.__name__ if P is not None else spec.name
        Q = params_class(type(f"{base_name}AtBase", (), {
            "__annotations__": fields, "__module__": __name__,
            "__doc__": f"Chunk offset (and params) of {spec.name!r} under Dask."}))
        derived = map_indexed(f"{spec.name}_at_base", spec.T, Q, shifted,
                              block_size=spec.block_size)
        _offset_specs[spec] = (derived, Q)
        return derived, Q


# ------------------------------------------------------------------ map fused into a reduce
_fused_specs: dict[tuple[Spec, Spec], tuple[Spec, type]] = {}


def _map_stage(spec: Spec) -> Callable[[Any, Any], Any]:
    """``x, q -> T(spec.fn(x, q.map))``: the map's element function on the fused params."""
    fn, T = spec.fn, spec.T
    if spec.params is not None:
        def stage(x: Any, q: Any) -> Any:
            return T(fn(x, q.map))
    elif _positional_arity(spec.name, "kernel function", fn) == 2:
        def stage(x: Any, q: Any) -> Any:
            return T(fn(x, q))  # p is unused by a spec without params
    else:
        def stage(x: Any, q: Any) -> Any:
            return T(fn(x))
    return stage


def _pre_stage(spec: Spec) -> Callable[[Any, Any], Any]:
    """``y, q -> spec.pre(y, q.reduce)`` (``y`` when the reduce has no ``pre``)."""
    pre = spec.pre
    if pre is None:
        def stage(y: Any, q: Any) -> Any:
            return y
    elif spec.params is not None:
        def stage(y: Any, q: Any) -> Any:
            return pre(y, q.reduce)
    elif _positional_arity(spec.name, "pre", pre) == 2:
        def stage(y: Any, q: Any) -> Any:
            return pre(y, q)  # p is unused by a spec without params
    else:
        def stage(y: Any, q: Any) -> Any:
            return pre(y)
    return stage


def fused_reduce_spec(map_spec: Spec, reduce_spec: Spec) -> tuple[Spec, type]:
    """A reduce of ``reduce_spec`` whose ``pre`` first applies the map ``map_spec``, and its
    params class.

    The derived spec folds ``pre(T(f(x, q.map)), q.reduce)`` with the reduce's combine,
    identity, preset and block size: one kernel reads each element once, where the map
    then the reduce would copy the chunk, write it and read it again. The params class
    ``<map>_into_<reduce>_params`` holds ``map`` and ``reduce`` (each only when that spec
    has params; it may have no fields). Made once per process, registered as
    ``<map>_into_<reduce>``.
    """
    with _derived_lock:
        key = (map_spec, reduce_spec)
        found = _fused_specs.get(key)
        if found is not None:
            return found
        map_stage, pre_stage = _map_stage(map_spec), _pre_stage(reduce_spec)

        def fused(x: Any, q: Any) -> Any:
            return pre_stage(map_stage(x, q), q)

        name = f"{map_spec.name}_into_{reduce_spec.name}"
        fields = {role: P for role, P in (("map", map_spec.params),
                                          ("reduce", reduce_spec.params)) if P is not None}
        Q = params_class(type(f"{name}_params", (), {
            "__annotations__": fields, "__module__": __name__,
            "__doc__": f"Params of {map_spec.name!r} fused into {reduce_spec.name!r}."}))
        T, bs = reduce_spec.T, reduce_spec.block_size
        if reduce_spec.preset is not None:
            make = getattr(_reduce_kind, reduce_spec.preset)
            derived = make(name, T, Q, fused, block_size=bs)
        else:
            derived = _reduce_kind.reduce(name, T, Q, reduce_spec.combine, reduce_spec.identity,
                                    fused, block_size=bs)
        _fused_specs[key] = (derived, Q)
        return derived, Q


def _fused_params(map_spec: Spec, map_p: Any, reduce_spec: Spec, p: Any) -> tuple[Spec, Any]:
    """The fused spec of ``map_spec`` into ``reduce_spec`` and its params instance."""
    derived, Q = fused_reduce_spec(map_spec, reduce_spec)
    values = {role: value for role, value, P in (("map", map_p, map_spec.params),
                                                 ("reduce", p, reduce_spec.params))
              if P is not None}
    return derived, Q(**values)


# ------------------------------------------------------------------ chunk functions
class _Chunk(NamedTuple):
    """What a kind's Dask chunk rule (``Kind.dask_chunk``) runs its chunk with: the
    worker's backend and device, and the helpers below."""

    backend: str | None
    device: Device | None

    def run(self, spec: Spec, *args: Any) -> Any:
        """``Kernel.run(*args)`` of ``spec`` on this worker's handle."""
        return _run(spec, self.backend, self.device, *args)

    @staticmethod
    def contiguous(chunk: Any) -> Any:
        """``chunk`` C-contiguous (by its own array library)."""
        return _contiguous(chunk)

    @staticmethod
    def empty_like(chunk: Any, dtype: Any) -> Any:
        """An uninitialised array shaped like ``chunk`` (of its library), of ``dtype``."""
        return np.empty_like(chunk, dtype=dtype)

    @staticmethod
    def offset_spec(spec: Spec) -> tuple[Spec, type]:
        """:func:`offset_spec`."""
        return offset_spec(spec)


def _elementwise_chunk(*blocks: Any, spec: Spec, p: Any, backend: str | None,
                       device: Device | None, block_info: dict[Any, Any] | None = None
                       ) -> Any:
    """One chunk of ``map_blocks``: the spec's kind's chunk rule."""
    return spec.kind_object.dask_chunk(_Chunk(backend, device), spec, p, blocks, block_info)


def _on_device(chunk: Any) -> bool:
    """True for a device array chunk (CuPy and other ``__cuda_array_interface__`` arrays)."""
    return not isinstance(chunk, np.ndarray) and hasattr(chunk, "__cuda_array_interface__")


def _device_fold(spec: Spec, partials: Any) -> Any:
    """A preset's fold of device ``partials`` (non-empty) by their own array library: a 0-d
    device array, enqueued on the library's stream without waiting for it."""
    T = spec.T
    if spec.preset == "sum":
        return partials.sum(dtype=T)
    if spec.preset == "min":
        return partials.min()
    if spec.preset == "max":
        return partials.max()
    nonzero = partials != 0
    return (nonzero.any() if spec.preset == "any" else nonzero.all()).astype(T)


def _reduce_chunk(data: Any, axis: Any, keepdims: bool, *, spec: Spec, p: Any,
                  backend: str | None, device: Device | None,
                  map_step: tuple[Spec, Any] | None = None) -> Any:
    """One chunk's partial (``pre`` applied, then the spec's reduce), shape ``(1,)*ndim``.

    ``map_step`` ``(map_spec, map_p)``: reduce ``map_spec`` applied to the chunk (one
    fused kernel, :func:`fused_reduce_spec`). A device chunk reduced by a preset keeps
    its partial on the device (launched and folded without synchronizing); otherwise
    the partial is a NumPy array.
    """
    T, shape = spec.T, (1,) * data.ndim
    run_spec, run_p = spec, p
    if map_step is not None:
        run_spec, run_p = _fused_params(map_step[0], map_step[1], spec, p)
    if not (_on_device(data) and spec.preset is not None):
        value = T(spec.identity) if data.size == 0 else \
            _run(run_spec, backend, device, _contiguous(data), run_p)
        return np.full(shape, value, dtype=T)
    library = _library(data)
    if data.size == 0:
        return library.full(shape, spec.identity, dtype=T)
    kernel, _ = worker_kernel(run_spec, backend, device)
    n = data.size
    blocks = kernel.reduce_blocks(n)
    partials = library.empty(blocks, dtype=T)
    kernel.launch(_contiguous(data).reshape(-1), n, partials, blocks, run_p)  # thread-safe
    return _device_fold(spec, partials).reshape(shape)


def _fold_partials(partials: Any, axis: Any, keepdims: bool, *, spec: Spec) -> Any:
    """Fold a block of partials (concatenated in chunk order) with ``Spec.fold``.

    Device partials stay on the device in the combine steps (``keepdims``) and come to
    the host once, in the aggregate step, as the ``T`` scalar of the result.
    """
    if _on_device(partials):
        if keepdims:
            return _device_fold(spec, partials.reshape(-1)).reshape((1,) * partials.ndim)
        partials = _library(partials).asnumpy(partials)
    value = spec.fold(np.asarray(partials, dtype=spec.T).reshape(-1))
    if keepdims:
        return np.full((1,) * partials.ndim, value, dtype=spec.T)
    return value


def _gather_part(out: Any, idx: Any, src: Any, *, spec: Spec, lo: int,
                 backend: str | None, device: Device | None) -> Any:
    """Gather the entries of ``idx`` that fall in ``[lo, lo + len(src))`` from ``src``."""
    out = out.copy()
    hi = lo + src.shape[0]
    selected = (idx >= lo) & (idx < hi)
    if selected.any():
        local = _contiguous(idx[selected] - spec.Idx(lo))  # in [0, len(src))
        values = out[selected]
        _run(spec, backend, device, _contiguous(src), local, values)
        out[selected] = values
    return out


# ------------------------------------------------------------------ public graph builders
def _check_dask_array(arg: Any, role: str, dtype: Any) -> Any:
    if not isinstance(arg, da.Array):
        raise InvalidArgument(f"{role}: expected a dask.array.Array, got {type(arg).__name__} "
                              "(wrap a NumPy array with dask.array.from_array(x, chunks=...))")
    if np.dtype(arg.dtype) != np.dtype(dtype):
        raise InvalidArgument(f"{role}: dtype {arg.dtype} does not match the spec's "
                              f"{short_name(dtype)}; Gompute never casts silently (pass "
                              f"{role}.astype(np.{np.dtype(dtype).name}))")
    return arg


def _check_flat_chunks(arr: Any, role: str, why: str) -> None:
    """Chunks must be contiguous ranges of the flat (C-order) array: only axis 0 split."""
    for axis, sizes in enumerate(arr.chunks[1:], start=1):
        if len(sizes) > 1:
            raise InvalidArgument(
                f"{role}: axis {axis} is split into {len(sizes)} chunks; {why} needs every "
                "chunk to be a contiguous range of the flattened array (split axis 0 only: "
                f"{role}.rechunk({{{', '.join(f'{a}: -1' for a in range(1, arr.ndim))}}}))")


def map_blocks(spec: Spec, *arrays: Any, p: Any = None, backend: str | None = None,
               device: Device | None = None) -> Any:
    """A lazy ``dask.array`` of ``spec`` applied to every chunk of ``arrays``.

    map/map_indexed ``(data)``, map_to ``(inp)``, zip ``(a, b)``; the result has
    the chunks of the (first) input (zip's ``b`` is rechunked like ``a``) and
    dtype ``T`` or ``Out``; inputs are never modified. Each chunk runs through
    ``Kernel.run`` on its worker, on ``backend``/``device`` (default:
    ``g.AutoKernel``). map_indexed sees global flat indices (its input may be
    split along axis 0 only).
    """
    if not isinstance(spec, Spec):
        raise InvalidArgument(f"spec: expected a Spec (g.map, g.zip, ...), got {spec!r}")
    kind = spec.kind_object
    inputs = kind.dask_inputs
    if not inputs:
        runs = ", ".join(k.name for k in kinds() if k.dask_inputs)
        raise InvalidArgument(f"spec {spec.name!r} is a {spec.kind}; map_blocks runs {runs} "
                              "(use gompute_core.dask.reduce / gather)")
    if len(arrays) != len(inputs):
        raise InvalidArgument(f"map_blocks({spec.name!r}): a {spec.kind} takes {len(inputs)} "
                              f"array(s), got {len(arrays)}")
    for arr, (name, role) in zip(arrays, inputs, strict=True):
        _check_dask_array(arr, name, getattr(spec, role))
    if len(arrays) == 2 and arrays[0].shape != arrays[1].shape:
        raise InvalidArgument(f"{inputs[1][0]}: shape {arrays[1].shape} does not match "
                              f"{inputs[0][0]}'s {arrays[0].shape}; no truncation or "
                              "broadcasting")
    if len(arrays) == 2 and arrays[1].chunks != arrays[0].chunks:
        arrays = (arrays[0], arrays[1].rechunk(arrays[0].chunks))
    if not kind.pipelines:
        _check_flat_chunks(arrays[0], inputs[0][0], f"{spec.kind} (global element indices)")
    checks.params(p, spec.params, spec.name)
    _check_target(backend, device)
    out_type = getattr(spec, kind.output_role)
    meta = meta_from_array(arrays[0], dtype=out_type)  # NumPy, or CuPy for CuPy chunks
    result = da.map_blocks(_elementwise_chunk, *arrays, dtype=out_type, meta=meta,
                           token=f"gompute-{spec.name}", spec=spec, p=p, backend=backend,
                           device=device)
    if kind is MAP:
        _remember_map(result, _MapStep(spec, arrays[0], p, backend, device))
    return result


class _MapStep(NamedTuple):
    """How a ``map_blocks`` result of a map was made: what ``reduce`` fuses into its chunks."""

    spec: Spec
    source: Any
    p: Any
    backend: str | None
    device: Device | None


_map_steps: dict[int, _MapStep] = {}
"""``map_blocks`` results of maps that are alive, by the identity of their graph layer: an
array with that layer under its name is that map (a persisted or otherwise rebuilt array
has another layer, and is reduced as it is)."""


def _layer(array: Any) -> Any:
    return array.dask.layers.get(array.name)


def _remember_map(result: Any, step: _MapStep) -> None:
    key = id(_layer(result))  # the layer lives at least as long as the result
    with _derived_lock:
        _map_steps[key] = step
    weakref.finalize(result, _map_steps.pop, key, None)


def reduce(spec: Spec, array: Any, p: Any = None, *, backend: str | None = None,
           device: Device | None = None, split_every: int | None = None,
           fuse: bool = True) -> Any:
    """A lazy 0-d ``dask.array`` holding the reduce of every element of ``array``.

    Each chunk's partial is the spec's reduce of the chunk (``pre`` applied); the
    partials are folded with the spec's combine in chunk order (``Spec.fold``),
    ``split_every`` partials at a time (default: every chunk's partial in one
    aggregate task, up to :data:`MAX_SPLIT_EVERY` per axis). ``.compute()`` gives a
    ``T`` scalar equal to the single-process run (float sums up to rounding).
    A custom combine needs chunks that are contiguous in the flattened array
    (axis 0 split only); presets accept any chunking.

    With ``fuse`` (the default), an ``array`` that is ``map_blocks`` of a map on the
    same ``backend`` and ``device`` is not materialised: each chunk task runs one
    kernel reducing ``map(x)`` (:func:`fused_reduce_spec`) on the map's input chunk.
    """
    if not isinstance(spec, Spec) or spec.kind != "reduce":
        raise InvalidArgument(f"spec: expected a reduce spec (g.reduce, g.sum, ...), got "
                              f"{spec!r}")
    _check_dask_array(array, "data", spec.T)
    if spec.preset is None:
        _check_flat_chunks(array, "data", f"the custom combine of {spec.name!r} (folded in "
                                          "element order)")
    checks.params(p, spec.params, spec.name)
    _check_target(backend, device)
    step = _map_steps.get(id(_layer(array))) if fuse else None
    map_step = None
    if step is not None and step.backend == backend and step.device == device:
        array, map_step = step.source, (step.spec, step.p)
    if split_every is None:
        split_every = {axis: min(max(blocks, 2), MAX_SPLIT_EVERY)
                       for axis, blocks in enumerate(array.numblocks)}
    chunk = partial(_reduce_chunk, spec=spec, p=p, backend=backend, device=device,
                    map_step=map_step)
    fold = partial(_fold_partials, spec=spec)
    return da.reduction(array, chunk, fold, combine=fold, axis=None, keepdims=False,
                        dtype=spec.T, split_every=split_every, concatenate=True,
                        name=f"gompute-{spec.name}", meta=np.empty((), dtype=spec.T))


def gather(spec: Spec, src: Any, idx: Any, out: Any = None, *, backend: str | None = None,
           device: Device | None = None) -> Any:
    """A lazy ``dask.array`` ``out`` with ``out[i] = src[idx[i]]`` (the chunks of ``idx``).

    ``src`` is a 1-d dask array in any chunks; each task gathers, for one chunk
    of ``idx`` and one chunk ``[lo, hi)`` of ``src``, only the indices in that
    local range (shifted by ``lo``), so no task needs more than one chunk of
    each. Indices outside ``[0, len(src))`` leave ``out[i]`` as it was: ``out``
    (a dask array shaped and chunked like ``idx``) or zeros.
    """
    if not isinstance(spec, Spec) or spec.kind != "gather":
        raise InvalidArgument(f"spec: expected a gather spec (g.gather), got {spec!r}")
    _check_dask_array(src, "src", spec.T)
    _check_dask_array(idx, "idx", spec.Idx)
    if src.ndim != 1:
        raise InvalidArgument(f"src: expected a 1-d dask array, got {src.ndim} dimensions "
                              "(pass src.ravel())")
    if out is None:
        out = da.zeros_like(idx, dtype=spec.T)  # idx's chunks and array type
    else:
        _check_dask_array(out, "out", spec.T)
        if out.shape != idx.shape:
            raise InvalidArgument(f"out: shape {out.shape} does not match idx's {idx.shape}")
        out = out.rechunk(idx.chunks)
    _check_target(backend, device)
    index = "".join(chr(ord("a") + axis) for axis in range(idx.ndim))
    lo = 0
    for block, size in enumerate(src.chunks[0]):
        out = da.blockwise(_gather_part, index, out, index, idx, index, src.blocks[block], "z",
                           dtype=spec.T, meta=meta_from_array(out, dtype=spec.T),
                           concatenate=True, token=f"gompute-{spec.name}-{block}",
                           spec=spec, lo=lo, backend=backend, device=device)
        lo += size
    return out

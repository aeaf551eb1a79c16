"""``ElementwiseProgram``: an elementwise spec loaded on one device, its variants compiled
on first use, and its ``run`` and ``launch``.

``run(*ins, out=None, p=None)``: the operands are described
(:mod:`.elementwise_operands`), broadcast, checked for overlap, the missing outputs
allocated (NumPy arrays for host operands; for device operands, device memory seen as an
array that frees itself when collected), the iteration space collapsed
(:mod:`.elementwise_layout`) and the variant launched: on a device computing on host
memory (the CPU) every array in place; on another device the host arrays are staged
(each input's span uploaded as is, or compacted first when it is mostly gaps; each output
computed in device memory and downloaded into it), synchronized; device arrays are used
in place, stream-ordered with their producers, without synchronizing.

``launch(*ins, out=..., n=None, p=None)``: the same without allocation, staging or
synchronization; the outputs are required. A buffer of the device is a 1-D operand of
its elements (of ``n`` elements when ``n`` is given).
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import dlpack
from ..backend.buffer import Buffer
from ..backend.exports import TypedView
from ..errors import GomputeError, InvalidArgument
from ..raw.launch import RawKernel, _scalar_converter
from ..types import short_name
from .elementwise_layout import Operand, broadcast, c_strides, check_overlap, plan
from .elementwise_operands import host_operand, operand
from .elementwise_source import make_variant
from .foreign import order_after, order_before, probed_buffer
from .program import device_stream

if TYPE_CHECKING:
    from ..backend.device import Device, Stream
    from .elementwise import ElementwiseSpec

COMPACT_RATIO = 2
"""A strided host input whose span holds more than this many times its elements (plus
one) is compacted before it is uploaded, instead of uploading the gaps."""


class _Allocated(TypedView):
    """Device memory ``run`` allocated for an output: an array to other libraries
    (``cupy.asarray(out)``), freed when collected."""

    __slots__ = ()

    def __del__(self) -> None:
        with contextlib.suppress(GomputeError):  # a device already closed at exit
            self.buffer.free()


class ElementwiseProgram:
    """``spec`` on ``device``: ``run``, ``launch``, ``stream``, ``close`` (module docstring)."""

    def __init__(self, spec: ElementwiseSpec, device: Device, checked: bool = False) -> None:
        self.spec, self.device = spec, device
        self.checked = checked
        """Whether the variants are checked raw kernels (:meth:`synchronize` raises)."""
        self.block_size = spec.block_size
        self._stream: Stream = device.stream
        self._lock = threading.Lock()
        self._launching = threading.Lock()
        """Held while a variant's arguments are written and launched (threads sharing a
        handle never launch with each other's arguments)."""
        self._variants: dict[tuple[int | None, bool], RawKernel] = {}
        self._metas: dict[RawKernel, type] = {}
        """The params record class of each strided variant."""
        self._in_dtypes = [np.dtype(t) for t in spec.ins]
        self._out_dtypes = [np.dtype(t) for t in spec.outs]
        self._scalars = {k: _scalar_converter(spec.name, f"{name} (g.Scalar[{short_name(t)}])",
                                              t)
                         for k, (name, t) in enumerate(zip(spec.names, spec.ins, strict=True))
                         if spec.is_scalar(k)}
        self._host = device.has("host_memory")
        """Host arrays are borrowed in place (a device computing on host memory)."""
        self._grid_cap = device.max_grid_blocks(spec.block_size)
        self._buffer_classes: set[type] = set()
        """Buffer subclasses met so far (``isinstance`` against the ABC, once per class)."""
        self._cai = device.dlpack_device_type == dlpack.KDL_CUDA
        """Foreign arrays may come through the CUDA Array Interface (cached per object)."""
        self.flat = self._variant(None)
        """The contiguous variant (compiled when the kernel is opened)."""
        self.artifact = self.flat.artifact
        """The contiguous variant's artifact (``Kernel.artifact``)."""
        self.dtypes = {role: np.dtype(t) for role, t in spec.value_types}
        """Each operand's element type by role (the inputs' names, ``out0``...)."""

    # ---- stream and variants ---------------------------------------------------------------
    @property
    def stream(self) -> Stream:
        """The stream ``launch`` and ``run`` enqueue on (settable to another stream of the
        device)."""
        return self._stream

    @stream.setter
    def stream(self, value: Stream) -> None:
        self._stream = device_stream(self.device, value)

    def _variant(self, ndim: int | None, strided_grid: bool = False) -> RawKernel:
        key = (ndim, strided_grid)
        found = self._variants.get(key)
        if found is None:
            with self._lock:
                found = self._variants.get(key)
                if found is None:
                    definition = make_variant(self.spec, ndim, strided_grid)
                    found = RawKernel(definition, self.device.backend, self.device.ordinal,
                                      checked=self.checked)
                    self._variants[key] = found
                    if ndim is not None:
                        self._metas[found] = definition.params_class  # type: ignore[assignment]
        return found

    def _kernel(self, ndim: int | None, count: int) -> tuple[RawKernel, int]:
        """The variant for ``count`` elements and its grid: one element per thread, or the
        grid-stride form when that needs more blocks than the device's cap."""
        blocks = -(-count // self.block_size)
        if blocks <= self._grid_cap:
            return (self.flat if ndim is None else self._variant(ndim)), blocks
        return self._variant(ndim, True), self._grid_cap

    def variants(self) -> tuple[str, ...]:
        """The entry names of the variants compiled so far."""
        return tuple(v.name for v in self._variants.values())

    # ---- arguments -------------------------------------------------------------------------
    def _arguments(self, args: tuple[Any, ...], out: Any, p: Any, n: int | None
                   ) -> tuple[list[Any], list[Operand], list[Operand | None], list[Any]]:
        spec = self.spec
        if len(args) != len(spec.ins):
            raise InvalidArgument(f"{spec.name}: takes {len(spec.ins)} inputs "
                                  f"({', '.join(spec.names)}), got {len(args)}")
        P = spec.params
        if P is None and p is not None:
            raise InvalidArgument(f"p: {spec.name!r} has no params (P is None), got "
                                  f"{type(p).__name__}")
        if P is not None and not isinstance(p, P):
            got = "nothing" if p is None else f"a {type(p).__name__}"
            raise InvalidArgument(f"p: {spec.name!r} takes a {P.__qualname__} instance, got "
                                  f"{got}")
        values: list[Any] = []
        ins: list[Operand] = []
        for k, a in enumerate(args):
            convert = self._scalars.get(k)
            if convert is not None:
                values.append(convert(a))
            else:
                op = operand(a, spec.names[k], self._in_dtypes[k], False, self.device,
                             self._stream, n)
                ins.append(op)
                values.append(op)
        outs_given = self._outs(out)
        outs: list[Operand | None] = [
            None if o is None else operand(o, f"out{k}", self._out_dtypes[k], True,
                                           self.device, self._stream, n)
            for k, o in enumerate(outs_given)]
        return values, ins, outs, outs_given

    def _outs(self, out: Any) -> list[Any]:
        count = len(self.spec.outs)
        if out is None:
            return [None] * count
        given = list(out) if isinstance(out, tuple) else [out]
        if len(given) != count:
            raise InvalidArgument(f"out: {self.spec.name!r} has {count} output(s), got "
                                  f"{len(given)} (pass a tuple with one array or None each)")
        return given

    # ---- run and launch ----------------------------------------------------------------------
    def run(self, args: tuple[Any, ...], out: Any = None, p: Any = None) -> Any:
        """``Kernel.run`` (module docstring): the output, or a tuple of them."""
        values, ins, outs, given = self._arguments(args, out, p, None)
        on_host = {o.host is not None for o in ins + [o for o in outs if o is not None]}
        if len(on_host) > 1:
            raise InvalidArgument(f"{self.spec.name}: the arrays are partly on the host and "
                                  "partly on the device; pass them all on one side")
        host = on_host != {False}
        shape = broadcast(ins, [o for o in outs if o is not None])
        for k, o in enumerate(outs):
            if o is None:
                given[k], outs[k] = self._allocate(k, shape, host)
        done = [o for o in outs if o is not None]
        check_overlap(ins, done)
        self.execute(values, ins, done, p)
        results = tuple(given)
        return results[0] if self.spec.single else results

    def execute(self, values: list[Any], ins: list[Operand], outs: list[Operand],
                p: Any) -> None:
        """``run``'s work on described operands (broadcast and overlap already checked):
        host operands on a device that does not compute on host memory are staged (and
        waited for); checked, the device is then synchronized and a fault raises."""
        host = any(o.host is not None for o in ins + outs)
        if host and not self._host:
            self._staged(values, ins, outs, p)
        else:
            self._launch(values, ins, outs, p)
            if host and self.device.packs_arguments:
                self._stream.synchronize()  # a driver's launch may return before it ran
        if self.checked:
            self.synchronize()

    def synchronize(self) -> None:
        """Wait for the device; checked, raise the first fault of a variant since the last
        synchronization (``OutOfBounds`` naming the element function's array and line)."""
        self.device.synchronize()
        for variant in list(self._variants.values()):
            variant.raise_faults()

    def launch(self, *args: Any, out: Any = None, n: int | None = None, p: Any = None) -> None:
        """Enqueue one launch on device operands (module docstring); no allocation, copy or
        synchronization."""
        if n is not None and (isinstance(n, bool) or not hasattr(n, "__index__")
                              or n.__index__() < 0):
            raise InvalidArgument(f"launch: n must be a non-negative int, got {n!r}")
        if self._buffers_launch(args, out, n, p):
            return
        values, ins, outs, _ = self._arguments(args, out, p, None if n is None else
                                               n.__index__())
        if any(o is None for o in outs):
            raise InvalidArgument(f"launch: {self.spec.name!r} needs every output (out=); "
                                  "run allocates them")
        done = [o for o in outs if o is not None]
        if not self._host:
            for o in ins + done:
                if o.host is not None:
                    raise InvalidArgument(f"launch: {o.name} is in host memory; this kernel "
                                          f"runs on {self.device!r} (use run, or upload it)")
        check_overlap(ins, done)
        self._launch(values, ins, done, p)

    def _buffers_launch(self, args: tuple[Any, ...], out: Any, n: Any, p: Any) -> bool:
        """The common launch on typed buffers of this device holding the same count (or at
        least ``n``), or C-contiguous foreign arrays of one shape on it (CuPy's, through
        their cached descriptions: :func:`~.foreign.probed_buffer`), checked in one pass
        without describing operands: False when anything differs (the general path then
        launches, or raises the precise error). The producers' streams are ordered around
        the launch as the general path orders them."""
        outs = out if type(out) is tuple else (out,)
        if len(args) != len(self._in_dtypes) or len(outs) != len(self._out_dtypes):
            return False
        P = self.spec.params
        if (p is not None and type(p) is not P) or (P is not None and p is None):
            return False
        dev, count = self.device, n
        values: list[Any] = []
        spans: list[tuple[int, int, bool]] = []
        streams: list[int] = []
        shapes: set[tuple[int, ...]] = set()
        native = False
        for k, a in enumerate((*args, *outs)):
            convert = self._scalars.get(k) if k < len(args) else None
            if convert is not None:
                values.append(convert(a))
                continue
            dtype = self._in_dtypes[k] if k < len(args) else self._out_dtypes[k - len(args)]
            if a.__class__ in self._buffer_classes:
                native = True
            elif isinstance(a, Buffer):
                self._buffer_classes.add(a.__class__)
                native = True
            else:  # a contiguous foreign array: its cached buffer, if it has one
                found = probed_buffer(a, dev, dtype, k >= len(args)) \
                    if self._cai and n is None else None
                if found is None:
                    return False
                a, stream, shape = found
                shapes.add(shape)
                streams.append(stream)
            if a.device is not dev or a._freed or a.dtype is not dtype:
                return False
            held = a.nbytes // dtype.itemsize
            if count is None:
                count = held
            if held < count or (n is None and held != count):
                return False
            values.append(a)
            spans.append((a.addr, dtype.itemsize, k >= len(args)))
        if count is None or len(shapes) > 1 or (native and shapes and
                                                len(next(iter(shapes))) != 1):
            return False  # broadcasting, or shapes that do not match: the general path
        for j, (addr, size, written) in enumerate(spans):
            if not written:
                continue
            for i, (other, osize, other_written) in enumerate(spans):
                if i != j and addr < other + count * osize and other < addr + count * size \
                        and (other_written or (other, osize) != (addr, size)):
                    return False
        if count:
            values.append(count)
            if P is not None:
                values.append(p)
            kernel, grid = self._kernel(None, count)
            s = self._stream
            ours = dev.stream_handle(s) if streams else None
            waits = [t for t in dict.fromkeys(streams)
                     if t != ours and t not in dev.ordered_streams]
            for theirs in waits:
                dev.order_streams(ours, theirs)
            with self._launching:
                kernel.launch(grid, self.block_size, values, stream=s)
            for theirs in waits:
                dev.order_streams(theirs, ours)
        return True

    def _allocate(self, k: int, shape: tuple[int, ...], host: bool) -> tuple[Any, Operand]:
        dtype, name = self._out_dtypes[k], f"out{k}"
        if host:
            arr = np.empty(shape, dtype)
            return arr, host_operand(arr, name, dtype, True)
        count = int(np.prod(shape, dtype=np.int64))
        buf = self.device.alloc(count * dtype.itemsize)
        buf.dtype = dtype
        view = _Allocated(buf, dtype, shape)
        return view, Operand(name, dtype, shape, c_strides(shape), buf.addr, False,
                             buffer=buf, keep=view)

    def _staged(self, values: list[Any], ins: list[Operand], outs: list[Operand],
                p: Any) -> None:
        """Host arrays on a device that does not compute on host memory: upload, launch,
        synchronize, download."""
        s = self._stream
        temps: list[Buffer] = []
        keep: list[np.ndarray] = []  # host memory an asynchronous upload reads
        try:
            staged = {id(o): self._upload(o, temps, keep) for o in ins}
            dev_outs = [self._scratch(o.name, o.dtype, o.shape, temps) for o in outs]
            self._launch([staged[id(v)] if isinstance(v, Operand) else v for v in values],
                         list(staged.values()), dev_outs, p)
            copies = []
            for host_op, dev_op in zip(outs, dev_outs, strict=True):
                dst = host_op.host
                if dst is None or not dst.size:
                    continue
                into = dst if dst.flags.c_contiguous else np.empty(dst.shape, dst.dtype)
                dev_op.buffer.download_at_async(0, into.reshape(-1).view(np.uint8), stream=s)
                if into is not dst:
                    copies.append((dst, into))
            s.synchronize()
            for dst, into in copies:
                np.copyto(dst, into)
        finally:
            for buf in temps:
                buf.free()

    def _upload(self, o: Operand, temps: list[Buffer], keep: list[np.ndarray]) -> Operand:
        """``o``'s span in device memory (compacted first when it is mostly gaps)."""
        arr = o.host
        assert arr is not None
        lo, hi = o.span()
        if o.size and hi - lo + 1 > COMPACT_RATIO * o.size + 1:
            arr = np.ascontiguousarray(arr)
            o = host_operand(arr, o.name, o.dtype, False)
            lo, hi = o.span()
        buf = self.device.alloc(max(o.span_bytes()[1], 1))
        buf.dtype = o.dtype
        temps.append(buf)
        if o.size:
            span = _span_view(arr, o)
            keep.append(span)
            buf.upload_at_async(0, span.view(np.uint8), stream=self._stream)
        return Operand(o.name, o.dtype, o.shape, o.strides, buf.addr - lo * o.dtype.itemsize,
                       False, buffer=buf, keep=buf)

    def _scratch(self, name: str, dtype: np.dtype, shape: tuple[int, ...],
                 temps: list[Buffer]) -> Operand:
        """A C-contiguous device array for an output ``run`` downloads."""
        buf = self.device.alloc(max(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize, 1))
        buf.dtype = dtype
        temps.append(buf)
        return Operand(name, dtype, shape, c_strides(shape), buf.addr, False, buffer=buf,
                       keep=buf)

    def _launch(self, values: list[Any], ins: list[Operand], outs: list[Operand],
                p: Any) -> None:
        """Pick the variant for the operands' layout and launch it on the program's stream."""
        layout = plan(ins, outs)
        if layout.size == 0:
            return
        arrays = [v for v in values if isinstance(v, Operand)] + outs
        foreign = [o for o in arrays if o.stream is not None]
        kernel, grid = self._kernel(None if layout.flat else layout.ndim, layout.size)
        if layout.flat:
            tail: list[Any] = [] if self.spec.params is None else [p]
        else:
            strides: list[int] = []
            offsets = []
            for o in arrays:
                strides += o.iter_strides
                offsets.append(-o.span()[0])
            fields: dict[str, Any] = {"shape": layout.shape, "strides": tuple(strides),
                                      "offsets": tuple(offsets)}
            if self.spec.params is not None:
                fields["user"] = p
            tail = [self._metas[kernel](**fields)]
        args = [self._pointer(v) if isinstance(v, Operand) else v for v in values]
        args += [self._pointer(o) for o in outs]
        args.append(layout.size)
        args += tail
        bs = self.block_size
        s = self._stream
        if foreign:
            order_before(self.device, s, foreign)  # type: ignore[arg-type]
        with self._launching:
            kernel.launch(grid, bs, args, stream=s)
        if foreign:
            order_after(self.device, s, foreign)  # type: ignore[arg-type]

    def _pointer(self, o: Operand) -> Any:
        """The buffer a kernel's pointer parameter gets for ``o``: its memory from its
        lowest-addressed element."""
        first, nbytes = o.span_bytes()
        if o.buffer is not None and first == o.buffer.addr:
            return o.buffer
        if self._host:
            assert o.host is not None
            buf = self.device.borrow(_span_view(o.host, o))
        else:
            buf = self.device._borrow(first, max(nbytes, 1))
        buf.dtype = o.dtype
        buf.keep = o.keep
        return buf

    def __repr__(self) -> str:
        return f"<ElementwiseProgram {self.spec.name!r} on {self.device!r}>"


def _span_view(arr: np.ndarray, o: Operand) -> np.ndarray:
    """A 1-D contiguous view of ``arr``'s memory from its lowest-addressed element to its
    highest (the elements between included)."""
    lo, hi = o.span()
    if not o.size:
        return arr.reshape(-1)[:0]
    corner = tuple(slice(n - 1, n) if s < 0 else slice(0, 1)
                   for n, s in zip(arr.shape, o.strides, strict=True))
    first = arr[corner] if arr.ndim else arr.reshape(1)
    return np.lib.stride_tricks.as_strided(first, shape=(hi - lo + 1,),
                                           strides=(o.dtype.itemsize,))

"""``KernelProgram``: one kernel loaded on one device; ``launch`` is its kind's front end.

``launch`` is the kind's checked front end bound to the program
(:meth:`gompute_core.kinds.base.Kind.launch`; map/map_indexed ``(buf, n, p)``;
map_to ``(inp, out, n, p)``; zip ``(a, b, out, n, p)``; reduce
``(data, n, partials, blocks, p)``; gather/scatter ``(src, idx, out, n,
bound)``). It checks its arguments in O(1) with the pieces here — each buffer
belongs to this device, is not freed and holds what the launch touches; an output
overlaps no input the way ``run`` refuses (partially for map_to/zip, at all for
gather/scatter); counts
are ``u64``; ``1 <= blocks <= 1024`` for a reduce — then patches the program's
:class:`~gompute_core.abi.entry_args.ArgBuffer` and calls the backend's
launcher. A lock makes patch-and-launch one step, so threads sharing a
program never launch with each other's arguments. No allocation, copy or
synchronization happens here.

Wherever a buffer is taken, a foreign array on the kernel's device (a CuPy
array, a torch tensor, ...) is taken too, in place, with the same checks
(:mod:`gompute_core.kinds.foreign`); a buffer of the program's own device
never goes through that path.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from ..abi.entry_args import ArgBuffer, arg_layout
from ..backend.buffer import Buffer
from ..backend.launch_params import ParamsCache
from ..errors import InvalidArgument
from ..ir.kernel import KernelIR
from ..plugins.records import Artifact
from ..runtime import checks
from .base import Kind, kind_named
from .foreign import PROBES, launch_operand, probed_operand

if TYPE_CHECKING:
    from ..backend.device import Device, Stream

WRITTEN = frozenset({"buf", "out", "partials"})
"""The launch arguments a kernel writes (a read-only foreign array is refused there)."""

_STALE = object()
"""``_last_p`` when the params must be converted again."""


def refuse_closed(*args: Any, **kwargs: Any) -> Any:
    """What a closed handle's (and its program's) launch, run and enqueue become."""
    raise InvalidArgument("this kernel handle is closed")



def device_stream(device: Any, value: Any) -> Stream:
    """``value`` when it is a stream of ``device`` (a program's ``stream`` setter), else
    ``InvalidArgument``."""
    if getattr(value, "device", None) is not device:
        raise InvalidArgument(f"stream: expected a stream of {device!r}, got {value!r}")
    return value

class KernelProgram:
    """A kernel's entry point on one device; ``launch`` is the checked per-kind call."""

    def __init__(self, device: Device, artifact: Artifact, kernel: KernelIR) -> None:
        self.device, self.artifact, self.kernel = device, artifact, kernel
        self.kind: Kind = kind_named(kernel.kind)
        """The kernel's kind (equal to its name, ``kernel.kind``)."""
        self.block_size = kernel.block_size
        self.args = ArgBuffer(arg_layout(kernel))
        self._packs = device.packs_arguments
        self._host = not device.packs_arguments
        self.entry = device._load(artifact, kernel, self.args)
        """The backend's launcher for this kernel (``entry(grid, block, shared_bytes,
        stream)``: the launch primitive raw kernels share)."""
        self._launcher = self.entry
        self._block = (kernel.block_size, 1, 1)
        self._stream: Stream = device.stream
        self._lock = threading.Lock()
        self._acquire, self._release = self._lock.acquire, self._lock.release
        """The lock's own methods, for the hot launch paths (``acquire``, ``try``, ``finally:
        release`` costs less than a ``with`` block)."""
        self._params = ParamsCache(kernel, bytes if self._packs else
                                   device.params_converter(kernel))
        self._last_p: Any = _STALE
        self.dtypes = {role: np.dtype(t) for role, t in kernel.value_types}
        self._size = {role: d.itemsize for role, d in self.dtypes.items()}
        self._max_blocks = device.max_grid_blocks(kernel.block_size)
        self._per_block = self.kind.per_block(kernel)
        self._last_n, self._last_grid3 = -1, (1, 1, 1)
        self._t_size = self._size.get("T", 0)
        self._pack = self.args.pack_into
        self._data = self.args.data
        self._interop = device.dlpack_device_type is not None
        self._cai = device.dlpack_device_type == 2  # kDLCUDA: the CUDA Array Interface
        self._probes = PROBES if self._cai else {}
        """The probes of foreign array types, for a device that takes them."""
        self._t_dtype = self.dtypes.get("T")
        self._ours = device.stream_handle(self._stream)
        """The native handle of the program's stream (foreign streams are ordered with it)."""
        self._unordered = self._free_streams()
        """Producer streams a launch needs no ordering with (none, ours, the device's
        ordered ones)."""
        self._signals: list[int] = []
        """Foreign streams to make wait for this launch (filled by foreign operands)."""
        self.launch = self.kind.launch(self)
        """The kind's checked launch, bound to this program."""

    def close(self) -> None:
        """Refuse every later launch (the handle owning the program was closed): ``launch``
        and ``enqueue`` raise ``InvalidArgument``."""
        self.launch = self.enqueue = refuse_closed

    # ---- stream ------------------------------------------------------------------------------
    @property
    def stream(self) -> Stream:
        """The stream ``launch`` enqueues on (settable to another stream of the device)."""
        return self._stream

    @stream.setter
    def stream(self, value: Stream) -> None:
        self._stream = device_stream(self.device, value)
        self._ours = self.device.stream_handle(value)
        self._unordered = self._free_streams()

    def _free_streams(self) -> frozenset[int | None]:
        return self.device.ordered_streams | {None, self._ours}

    # ---- the pieces every launch shares --------------------------------------------------------
    def grid(self, count: int) -> int:
        """Blocks of an elementwise launch over ``count`` elements on this device."""
        return self.grid3(count)[0]

    def grid3(self, count: int) -> tuple[int, int, int]:
        """:meth:`grid` as the launcher's ``(x, 1, 1)`` (kept for the last count)."""
        if count != self._last_n:
            blocks = -(-count // self._per_block)
            self._last_grid3 = (max(1, min(blocks, self._max_blocks)), 1, 1)
            self._last_n = count
        return self._last_grid3

    def move_grid(self, count: int) -> int:
        """Blocks of a gather/scatter launch over ``count`` indices (one per thread)."""
        return max(1, min(-(-count // self.block_size), self._max_blocks))

    def _set_params(self, p: Any) -> None:
        value = self._params.get(p)
        if self._packs:
            self.args.set_params(value)
        else:
            self.args.params = value
        self._last_p = p if self._params.holds(p) else _STALE

    def _operand(self, buf: Any, name: str, need: int, role: str) -> Any:
        """O(1): ``buf``'s address (or typed host array) after checking it is a live buffer
        of this device holding ``need`` elements of ``role``'s type."""
        try:
            ok = buf.device is self.device and not buf._freed and \
                need * self._size[role] <= buf.nbytes
        except AttributeError:
            ok = False
        if not ok:
            return self._other(buf, name, need, role)
        if self._host:
            return self.device.host_array(buf, self.dtypes[role])  # type: ignore[attr-defined]
        return buf.addr

    def _other(self, buf: Any, name: str, need: int, role: str) -> Any:
        """What failed the buffer check: a foreign array's address, else the refusal."""
        if self._interop and (type(buf) in PROBES or not isinstance(buf, Buffer)):
            return launch_operand(self, buf, name, need, role, name in WRITTEN)
        raise self._refusal(buf, name, need, role)

    _probed = probed_operand
    """:func:`~gompute_core.kinds.foreign.probed_operand` for a front end's inlined path."""

    def _refusal(self, buf: Buffer, name: str, need: int, role: str) -> InvalidArgument:
        if not isinstance(buf, Buffer):
            return InvalidArgument(f"launch: {name} must be a {self.device.backend} buffer "
                                   f"(from alloc), got {type(buf).__name__}")
        if buf.device is not self.device:
            return InvalidArgument(f"launch: {name} is a buffer of {buf.device!r}; this "
                                   f"kernel runs on {self.device!r}")
        if buf._freed:
            return InvalidArgument(f"launch: {name} is a buffer used after free()")
        return InvalidArgument(f"launch: {name} holds {buf.nbytes // self._size[role]} "
                               f"elements, the launch needs {need}")

    def enqueue(self, stream: Stream, grid: int, values: tuple[Any, ...], p: Any) -> None:
        """Launch with already-checked ``values`` (addresses and counts in entry order; typed
        host arrays for pointers on a host-memory device) on ``stream``: the run path's
        entry, which validated everything itself."""
        with self._lock:
            if p is not self._last_p:
                self._set_params(p)
            if self._packs:
                self.args.pack(*values)
            else:
                self.args.values = values
            self._launcher((grid, 1, 1), self._block, 0, stream)

    def _go(self, grid: int, values: tuple[Any, ...]) -> None:
        """Patch the arguments and launch on the program's stream (lock held); then make
        the foreign operands' streams wait for it."""
        if self._packs:
            self.args.pack(*values)
        else:
            self.args.values = values
        try:
            self._launcher((grid, 1, 1), self._block, 0, self._stream)
        finally:
            if self._signals:
                self._signal()

    def _overlap(self, x_obj: Any, x: Any, x_role: str, x_nbytes: int, out_obj: Any, out: Any,
                 out_nbytes: int, partial_only: bool) -> None:
        """Refuse the output operand ``out`` (of argument ``out_obj``) overlapping ``x`` as
        ``run`` refuses its arrays (:func:`~gompute_core.runtime.checks.refuse_overlap`), on
        the byte spans the launch touches. The launches call it only when ``x`` is not an
        address (a host-memory device's arrays) or the two spans meet."""
        if x.__class__ is not int:
            dev = self.device
            if getattr(x_obj, "device", None) is dev and getattr(out_obj, "device", None) is dev:
                x, out = x_obj.addr, out_obj.addr  # two buffers of this device: their addresses
        overlap = checks.operands_overlap(x, x_nbytes, out, out_nbytes)
        if overlap[0]:
            try:
                checks.refuse_overlap(overlap, x_role, "out", partial_only, "launch: ")
            except InvalidArgument:
                self._signals.clear()  # nothing is launched: no foreign stream waits for it
                raise

    def _signal(self) -> None:
        signals, self._signals = self._signals, []
        if self._ours is not None:
            for stream in dict.fromkeys(signals):
                self.device.order_streams(stream, self._ours)

    def __repr__(self) -> str:
        return f"<KernelProgram {self.kernel.name!r} ({self.kind}) on {self.device!r}>"

"""Foreign arrays as ``launch`` and ``run`` operands (CuPy, torch, numba, JAX, NumPy...).

``launch`` takes, wherever it takes a buffer, any object
:func:`gompute_core.interop.describe` understands that lives on the kernel's
device, and launches on its memory in place after the checks a NumPy
argument gets. Stream order, per the CUDA Array Interface v3: the program's
stream waits for the producer's reported stream before the launch, and that
stream waits for ours after it (both free when the producer uses the legacy
default stream, which our blocking streams are ordered with). A DLPack
producer orders itself: its ``__dlpack__`` gets our stream.

The hot path: what a CUDA-Array-Interface object describes is parsed once
and cached per object (weakly, validated on every launch by what the
protocol reports: pointer, shape, type, strides); the protocol is read each
launch, so its stream is always the current one. A *probe* registered for a
type (:data:`PROBES`, CuPy's built in) reads the pointer and current stream
more cheaply than building the protocol's dictionary.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import dlpack
from ..errors import InvalidArgument
from ..interop import Foreign, borrow, cai_key, check, describe, device_type, from_cai, locate

if TYPE_CHECKING:
    from ..backend.buffer import Buffer
    from ..backend.device import Device, Stream
    from .program import KernelProgram

Probe = Callable[[Any], tuple[Any, "int | None", "dict[str, Any] | None"]]
"""``probe(obj) -> (key, stream, cai or None)``: what identifies the memory, and the
producer's current stream."""


def _cai_probe(obj: Any) -> tuple[Any, int | None, dict[str, Any]]:
    cai = obj.__cuda_array_interface__
    return cai_key(cai), cai.get("stream") if cai.get("version", 0) >= 3 else None, cai


def _cupy_probe() -> Probe:
    import cupy

    current = cupy.cuda.get_current_stream

    def probe(a: Any) -> tuple[Any, int | None, None]:
        # a CuPy array's type, size and contiguity are fixed for its life; its stream is
        # CuPy's current one (0: the legacy default stream, which the protocol calls 1)
        return (a.data.ptr, a.size), current().ptr or 1, None

    return probe


PROBES: dict[type, Probe | None] = {}
"""Per type: its probe, or None for a type without the CUDA Array Interface. A probe
raising ``AttributeError`` (a torch CPU tensor's interface does) sends that object the
slow way (DLPack, host memory)."""


def probe_for(obj: Any) -> Probe | None:
    """The probe of ``obj``'s type (found once per type)."""
    cls = type(obj)
    try:
        return PROBES[cls]
    except KeyError:
        pass
    probe: Probe | None = None
    if cls.__module__.startswith("cupy") and cls.__name__ == "ndarray":
        probe = _cupy_probe()
    elif hasattr(cls, "__cuda_array_interface__"):
        probe = _cai_probe
    PROBES[cls] = probe
    return probe


class _Entry:
    """One foreign object's checked description on one device."""

    __slots__ = ("ref", "device", "key", "addr", "size", "dtype", "readonly")

    def __init__(self, obj: Any, device: Device, key: Any, f: Foreign) -> None:
        ident = id(obj)
        try:
            self.ref: Any = weakref.ref(obj, lambda _: _cache.pop(ident, None))
        except TypeError:  # not weakly referenceable: described again on every launch
            self.ref = _dead
        self.device, self.key, self.addr = device, key, f.addr
        self.size, self.dtype, self.readonly = f.size, f.dtype, f.readonly
        if self.ref is not _dead:
            _cache[ident] = self


_cache: dict[int, _Entry] = {}


def _dead() -> None:
    """The ``ref`` of an entry that is never cached: it matches no object."""


def launch_operand(program: KernelProgram, obj: Any, name: str, need: int, role: str,
                   writes: bool) -> Any:
    """``obj``'s device address (a typed flat NumPy array on a host-memory device) for a
    launch needing ``need`` elements of ``role``'s type; the program's stream is ordered
    after the producer's, and the producer's stream queued to wait for ours after the
    launch (``program._signals``)."""
    probe = PROBES.get(type(obj), probe_for) if program._cai else None
    if probe is probe_for:
        probe = probe_for(obj)
    if probe is not None:
        try:
            key, stream, cai = probe(obj)
        except AttributeError:  # this object has no CUDA Array Interface after all
            return _described(program, obj, name, need, role, writes)
        e = _cache.get(id(obj))
        # the hot path: a cached object whose memory and type are unchanged
        if e is None or e.key != key or e.device is not program.device or \
                e.ref() is not obj or e.dtype is not program.dtypes[role] or need > e.size or \
                (writes and e.readonly):
            e = _entry(program, obj, key, cai, name, need, role, writes)
        if stream is not None and stream != program._ours and \
                stream not in program._ordered:
            program.device.order_streams(program._ours, stream)
            program._signals.append(stream)
        return e.addr
    return _described(program, obj, name, need, role, writes)


def _entry(program: KernelProgram, obj: Any, key: Any, cai: dict[str, Any] | None, name: str,
           need: int, role: str, writes: bool) -> _Entry:
    """Describe and check a CUDA Array Interface object; cached when it can be."""
    label = f"launch: {name}"
    f = from_cai(obj, cai if cai is not None else obj.__cuda_array_interface__, label)
    _checked(f, label, program.dtypes[role], writes, need, program.device)
    return _Entry(obj, program.device, key, f)


def _described(program: KernelProgram, obj: Any, name: str, need: int, role: str,
               writes: bool) -> Any:
    """The path of everything else: host memory, DLPack (whose producer orders our stream
    itself: it gets our stream's handle)."""
    device, label = program.device, f"launch: {name}"
    kind = device_type(device)
    f = describe(obj, label, kind, None if kind == dlpack.KDL_CPU else program._ours)
    if f.host is not None and kind != dlpack.KDL_CPU:
        raise InvalidArgument(f"{label}: the array is in host memory; this kernel runs on "
                              f"{device!r} (upload it, or pass it to run)")
    _checked(f, label, program.dtypes[role], writes, need, device)
    return f.host if program._host else f.addr


def _checked(f: Foreign, label: str, dtype: np.dtype, writes: bool, need: int,
             device: Device) -> None:
    check(f, label, dtype, writes)
    locate(f, device, label)
    if need > f.size:
        raise InvalidArgument(f"{label} holds {f.size} elements, the launch needs {need}")


class DeviceArray:
    """A foreign array on the kernel's device, as ``run`` uses it in place."""

    __slots__ = ("buffer", "addr", "shape", "size", "nbytes", "stream", "obj")

    def __init__(self, f: Foreign, buffer: Buffer, obj: Any) -> None:
        self.buffer, self.addr, self.shape, self.size = buffer, f.addr, f.shape, f.size
        self.nbytes, self.stream, self.obj = f.nbytes, f.stream, obj

    def overlaps(self, other: DeviceArray) -> tuple[bool, bool]:
        """(any byte shared, the very same span)."""
        shared = self.addr < other.addr + other.nbytes and other.addr < self.addr + self.nbytes
        return shared and bool(self.nbytes and other.nbytes), \
            (self.addr, self.nbytes) == (other.addr, other.nbytes)


def run_array(arg: Any, role: str, dtype: np.dtype, writable: bool,
              device: Device, stream: Stream) -> np.ndarray | DeviceArray:
    """A foreign ``run`` argument: a flat NumPy view of host memory (any device's ``run``
    takes host arrays), or a :class:`DeviceArray` on ``device``; same checks as NumPy's."""
    kind = device_type(device)
    ours = device.stream_handle(stream) if kind not in (None, dlpack.KDL_CPU) else None
    f = describe(arg, role, kind, ours)
    check(f, role, dtype, writable)
    if f.host is not None:
        return f.host
    locate(f, device, role)
    return DeviceArray(f, borrow(f, device), arg)


def order_before(device: Device, stream: Stream, arrays: tuple[DeviceArray, ...]) -> None:
    """Make ``stream`` wait for each array's producer stream."""
    ours = device.stream_handle(stream)
    for a in arrays:
        if a.stream is not None and a.stream != ours and \
                a.stream not in device.ordered_streams:
            device.order_streams(ours, a.stream)


def order_after(device: Device, stream: Stream, arrays: tuple[DeviceArray, ...]) -> None:
    """After the launch: each producer stream waits for ``stream``; when a producer's
    stream is unknown (it reported none, or DLPack), ``stream`` is synchronized."""
    ours = device.stream_handle(stream)
    if ours is None:
        return
    if any(a.stream is None for a in arrays):
        stream.synchronize()
        return
    for theirs in dict.fromkeys(a.stream for a in arrays):
        if theirs != ours and theirs not in device.ordered_streams:
            device.order_streams(theirs, ours)

"""Foreign arrays as ``launch`` and ``run`` operands (CuPy, torch, numba, JAX, NumPy...).

``launch`` takes, wherever it takes a buffer, any object
:func:`gompute_core.interop.describe` understands that lives on the kernel's
device, and launches on its memory in place after the checks a NumPy
argument gets. Stream order, per the CUDA Array Interface v3: the program's
stream waits for the producer's reported stream before the launch, and that
stream waits for ours after it (both free when the producer uses the legacy
default stream, which our blocking streams are ordered with). A DLPack
producer orders itself: its ``__dlpack__`` gets our stream.

The hot path, shared by ``launch`` and ``run``: what a CUDA-Array-Interface
object describes is parsed, checked and located (``cuPointerGetAttribute``)
once and cached per object (weakly, validated on every call by what the
protocol reports: pointer, shape, type, strides; and for the device, element
type and writability it was checked for); the protocol is read each call, so
its stream is always the current one. A *probe* registered for a type
(:data:`PROBES`, CuPy's built in) reads the pointer, size and current stream
more cheaply than building the protocol's dictionary. An interface before v3
names no stream (JAX's): such an object that speaks DLPack is taken through
``__dlpack__`` instead (:func:`gompute_core.interop.orders_itself`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import dlpack
from ..errors import InvalidArgument
from ..interop import (
    Foreign,
    cai_key,
    check,
    describe,
    device_type,
    from_cai,
    locate,
    orders_itself,
)

if TYPE_CHECKING:
    from ..backend.device import Device, Stream
    from .program import KernelProgram

Probe = Callable[[Any], tuple[Any, "int | None", "dict[str, Any] | None"]]
"""``probe(obj) -> (key, stream, cai or None)``: what identifies the memory, and the
producer's current stream."""


def _cai_probe(obj: Any) -> tuple[Any, int | None, dict[str, Any]]:
    try:
        cai = obj.__cuda_array_interface__
    except Exception as exc:  # torch's raises for bfloat16: described (and refused) instead
        raise AttributeError("no usable CUDA Array Interface") from exc
    if not orders_itself(obj, cai):
        PROBES[type(obj)] = None  # its type's objects are described (DLPack) from now on
        raise AttributeError("a CUDA Array Interface before v3: taken through DLPack")
    return cai_key(cai), cai.get("stream") if cai.get("version", 0) >= 3 else None, cai


def _cupy_probe() -> Probe:
    import cupy

    return array_probe(cupy.cuda.get_current_stream)


def array_probe(current: Callable[[], Any]) -> Probe:
    """The probe of a CuPy-style array type: only the stream ``current()`` returns (its
    ``ptr``; 0, the legacy default stream, is the protocol's 1). Nothing identifies the
    memory (the key is None): such an array's memory, size, element type and contiguity
    are fixed for its life (CuPy's ``data``, ``size`` and ``dtype`` are read-only and
    setting ``shape`` keeps the size), and a cached description never outlives its
    object. Re-running ``__init__`` on a live array is not supported."""

    def probe(a: Any) -> tuple[None, int, None]:
        return None, current().ptr or 1, None

    return probe


PROBES: dict[type, Probe | None] = {}
"""Per type: its probe, or None for a type without the CUDA Array Interface. A probe
raising ``AttributeError`` (a torch CPU tensor's interface does; so does an interface
before v3 on an object with ``__dlpack__``) sends that object the described way
(DLPack, host memory)."""


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
    """One foreign object's checked description on one device, for one element type and
    writability, cached under the object's ``id`` while the object lives: the weak
    reference's callback drops it when the object dies, before its ``id`` can be another
    object's (an object that cannot be weakly referenced is never cached)."""

    __slots__ = ("ref", "device", "key", "addr", "size", "dtype", "readonly", "shape",
                 "_buffer")

    def __init__(self, obj: Any, device: Device, key: Any, f: Foreign) -> None:
        ident = id(obj)
        try:
            self.ref: Any = weakref.ref(obj, lambda _: _cache.pop(ident, None))
        except TypeError:  # not weakly referenceable: described again on every launch
            self.ref = _dead
        self.device, self.key, self.addr = device, key, f.addr
        self.size, self.dtype, self.readonly = f.size, f.dtype, f.readonly
        self.shape = f.shape
        self._buffer: Any = None
        if self.ref is not _dead:
            _cache[ident] = self

    @property
    def nbytes(self) -> int:
        """Bytes of the array."""
        return self.size * self.dtype.itemsize

    def buffer(self) -> Any:
        """A buffer of the device over the array's memory, typed ``dtype`` (made once; it
        owns nothing and holds no reference to the array, whose caller keeps it alive)."""
        buf = self._buffer
        if buf is None:
            buf = self._buffer = self.device._borrow(self.addr, max(self.nbytes, 1))
            buf.dtype, buf.readonly = self.dtype, self.readonly
        return buf


_cache: dict[int, _Entry] = {}


def _dead() -> None:
    """The ``ref`` of an entry that is never cached: it matches no object."""


def _probed(obj: Any, probe: Probe, device: Device, dtype: np.dtype, writes: bool,
            label: str) -> tuple[_Entry, int | None]:
    """``obj``'s checked description (cached) and its producer's current stream: the
    probe is read on every call, and a cached entry serves only while it reports the
    memory the entry was checked for, on ``device``, typed ``dtype``, writable where
    ``writes``. ``AttributeError`` when ``obj`` is to be described the other way."""
    key, stream, cai = probe(obj)
    e = _cache.get(id(obj))
    if e is None or e.key != key or e.device is not device or \
            e.dtype is not dtype or (writes and e.readonly):
        e = _entry(obj, key, cai, device, dtype, writes, label)
    return e, stream


def probed_buffer(obj: Any, device: Device, dtype: np.dtype, writes: bool
                  ) -> tuple[Any, int, tuple[int, ...]] | None:
    """A C-contiguous CUDA Array Interface object on ``device`` of element type ``dtype``
    (writable where ``writes``) as a cached buffer over its memory, with its producer's
    stream and its shape (read from the object where it has one: a CuPy array's may be
    set in place); None for anything else (the caller describes it the general way, which
    handles strides and raises the precise error)."""
    probe = PROBES.get(type(obj), probe_for)
    if probe is probe_for:
        probe = probe_for(obj)
    if probe is None:
        return None
    try:
        e, stream = _probed(obj, probe, device, dtype, writes, "launch")
        shape = tuple(getattr(obj, "shape", e.shape))
    except (AttributeError, InvalidArgument, TypeError):
        return None
    return (e.buffer(), stream, shape) if stream is not None else None


def _entry(obj: Any, key: Any, cai: dict[str, Any] | None, device: Device, dtype: np.dtype,
           writes: bool, label: str) -> _Entry:
    """Describe and check a CUDA Array Interface object; cached when it can be."""
    f = from_cai(obj, cai if cai is not None else obj.__cuda_array_interface__, label)
    check(f, label, dtype, writes)
    locate(f, device, label)
    return _Entry(obj, device, key, f)


def launch_operand(program: KernelProgram, obj: Any, name: str, need: int, role: str,
                   writes: bool) -> Any:
    """``obj``'s device address (a typed flat NumPy array on a host-memory device) for a
    launch needing ``need`` elements of ``role``'s type; the program's stream is ordered
    after the producer's, and the producer's stream queued to wait for ours after the
    launch (``program._signals``)."""
    probe = PROBES.get(type(obj), probe_for) if program._cai else None
    if probe is probe_for:
        probe = probe_for(obj)
    if probe is None:
        return _described(program, obj, name, need, program.dtypes[role], writes)
    return probed_operand(program, obj, probe, name, need, program.dtypes[role], writes)


def probed_operand(program: KernelProgram, obj: Any, probe: Probe, name: str, need: int,
                   dtype: np.dtype, writes: bool) -> Any:
    """:func:`launch_operand` for an object whose type's probe the caller looked up
    (``dtype``: the role's element type)."""
    try:
        key, stream, cai = probe(obj)
    except AttributeError:  # this object is to be described the other way
        return _described(program, obj, name, need, dtype, writes)
    # the hot path: _probed's lookup written out (a cached object whose memory is unchanged)
    e = _cache.get(id(obj))
    if e is None or e.key != key or e.device is not program.device \
            or e.dtype is not dtype or (writes and e.readonly):
        e = _entry(obj, key, cai, program.device, dtype, writes, f"launch: {name}")
    if need > e.size:
        raise InvalidArgument(f"launch: {name} holds {e.size} elements, the launch needs "
                              f"{need}")
    if stream not in program._unordered:
        program.device.order_streams(program._ours, stream)
        program._signals.append(stream)
    return e.addr


def _described(program: KernelProgram, obj: Any, name: str, need: int, dtype: np.dtype,
               writes: bool) -> Any:
    """The path of everything else: host memory, DLPack (whose producer orders our stream
    itself: it gets our stream's handle)."""
    device, label = program.device, f"launch: {name}"
    kind = device_type(device)
    f = describe(obj, label, kind, None if kind == dlpack.KDL_CPU else program._ours)
    if f.host is not None and kind != dlpack.KDL_CPU:
        raise InvalidArgument(f"{label}: the array is in host memory; this kernel runs on "
                              f"{device!r} (upload it, or pass it to run)")
    _checked(f, label, dtype, writes, need, device)
    return f.host if program._host else f.addr


def _checked(f: Foreign, label: str, dtype: np.dtype, writes: bool, need: int,
             device: Device) -> None:
    check(f, label, dtype, writes)
    locate(f, device, label)
    if need > f.size:
        raise InvalidArgument(f"{label} holds {f.size} elements, the launch needs {need}")


class DeviceArray:
    """A foreign array on the kernel's device, as ``run`` uses it in place (``keep``, the
    producer's object or consumed DLPack tensor, keeps the memory alive)."""

    __slots__ = ("addr", "size", "nbytes", "stream", "keep")

    def __init__(self, addr: int, size: int, nbytes: int, stream: int | None,
                 keep: Any) -> None:
        self.addr, self.size, self.nbytes, self.stream, self.keep = addr, size, nbytes, \
            stream, keep



def spans_overlap(a: int, a_nbytes: int, b: int, b_nbytes: int) -> tuple[bool, bool]:
    """(any byte shared, the very same span) of ``a_nbytes`` bytes at ``a`` and ``b_nbytes``
    at ``b``."""
    shared = a < b + b_nbytes and b < a + a_nbytes and a_nbytes > 0 and b_nbytes > 0
    return shared, a == b and a_nbytes == b_nbytes


def run_array(arg: Any, role: str, dtype: np.dtype, writable: bool,
              device: Device, stream: Stream) -> np.ndarray | DeviceArray:
    """A foreign ``run`` argument: a flat NumPy view of host memory (any device's ``run``
    takes host arrays), or a :class:`DeviceArray` on ``device``; same checks as NumPy's.
    A CUDA Array Interface object takes the cached, probed path ``launch`` takes."""
    kind = device_type(device)
    if kind == dlpack.KDL_CUDA:
        probe = PROBES.get(type(arg), probe_for)
        if probe is probe_for:
            probe = probe_for(arg)
        if probe is not None:
            try:
                e, theirs = _probed(arg, probe, device, dtype, writable, role)
            except AttributeError:
                pass
            else:
                return DeviceArray(e.addr, e.size, e.nbytes, theirs, arg)
    ours = device.stream_handle(stream) if kind not in (None, dlpack.KDL_CPU) else None
    f = describe(arg, role, kind, ours)
    check(f, role, dtype, writable)
    if f.host is not None:
        return f.host
    locate(f, device, role)
    return DeviceArray(f.addr, f.size, f.nbytes, f.stream, f.keep)


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

"""``g.RawKernel``: a raw kernel loaded on one backend's device, and launched checked.

Every check happens here, once for every backend, before the driver sees
anything: the grid and block (against the block shape the kernel declares,
and the device's limits through :meth:`~gompute_core.backend.Device.check_launch`,
the check spec kernels get when loaded), the dynamic shared memory, each argument's type
against the signature (a ``float64`` where an ``f32`` is declared is an
``InvalidArgument`` naming the argument's index and name: never a silent
reinterpretation), buffers of another device or freed, and the element
counts the kernel declares as bounds. The backend only loads the artifact
and launches (:meth:`~gompute_core.backend.Device._load`, the launch primitive spec
kernels share).
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..abi import pack
from ..abi.codecs import float_in_range, int_in_range
from ..abi.entry_args import ArgBuffer, signature_layout
from ..backend.buffer import Buffer
from ..compilation import compile_artifact
from ..errors import InvalidArgument, KernelNotFound, Unsupported
from ..interop import as_buffer
from ..ir.checked import Site, instrument
from ..ir.kernel import KernelIR
from ..ir.nodes import Atomic, IRType, PointerType, SharedType, Store, StructType
from ..kinds.support import runs_raw, supported_kinds
from ..plugins import manager
from ..plugins.records import Artifact, CompileRequest
from ..runtime.compile import (
    PrebuiltRaw,
    check_contract,
    compile_options,
    contracted,
    find_prebuilt,
    find_prebuilt_raw,
)
from ..runtime.dim3 import Dim3
from ..types import as_scalar_type, is_float, is_int, short_name
from .binding import PackedBinder
from .bounds import Bound
from .checked import (
    FaultRecord,
    checked_arguments,
    checked_slots,
    checked_unavailable,
    want_checked,
)
from .kernel import RawKernelDef, block_shape, define_source

__all__ = ["RawKernel", "raw_kernel_by_name", "resolve"]


def resolve(kernel: Any) -> RawKernelDef | str:
    """``kernel`` as a raw kernel definition; a name registered in this process resolves
    to its definition, an unknown name is returned as is (it may still be prebuilt)."""
    if isinstance(kernel, RawKernelDef):
        return kernel
    if not isinstance(kernel, str):
        raise InvalidArgument(f"kernel: expected a @g.raw_kernel function or a kernel name, "
                              f"got {kernel!r}")
    from ..specs import registered_kernel

    found = registered_kernel(kernel)
    if found is None:
        return kernel
    if not isinstance(found, RawKernelDef):
        raise InvalidArgument(f"{kernel!r} names a {found.kind} spec (defined at "
                              f"{found.defined_at}), not a raw kernel: load it with g.Kernel")
    return found


def _not_found(name: str, backend: str) -> KernelNotFound:
    from ..specs import registered_kernel, registered_names

    raws = [n for n in registered_names() if isinstance(registered_kernel(n), RawKernelDef)]
    close = difflib.get_close_matches(name, raws, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else \
        f" (raw kernels defined: {', '.join(sorted(raws)) or 'none'})"
    return KernelNotFound(f"no raw kernel named {name!r} in this process or in the artifact "
                          f"directory for backend {backend!r}{hint}")


def _by_name(name: str, backend: str, arch: str, artifact_dir: str | None,
             options: tuple[str, ...], contract: bool, checked: Any) -> PrebuiltRaw:
    """The prebuilt raw kernel ``name``: its checked build when checked mode is asked for
    and there is one (else as :func:`checked_unavailable` says), else its unchecked one;
    ``KernelNotFound`` when there is neither."""
    want = want_checked(checked)
    found = find_prebuilt_raw(name, backend, arch, artifact_dir, options, contract,
                              checked=True) if want else None
    if found is None:
        found = find_prebuilt_raw(name, backend, arch, artifact_dir, options, contract)
        if found is None:
            raise _not_found(name, backend)
        if want:
            checked_unavailable(name, "a prebuilt artifact built unchecked", checked,
                                "build it with g.compile(..., checked=True) or `gompute "
                                "build --checked`, or load its @g.raw_kernel definition")
    return found


def _grid(value: Any) -> tuple[int, int, int]:
    if isinstance(value, Dim3):
        return (value.x, value.y, value.z)
    dims = value if isinstance(value, tuple) else (value,)
    if not 1 <= len(dims) <= 3:
        raise InvalidArgument(f"grid: 1 to 3 dimensions, got {value!r}")
    d = Dim3(*dims)
    return (d.x, d.y, d.z)


def _static_shared_bytes(kir: KernelIR) -> int:
    if not kir.functions:
        return 0
    return sum(np.dtype(t.elem).itemsize * t.size for _, t in kir.functions[-1].locals
               if isinstance(t, SharedType))


def _memory_use(kir: KernelIR) -> tuple[bool, frozenset[str]]:
    """(whether the kernel uses f64 atomics, the names of the ``GlobalPtr`` arguments it
    writes: stores and atomics). A kernel from C source has no IR to tell: no pointer
    counts as written."""
    f64 = False
    written: set[str] = set()

    def walk(obj: Any) -> None:
        nonlocal f64
        if isinstance(obj, Atomic) and obj.type is np.float64:
            f64 = True
        if isinstance(obj, (Store, Atomic)) and isinstance(obj.base.type, PointerType):
            written.add(obj.base.name)
        if isinstance(obj, tuple):
            for item in obj:
                walk(item)
        elif hasattr(obj, "__dataclass_fields__") and not isinstance(obj, StructType):
            for f in obj.__dataclass_fields__:
                walk(getattr(obj, f))

    for fn in kir.functions:
        walk(fn.body)
    return f64, frozenset(written)


class RawKernel:
    """A raw kernel compiled and loaded on ``backend``'s device ``device``.

    ``kernel`` is a ``@g.raw_kernel`` function or its name (resolved in this process,
    else in the prebuilt artifact directory: ``artifact_dir`` or
    ``$GOMPUTE_ARTIFACT_DIR``). ``launch(grid, block, args, shared_bytes=0,
    stream=None)`` enqueues one launch; ``synchronize()`` waits for it. Threads may share
    a handle: a lock makes storing the arguments and launching one step.
    ``checked=True`` (default: ``$GOMPUTE_CHECKED``) loads the kernel in checked mode
    (:mod:`gompute_core.raw.checked`): ``synchronize()`` then raises ``OutOfBounds`` or
    ``DataRace`` for the first fault since the last one. ``options`` (extra compiler
    options) and ``contract`` (allow fused multiply-add: results may then differ between
    backends) are as for :class:`~gompute_core.runtime.kernel.Kernel`.
    """

    def __init__(self, kernel: Any, backend: str, device: int = 0, *,
                 artifact_dir: str | None = None, options: Sequence[str] = (),
                 contract: bool = False, checked: bool | None = None) -> None:
        if not isinstance(backend, str):
            raise InvalidArgument(f"backend: expected a backend name, got {backend!r}")
        where = f"RawKernel({getattr(kernel, 'name', kernel)!r})"
        opts = compile_options(options, where)
        check_contract(contract, where)
        info = manager.require(backend).info
        if not runs_raw(info):
            raise Unsupported(f"backend {backend!r} does not run raw kernels (its kinds: "
                              f"{', '.join(supported_kinds(info))})")
        definition = resolve(kernel)
        dev = manager.open_device(backend, device)
        sites: tuple[Site, ...] | None = None
        """A checked kernel's fault sites (None: unchecked)."""
        if isinstance(definition, str):
            found = _by_name(definition, backend, dev.arch, artifact_dir, opts, contract,
                             checked)
            artifact, kir, signature = found.artifact, found.kernel, found.signature
            slots, sites = found.slots, found.sites
            bounds: tuple[Bound, ...] = ()
            params_class = None
        else:
            if definition.source_backends and backend not in definition.source_backends:
                raise Unsupported(f"raw kernel {definition.name!r} is C source for "
                                  f"{', '.join(definition.source_backends)}, not {backend!r}")
            kir = contracted(definition.lower(), contract, where)
            signature, bounds = definition.signature, definition.bounds
            params_class = definition.params_class
            slots = signature
            if definition.source is not None:
                checked_unavailable(definition.name, "C source", checked)
            elif want_checked(checked):
                instrumented = instrument(kir, serial=dev.has("serial_threads"))
                kir, sites = instrumented.kernel, instrumented.sites
                slots = checked_slots(instrumented)
            artifact = self._artifact(definition, kir, backend, dev.arch, artifact_dir, opts,
                                      sites is not None)
        f64_atomics, self._written = _memory_use(kir)
        if f64_atomics and not dev.has("f64_atomics"):
            raise Unsupported(f"raw kernel {kir.name!r} uses f64 atomics; {backend} device "
                              f"{device} lacks the capability 'f64_atomics'")
        self.name, self.backend, self.ordinal = kir.name, backend, device
        self.device, self.kernel_ir, self.artifact = dev, kir, artifact
        self.signature: tuple[tuple[str, IRType], ...] = signature
        self.checked = sites is not None
        self._slots = slots
        """The entry's arguments: the signature's, then checked mode's (extents, record)."""
        self.block: tuple[int, int, int] | None = kir.block
        self._params_class = params_class
        self._static_shared = _static_shared_bytes(kir)
        declared = "" if self.block is None else f" (declared block={self.block})"
        dev.check_launch(f"raw kernel {self.name!r}{declared}", self.block or (1, 1, 1), 0,
                         self._static_shared)  # a kernel no launch could run fails here
        self.args = ArgBuffer(signature_layout(slots))
        dev.check_arguments(kir, self.args.layout)
        self._convert = [self._converter(k, name, t) for k, (name, t) in enumerate(slots)]
        self._bounds = [(self._index(b.ptr), b) for b in bounds]
        self._geometry: dict[tuple[Any, ...], tuple[Any, Any, int]] = {}
        """Launch shapes already checked, keyed by value and type (``True == 1`` and
        ``1.0 == 1`` must not pass as a checked 1): -> (grid, block, shared bytes)."""
        self._lock = threading.Lock()
        """Makes store-the-arguments-then-launch one step: threads sharing the handle never
        launch with each other's arguments."""
        self._acquire, self._release = self._lock.acquire, self._lock.release
        self._bind: Callable[[Sequence[Any]], None] | None = None
        """The packing backends' checks (:class:`PackedBinder`), called on every launch."""
        if dev.packs_arguments:
            kinds = ["params" if isinstance(t, StructType) else
                     ("written" if name in self._written else "pointer")
                     if isinstance(t, PointerType) else "scalar"
                     for name, t in slots]
            types = [np.dtype(t.elem) if isinstance(t, PointerType) else t
                     for _, t in slots]
            self._bind = PackedBinder(kinds, self._convert, types, dev, self.args,
                                      self._check_bounds if self._bounds else None).bind
        elif params_class is not None:
            self._params_of = dev.params_converter(kir)
        self._launcher = dev._load(artifact, kir, self.args)
        self._faults: FaultRecord | None = None
        if sites is not None:
            self._faults = FaultRecord(self.name, dev, sites)
            self.launch = self._launch_checked  # type: ignore[method-assign]

    @staticmethod
    def _artifact(definition: RawKernelDef, kir: KernelIR, backend: str, arch: str,
                  artifact_dir: str | None, options: tuple[str, ...],
                  checked: bool) -> Artifact:
        artifact = find_prebuilt(kir, backend, arch, artifact_dir, options, checked)
        if artifact is None:
            artifact = compile_artifact(CompileRequest(
                backend=backend, kernel=kir, arch=arch, options=options,
                source=definition.source))
        return artifact

    @classmethod
    def from_source(cls, name: str, source: str, backend: str | Sequence[str],
                    signature: Sequence[Any], *, device: int = 0,
                    block: Any = None, load: bool = True) -> Any:
        """A raw kernel from CUDA C or HIP C++ text: ``name`` is its ``extern "C"`` entry,
        ``signature`` its parameters in order (``g.GlobalPtr[T]``, scalar types or a
        ``@g.params`` class; ``(name, type)`` pairs name them in errors). The definition is
        registered under ``name`` like any raw kernel; with ``load`` (default) it is
        compiled and loaded on the first backend of ``backend``'s device ``device``."""
        definition = define_source(name, source, backend, signature, block)
        if not load:
            return definition
        return cls(definition, definition.source_backends[0], device)

    # ------------------------------------------------------------------- arguments
    def _index(self, name: str) -> int:
        return next(k for k, (n, _) in enumerate(self.signature) if n == name)

    def _converter(self, k: int, name: str, t: IRType) -> Callable[[Any], Any]:
        where = f"argument #{k} ({name!r})"
        if isinstance(t, PointerType):
            return self._pointer_converter(where, np.dtype(t.elem), short_name(t.elem),
                                           name in self._written)
        if isinstance(t, StructType):
            cls = self._params_class

            def params(value: Any) -> bytes:
                if cls is not None and not isinstance(value, cls):
                    raise InvalidArgument(f"{self.name}: {where} must be a {cls.__qualname__} "
                                          f"params object, got {type(value).__name__}")
                return pack(value)

            return params
        return _scalar_converter(self.name, where, t)

    def _pointer_converter(self, where: str, dtype: np.dtype, tname: str, written: bool
                           ) -> Callable[[Any], Any]:
        device, backend = self.device, self.backend

        def pointer(value: Any) -> Any:
            buf = value if isinstance(value, Buffer) else self._foreign(value, where)
            if buf.device is not device:
                raise InvalidArgument(f"{self.name}: {where} is a buffer of {buf.device!r}, not "
                                      f"of {backend} device {self.ordinal}")
            if buf.freed:
                raise InvalidArgument(f"{self.name}: {where} is a freed buffer")
            if buf.dtype != dtype:
                raise InvalidArgument(f"{self.name}: {where} is a buffer of {buf.dtype}; the "
                                      f"kernel declares GlobalPtr[{tname}] (allocate it with "
                                      f"alloc(count, g.{tname}))")
            if written and buf.readonly:
                raise InvalidArgument(f"{self.name}: {where} is read-only memory but the "
                                      f"kernel writes it (pass a writable array)")
            return buf

        return pointer

    def _foreign(self, value: Any, where: str) -> Any:
        try:
            return as_buffer(value, self.backend)
        except InvalidArgument as exc:
            raise InvalidArgument(f"{self.name}: {where} must be a device buffer or an array "
                                  f"on {self.backend} device {self.ordinal}: {exc}") from None

    def _check_bounds(self, values: list[Any]) -> None:
        for ptr_k, bound in self._bounds:
            buf = values[ptr_k]
            count = buf.nbytes // buf.dtype.itemsize
            need = bound.need(values)
            if need > count:
                raise InvalidArgument(f"{self.name}: {bound.ptr!r} holds {count} elements but "
                                      f"{bound.text}={need} (declared as its bound)")

    # ------------------------------------------------------------------- public surface
    def alloc(self, count: int, dtype: Any) -> Any:
        """A device buffer of ``count`` ELEMENTS of scalar type ``dtype``."""
        t = as_scalar_type(dtype)
        if t is None:
            raise InvalidArgument(f"alloc: dtype must be a scalar type (g.f32, ...), got "
                                  f"{dtype!r}")
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
            raise InvalidArgument(f"alloc: count must be a non-negative int, got {count!r}")
        dt = np.dtype(t)
        buf = self.device.alloc(int(count) * dt.itemsize)
        buf.dtype = dt
        return buf

    def launch(self, grid: Any, block: Any, args: Sequence[Any], shared_bytes: int = 0,
               stream: Any = None) -> None:
        """Enqueue one launch of ``grid`` blocks of ``block`` threads (``g.Dim3``, an int or
        a tuple each) with ``args`` in signature order, ``shared_bytes`` of dynamic shared
        memory, on ``stream`` (default: the device's)."""
        try:
            g3, b3, shared = self._geometry[_shape_key(grid, block, shared_bytes)]
        except (KeyError, TypeError):  # TypeError: an unhashable shape, checked every time
            g3, b3, shared = self._check_geometry(grid, block, shared_bytes)
        if stream is None:
            stream = self.device.stream
        elif getattr(stream, "device", None) is not self.device:
            raise InvalidArgument(f"{self.name}: stream {stream!r} is not a stream of "
                                  f"{self.backend} device {self.ordinal}")
        if args.__class__ is not list and args.__class__ is not tuple and (
                isinstance(args, (str, bytes)) or not isinstance(args, Sequence)):
            raise InvalidArgument(f"{self.name}: args must be a list of the kernel's "
                                  f"{len(self.signature)} arguments, got {args!r}")
        if len(args) != len(self._convert):
            names = ", ".join(n for n, _ in self.signature)
            raise InvalidArgument(f"{self.name}: takes {len(self._convert)} arguments ({names}), "
                                  f"got {len(args)}")
        if self._bind is not None:
            self._acquire()  # acquire, try, finally: cheaper than ``with`` on this hot path
            try:
                self._bind(args)
                self._launcher(g3, b3, shared, stream)
            finally:
                self._release()
            return
        values = [conv(a) for conv, a in zip(self._convert, args, strict=True)]
        with self._lock:
            self._store(values)
            self._launcher(g3, b3, shared, stream)

    def _check_geometry(self, grid: Any, block: Any, shared_bytes: Any
                        ) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
        """Check a launch's grid, block and dynamic shared bytes; remember the answer for
        hashable shapes (a launch loop then pays one dictionary lookup)."""
        g3 = _grid(grid)
        b3 = block_shape(block, f"{self.name}: block")
        if self.block is not None and b3 != self.block:
            raise InvalidArgument(f"{self.name}: launched with block {b3} but the kernel "
                                  f"declares block={self.block}")
        if isinstance(shared_bytes, bool) or not isinstance(shared_bytes, (int, np.integer)) \
                or shared_bytes < 0:
            raise InvalidArgument(f"{self.name}: shared_bytes must be a non-negative int, got "
                                  f"{shared_bytes!r}")
        self.device.check_launch(self.name, b3, int(shared_bytes), self._static_shared)
        checked = (g3, b3, int(shared_bytes))
        if len(self._geometry) > 256:
            self._geometry.clear()
        self._geometry[_shape_key(grid, block, shared_bytes)] = checked
        return checked

    def _store(self, values: list[Any]) -> None:
        """Check the converted arguments' bounds and hand them, as values, to a backend that
        calls a host function (a packing backend's go through :attr:`_bind`)."""
        if self._bounds:
            self._check_bounds(values)
        a = self.args
        host, params = [], None
        for v, (_, t) in zip(values, self._slots, strict=True):
            if isinstance(t, StructType):
                params = self._params_of(v)
            elif isinstance(t, PointerType):
                host.append(self.device.host_array(v, v.dtype))
            else:
                host.append(v)
        a.values = tuple(host)
        a.params = params

    def _launch_checked(self, grid: Any, block: Any, args: Sequence[Any],
                        shared_bytes: int = 0, stream: Any = None) -> None:
        """:meth:`launch` in checked mode: the user's arguments, then each pointer's element
        count and the fault record."""
        assert self._faults is not None
        RawKernel.launch(self, grid, block, checked_arguments(self, args, self._faults),
                         shared_bytes, stream)

    def synchronize(self) -> None:
        """Wait for all work on the device; a device fault raises ``SyncFailed``, and in
        checked mode the first fault of the kernel since the last synchronization raises
        ``OutOfBounds`` or ``DataRace``."""
        self.device.synchronize()
        self.raise_faults()

    def raise_faults(self) -> None:
        """Checked: raise the first fault since the last one, read from the device (which
        the caller synchronized); unchecked: nothing."""
        if self._faults is not None:
            self._faults.raise_if_set()

    @property
    def source(self) -> str:
        """The compiled source (rendered, or the user's C text)."""
        return self.artifact.source

    def __repr__(self) -> str:
        return f"<RawKernel {self.name!r} on {self.backend}:{self.ordinal}>"


def _shape_key(grid: Any, block: Any, shared_bytes: Any) -> tuple[Any, ...]:
    """The key a checked launch shape is remembered under: values AND types, tuple members'
    types included (``True == 1``, ``1.0 == 1`` and ``(16, 16.0) == (16, 16)`` must not pass
    as the checked shape). Three plain ints (the common launch) key as themselves: a key of
    another length never equals theirs."""
    if grid.__class__ is int and block.__class__ is int and shared_bytes.__class__ is int:
        return (grid, block, shared_bytes)
    return (grid, block, shared_bytes, type(grid), type(block), type(shared_bytes),
            tuple(map(type, grid)) if type(grid) is tuple else None,
            tuple(map(type, block)) if type(block) is tuple else None)


def _scalar_converter(kernel: str, where: str, t: Any) -> Callable[[Any], Any]:
    """A checker giving a NumPy scalar of ``t``: the same NumPy type, or a Python number
    that ``t`` holds (an int in range; for a float type an int or float that does not
    overflow it), range-checked as a params field is."""
    name = short_name(t)
    integer = is_int(t) and t is not np.bool_
    lo, hi = (int(np.iinfo(t).min), int(np.iinfo(t).max)) if integer else (0, 0)

    def scalar(value: Any) -> Any:
        if type(value) is t:
            return value
        if isinstance(value, np.generic):
            raise InvalidArgument(f"{kernel}: {where} is a {type(value).__name__} where {name} "
                                  f"is declared (convert it: np.{np.dtype(t).name}(x))")
        if t is np.bool_:
            if isinstance(value, bool):
                return np.bool_(value)
        elif integer:
            if isinstance(value, int) and not isinstance(value, bool):
                return int_in_range(t, value, f"{kernel}: {where}", lo, hi)
        elif is_float(t) and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float_in_range(t, value, f"{kernel}: {where}")
        raise InvalidArgument(f"{kernel}: {where} is {value!r} ({type(value).__name__}) where "
                              f"{name} is declared")

    return scalar


def raw_kernel_by_name(backend: str, name: str, device: int = 0, *,
                       artifact_dir: str | None = None,
                       checked: bool | None = None) -> RawKernel:
    """The raw kernel called ``name`` (chosen at run time, from a config file say) loaded on
    ``backend``'s device: a kernel defined in this process, else a prebuilt one from
    ``artifact_dir``/``$GOMPUTE_ARTIFACT_DIR`` (no compiler needed; ``checked`` as for
    :class:`RawKernel`: a prebuilt one's checked build). ``KernelNotFound`` (a
    ``LookupError``) lists close matches for a name that is not there."""
    if not isinstance(name, str):
        raise InvalidArgument(f"name: expected a kernel name, got {name!r}")
    return RawKernel(name, backend, device, artifact_dir=artifact_dir, checked=checked)

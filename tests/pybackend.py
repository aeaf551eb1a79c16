"""The reference backend: the smallest complete plugin on the backend SDK.

It shows a third party the minimum (``gompute_core.backend``): a ``Buffer``
with five primitives over host bytes, a ``Device`` whose launcher runs the
spec's Python functions element by element on NumPy scalars (the same
contiguous-block partials a reduce launch writes), a ``Compiler`` whose
"image" is the IR digest, and the four hooks. The core does every check,
each kind's launch and ``run``.

Two flavours of device: a host-memory one (``run`` hands it the caller's
arrays, as the CPU backend; it also runs raw kernels without barriers, shared
arrays or atomics, the raw kernel's Python function called thread by thread: what
the core's scan kind needs) and, with ``host_memory=False``, a device-style
one that takes the packed argument buffer as a GPU driver does (addresses
resolved back to its buffers) and declares streams, so the core's staged and
pipelined ``run`` paths are exercised without a GPU; and, with ``packed=True``, a
third that packs its arguments as that one does but computes on host memory (a C
entry taking one argument buffer): ``run`` borrows the caller's arrays. Knobs make it
unavailable, refuse to compile, declare another API version or fail a probe,
for the core's own tests.
"""

from __future__ import annotations

import inspect
import struct
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from gompute_core.abi.pack import unpack
from gompute_core.backend import (
    ArgBuffer,
    Artifact,
    Availability,
    BackendInfo,
    Buffer,
    Built,
    Compiler,
    Device,
    DeviceInfo,
    ImmediateStream,
    Stream,
    hookimpl,
)
from gompute_core.errors import CompileFailed, InvalidArgument, NoDevice
from gompute_core.ir.entry import BlockReduce, ElementLoop, IndexedMove
from gompute_core.ir.kernel import RAW, KernelIR
from gompute_core.ir.nodes import StructType
from gompute_core.raw import builtins
from gompute_core.specs import Spec, registered_kernel, registered_spec

FEATURES = ("entries", "raw")
"""The kernel features of the host-memory flavour: the spec kinds' entry points and raw
kernels (no barriers, shared arrays or atomics); the packed flavour has ``entries`` only."""


class PyBuffer(Buffer):
    """Host bytes standing in for device memory."""

    __slots__ = ("mem",)

    def __init__(self, device: PyDevice, nbytes: int, view: np.ndarray | None = None) -> None:
        self.mem = np.zeros(nbytes, np.uint8) if view is None else view
        super().__init__(device, nbytes, int(self.mem.ctypes.data), owned=view is None)

    def _copyin(self, offset: int, host: np.ndarray, stream: Stream | None) -> None:
        self.mem[offset:offset + host.size] = host

    def _copyout(self, offset: int, host: np.ndarray, stream: Stream | None) -> None:
        host[:] = self.mem[offset:offset + host.size]

    def _copy_device(self, offset: int, src: Buffer, src_offset: int, nbytes: int,
                     stream: Stream | None) -> None:
        self.mem[offset:offset + nbytes] = src.mem[src_offset:src_offset + nbytes]  # type: ignore[attr-defined]

    def _fill(self, offset: int, nbytes: int, value: int, stream: Stream | None) -> None:
        self.mem[offset:offset + nbytes] = value


def _takes_params(fn: Any, values: int) -> bool:
    """Whether ``fn`` takes ``p`` after its ``values`` value arguments."""
    target = fn if inspect.isfunction(fn) else getattr(fn, "eval", fn)
    return len(inspect.signature(target).parameters) == values + 1


class PyEntry:
    """Runs one spec's Python functions over the launch's arrays (the launcher)."""

    def __init__(self, spec: Spec, kernel: KernelIR, args: ArgBuffer) -> None:
        self.spec, self.kernel, self.args, self.launches = spec, kernel, args, 0
        fn = spec.fn if spec.fn is not None else spec.pre
        loop = kernel.entry
        values = len(loop.inputs) + loop.indexed if isinstance(loop, ElementLoop) else 1
        self._with_p = fn is not None and _takes_params(fn, values)

    def _call(self, fn: Any, *xs: Any) -> Any:
        return fn(*xs, self.args.params) if self._with_p else fn(*xs)

    def __call__(self, grid: tuple[int, int, int], block: tuple[int, int, int],
                 shared_bytes: int, stream: Stream) -> None:
        self.run(grid[0], self.values())

    def run(self, grid: int, values: tuple[Any, ...]) -> None:
        """One launch over ``values`` (the entry's arguments, decoded)."""
        self.launches += 1
        with np.errstate(all="ignore"):
            entry = self.kernel.entry
            if isinstance(entry, ElementLoop):
                self._element_loop(entry, values)
            elif isinstance(entry, BlockReduce):
                self._block_reduce(entry, grid, values)
            elif isinstance(entry, IndexedMove):
                self._indexed_move(entry, values)
            else:
                raise TypeError(f"pytest: kernel {self.kernel.name!r} ({self.kernel.kind}) "
                                "has no entry structure")

    def values(self) -> tuple[Any, ...]:
        """The launch's arguments: typed arrays and counts, in entry order."""
        return self.args.values

    def _element_loop(self, loop: ElementLoop, values: tuple[Any, ...]) -> None:
        """``loop`` (map, map_indexed, map_to, zip) over the launch's arguments."""
        at = dict(zip((name for name, _ in self.kernel.entry_args), values, strict=True))
        inputs = [at[a.name] for a in loop.inputs]
        out, t = at[loop.output.name], loop.output.type
        for i in range(at[loop.count]):
            xs = [x[i] for x in inputs]
            if loop.indexed:
                xs.append(np.uint64(i))
            out[i] = t(self._call(self.spec.fn, *xs))

    def _block_reduce(self, node: BlockReduce, blocks: int, values: tuple[Any, ...]) -> None:
        """``node`` (reduce) over the launch's arguments: block ``b`` folds the ``b``-th
        contiguous chunk in order (the spec's Python ``pre`` and ``combine``)."""
        at = dict(zip((name for name, _ in self.kernel.entry_args), values, strict=True))
        data, n, partials = at[node.input.name], at[node.count], at[node.partials.name]
        T, spec = node.partials.type, self.spec
        for b in range(blocks):
            acc = T(node.identity.value)
            for x in data[b * n // blocks:(b + 1) * n // blocks]:
                x = x if node.pre is None else T(self._call(spec.pre, x))
                acc = T(spec.combine(acc, x))
            partials[b] = acc

    def _indexed_move(self, node: IndexedMove, values: tuple[Any, ...]) -> None:
        """``node`` (gather, scatter) over the launch's arguments, index after index."""
        at = dict(zip((name for name, _ in self.kernel.entry_args), values, strict=True))
        src, idx, out = at[node.src.name], at[node.idx.name], at[node.out.name]
        bound, gather = at[node.bound], node.direction == "gather"
        for i in range(at[node.count]):
            j = int(idx[i])
            if 0 <= j < bound:
                if gather:
                    out[i] = src[j]
                else:
                    out[j] = src[i]


class PyRawEntry:
    """Runs a raw kernel's Python function once per thread of the launch, with
    ``g.builtins``' geometry answering for that thread (thread after thread, so no
    barriers: the backend does not declare them)."""

    GEOMETRY = ("global_id", "local_id", "block_id", "block_dim", "grid_dim")

    def __init__(self, fn: Any, kernel: KernelIR, args: ArgBuffer) -> None:
        self.fn, self.args = fn, args
        self._params_at = next((k for k, (_, t) in enumerate(kernel.functions[-1].args)
                                if isinstance(t, StructType)), -1)

    def __call__(self, grid: tuple[int, int, int], block: tuple[int, int, int],
                 shared_bytes: int, stream: Stream) -> None:
        values = list(self.args.values)
        if self._params_at >= 0:
            values.insert(self._params_at, self.args.params)
        saved = {name: getattr(builtins, name) for name in self.GEOMETRY}
        at = {"block": (0, 0, 0), "thread": (0, 0, 0)}
        builtins.block_id = lambda d: at["block"][d]
        builtins.local_id = lambda d: at["thread"][d]
        builtins.block_dim = lambda d: block[d]
        builtins.grid_dim = lambda d: grid[d]
        builtins.global_id = lambda d: at["block"][d] * block[d] + at["thread"][d]
        try:
            with np.errstate(all="ignore"):
                for b in np.ndindex(grid[2], grid[1], grid[0]):
                    at["block"] = b[::-1]
                    for t in np.ndindex(block[2], block[1], block[0]):
                        at["thread"] = t[::-1]
                        self.fn(*values)
        finally:
            for name, fn in saved.items():
                setattr(builtins, name, fn)


class PackedPyEntry(PyEntry):
    """Reads the packed argument buffer as a GPU would: addresses and counts, then the
    params struct's bytes."""

    def __init__(self, spec: Spec, kernel: KernelIR, args: ArgBuffer, device: PackedPyDevice,
                 convert: Callable[[bytes], Any]) -> None:
        super().__init__(spec, kernel, args)
        self.device, self.convert = device, convert
        layout = args.layout
        self._leading = struct.Struct(layout.packing_format())
        types = kernel.entry.arrays()  # type: ignore[union-attr]
        self._pointer_dtypes = [np.dtype(types[name])
                                for name, arg in kernel.entry_args if arg == "pointer"]

    def __call__(self, grid: tuple[int, int, int], block: tuple[int, int, int],
                 shared_bytes: int, stream: Stream) -> None:
        if isinstance(stream, QueuedStream):  # a driver copies the argument bytes at launch
            raw = bytes(self.args.data)
            stream.pending.append(lambda: self.run(grid[0], self.decode(raw)))
        else:
            super().__call__(grid, block, shared_bytes, stream)

    def values(self) -> tuple[Any, ...]:
        return self.decode(bytes(self.args.data))

    def decode(self, raw: bytes) -> tuple[Any, ...]:
        """The arguments packed in ``raw``: each address resolved to the memory it names
        (when the launch runs), the params decoded into ``args.params``."""
        layout = self.args.layout
        if layout.params_offset >= 0:
            size = layout.slots[-1].size
            self.args.params = self.convert(raw[layout.params_offset:layout.params_offset + size])
        else:
            self.args.params = self.convert(b"")
        out, dtypes = [], iter(self._pointer_dtypes)
        for slot, value in zip(layout.slots, self._leading.unpack_from(raw), strict=False):
            out.append(self.device.resolve(value, next(dtypes))
                       if slot.kind == "pointer" else value)
        return tuple(out)

class PyDevice(Device):
    """A device whose memory is host bytes and whose launches run Python."""

    backend = "pytest"
    capabilities = frozenset({"host_memory", "streams"})
    packs_arguments = False

    def __init__(self, backend: str, ordinal: int) -> None:
        self.backend, self.ordinal, self.arch, self.name = backend, ordinal, "py1", "python"
        self.closed = False
        self.allocs = 0
        self._stream = ImmediateStream(self)

    def _alloc(self, nbytes: int) -> PyBuffer:
        self.allocs += 1
        return PyBuffer(self, nbytes)

    def _load(self, artifact: Artifact, kernel: KernelIR,
              args: ArgBuffer) -> PyEntry | PyRawEntry:
        raw = kernel.kind == RAW
        found = registered_kernel(kernel.name) if raw else registered_spec(kernel.name)
        if found is None or artifact.digest != kernel.digest():
            raise InvalidArgument(f"artifact {artifact.entry!r} does not match kernel "
                                  f"{kernel.name!r}")
        if raw:
            return PyRawEntry(found.fn, kernel, args)  # type: ignore[union-attr]
        return PyEntry(found, kernel, args)  # type: ignore[arg-type]

    def borrow(self, host: np.ndarray) -> PyBuffer:
        """A buffer viewing ``host``'s memory (capability ``host_memory``)."""
        return PyBuffer(self, host.nbytes, host.reshape(-1).view(np.uint8))

    def host_array(self, buf: PyBuffer, dtype: np.dtype) -> np.ndarray:
        """``buf``'s bytes as ``dtype`` elements."""
        return buf.mem[:buf.nbytes // dtype.itemsize * dtype.itemsize].view(dtype)

    def params_converter(self, kernel: KernelIR) -> Callable[[bytes], Any]:
        """The params object itself (the Python functions take it)."""
        found = registered_kernel(kernel.name)
        P = getattr(found, "params", None) if isinstance(found, Spec) else \
            getattr(found, "params_class", None)
        return (lambda raw: unpack(P, raw)) if P is not None else (lambda raw: None)

    def synchronize(self) -> None:
        """Launches are synchronous."""

    def create_stream(self) -> ImmediateStream:
        """Work is done when each call returns: every stream is immediate."""
        return ImmediateStream(self)

    @property
    def stream(self) -> ImmediateStream:
        return self._stream

    def close(self) -> None:
        self.closed = True


class PackedPyDevice(PyDevice):
    """A device-style PyDevice: packed arguments, (immediate) streams, "pinned" host arrays."""

    capabilities = frozenset({"streams", "pinned_memory"})
    packs_arguments = True

    def __init__(self, backend: str, ordinal: int) -> None:
        super().__init__(backend, ordinal)
        self._buffers: list[PyBuffer] = []

    def _alloc(self, nbytes: int) -> PyBuffer:
        buf = super()._alloc(nbytes)
        self._buffers.append(buf)
        return buf

    def known(self) -> list[PyBuffer]:
        """The buffers whose addresses :meth:`resolve` maps back (its allocations)."""
        return self._buffers

    def resolve(self, addr: int, dtype: np.dtype) -> np.ndarray:
        """The live buffer memory at device address ``addr``, from there to its end."""
        for buf in self.known():
            if not buf.freed and buf.addr <= addr < buf.addr + max(buf.nbytes, 1):
                rest = buf.mem[addr - buf.addr:]
                return rest[:rest.size // dtype.itemsize * dtype.itemsize].view(dtype)
        raise InvalidArgument(f"no live buffer at device address {addr:#x}")

    def _load(self, artifact: Artifact, kernel: KernelIR, args: ArgBuffer) -> PyEntry:
        if kernel.kind == RAW:
            raise InvalidArgument("the packed reference device runs no raw kernels")
        entry = super()._load(artifact, kernel, args)
        return PackedPyEntry(entry.spec, kernel, args, self,  # type: ignore[union-attr]
                             self.params_converter(kernel))

    def pinned(self, shape: Any, dtype: Any = np.uint8) -> np.ndarray:
        """Host memory is all this device has: an ordinary array is as fast as any."""
        return np.empty(shape, dtype)

    def pin(self, host: np.ndarray) -> bool:
        """Host memory is all this device has: nothing to lock."""
        return True


class QueuedStream(Stream):
    """A queue whose launches run when it (or its device) is synchronized, as a driver's
    run after their call returns (transfers stay synchronous)."""

    def __init__(self, device: PackedHostPyDevice) -> None:
        self.device = device
        self.pending: list[Callable[[], None]] = []

    def synchronize(self) -> None:
        while self.pending:
            self.pending.pop(0)()

    def query(self) -> bool:
        return not self.pending


class PackedHostPyDevice(PackedPyDevice):
    """Packed arguments on host memory: declares ``host_memory``; ``run`` borrows the
    caller's arrays and packs their addresses, which :meth:`resolve` maps back when a
    launch runs. Launches are queued (:class:`QueuedStream`): a ``run`` that returned
    before synchronizing, or dropped its borrowed buffers first, would show."""

    capabilities = frozenset({"host_memory", "streams"})

    def __init__(self, backend: str, ordinal: int) -> None:
        super().__init__(backend, ordinal)
        self._borrowed: weakref.WeakValueDictionary[int, PyBuffer] = \
            weakref.WeakValueDictionary()
        self.borrows = 0
        self._streams = [QueuedStream(self)]

    @property
    def stream(self) -> QueuedStream:
        return self._streams[0]

    def create_stream(self) -> QueuedStream:  # type: ignore[override]
        """A new queue, synchronized with the device."""
        self._streams.append(QueuedStream(self))
        return self._streams[-1]

    def synchronize(self) -> None:
        """Run every queued launch."""
        for s in self._streams:
            s.synchronize()

    def borrow(self, host: np.ndarray) -> PyBuffer:
        """A buffer over ``host``'s memory, known to :meth:`resolve` while it lives."""
        buf = super().borrow(host)
        self._borrowed[id(buf)] = buf
        self.borrows += 1
        return buf

    def known(self) -> list[PyBuffer]:
        """Its allocations and the borrowed host arrays still alive."""
        return [*self._buffers, *self._borrowed.values()]


class PyCompiler(Compiler):
    """"Compiles" to the IR digest: the launcher runs the spec's Python functions."""

    backend = "pytest"
    disk_cache = False

    def __init__(self, plugin: PyBackend) -> None:
        self.plugin = plugin
        self.backend = plugin.name  # type: ignore[misc]

    def identity(self) -> str:
        return "python"

    def render(self, kernel: KernelIR, arch: str) -> str:
        return f"# {kernel.name}: {kernel.digest()}\n"

    def build(self, source: str, kernel: KernelIR, arch: str,
              options: tuple[str, ...]) -> Built:
        self.plugin.compiles += 1
        if self.plugin.compile_error:
            raise CompileFailed(self.plugin.compile_error)
        return Built(kernel.digest().encode(), "py")


class PyBackend:
    """The test plugin; every knob is a constructor argument."""

    def __init__(self, name: str = "pytest", *, priority: int = 50, available: bool = True,
                 reason: str = "", compile_error: str = "", api_version: int = 3,
                 probe_error: str = "", unsupported_types: tuple[str, ...] = (),
                 host_memory: bool = True, packed: bool = False, devices: int = 1,
                 warnings: tuple[str, ...] = ()) -> None:
        self.name, self.priority, self.available, self.reason = name, priority, available, reason
        self.compile_error, self.api_version = compile_error, api_version
        self.probe_error, self.unsupported_types = probe_error, unsupported_types
        self.device_class: type[PyDevice] = PackedPyDevice if not host_memory else \
            PackedHostPyDevice if packed else PyDevice
        self.features = FEATURES if self.device_class is PyDevice else ("entries",)
        self.devices = devices
        self.warnings = warnings
        self.probes = 0
        self.compiles = 0

    @hookimpl
    def gompute_backend_info(self) -> BackendInfo:
        return BackendInfo(self.name, "0.0.test", self.api_version, self.priority, (),
                           self.unsupported_types, "pure-Python reference backend",
                           features=self.features)

    @hookimpl
    def gompute_probe(self) -> Availability:
        self.probes += 1
        if self.probe_error:
            raise RuntimeError(self.probe_error)
        if not self.available:
            return Availability(self.name, False, reason=self.reason)
        return Availability(self.name, True, compiler="python",
                            devices=tuple(DeviceInfo(i, "python", "py1")
                                          for i in range(self.devices)),
                            warnings=self.warnings)

    @hookimpl
    def gompute_compiler(self) -> PyCompiler:
        return PyCompiler(self)

    @hookimpl
    def gompute_device(self, ordinal: int) -> PyDevice:
        if not 0 <= ordinal < self.devices:
            raise NoDevice(f"{self.name}: {self.devices} device(s), no ordinal {ordinal}")
        return self.device_class(self.name, ordinal)

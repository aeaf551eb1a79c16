"""``Device`` and ``Stream``: the runtime half of a backend, with the checks in the core.

A backend's device subclasses :class:`Device` and implements:

* ``_alloc(nbytes) -> Buffer`` — raw allocation (``nbytes`` already checked);
* ``_load(artifact, kernel, args) -> launcher`` — load the artifact's entry
  point and return a callable ``launcher(grid, block, shared_bytes, stream)``
  that launches it with ``grid`` blocks of ``block`` threads (each an ``(x, y,
  z)`` tuple) and ``shared_bytes`` of dynamic shared memory on ``stream``,
  reading its arguments from ``args`` (an :class:`~gompute_core.backend.ArgBuffer`
  laid out by :func:`~gompute_core.backend.arg_layout`, which the core patches
  before each call);
* ``synchronize()`` and the ``stream`` property (the default stream).

Spec and raw kernels share that one launch primitive: a spec kernel's launch is
``launcher((blocks, 1, 1), (block_size, 1, 1), 0, stream)``; ``kernel.kind`` is
``"raw"`` for a raw kernel (the ``"raw"`` kernel feature in ``BackendInfo.features``).
The core checks every launch's geometry before the backend sees it: a raw kernel's
grid, block (against the kernel's declared shape and :meth:`Device.check_launch`:
``max_block_dims``, ``max_block_threads``), ``shared_bytes`` (against
``max_shared_bytes``) and every argument at each launch; a spec's fixed
``block_size`` through the same :meth:`Device.check_launch` when the spec is loaded
(:meth:`Device.check_kernel`), its grid by construction.

Optional, each declared in ``capabilities`` when present: ``create_stream``
and ``create_event`` (``"streams"``, ``"events"``), graph capture on streams
(``"graphs"``), ``pinned``/``pin`` (``"pinned_memory"``: page-locked host
memory, so async copies really overlap), ``borrow`` (``"host_memory"``: a
buffer viewing a host array). A missing capability raises ``Unsupported``
naming it.

Host memory (``"host_memory"``: ``run`` launches on the caller's own arrays, with no
copy) composes with either way of taking arguments. A device whose launcher calls
a host function on typed arrays sets ``packs_arguments = False`` and implements
``host_array(buf, dtype)``: the core hands it those arrays instead of packed
addresses. A device that packs its arguments (a C entry taking one argument
buffer) declares ``"host_memory"`` and implements ``host_array`` and ``borrow``:
``run`` borrows the caller's arrays and packs their addresses.

Interop (:mod:`gompute_core.interop`), all optional: ``dlpack_device_type``
makes buffers exportable and foreign arrays acceptable; a GPU device adds
``_borrow`` (a buffer over foreign device memory), ``pointer_ordinal``,
``stream_handle`` and ``order_streams`` (ordering with foreign streams) and
``ordered_streams`` (foreign stream handles its streams are ordered with
implicitly).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..abi.entry_args import ArgBuffer, ArgLayout, arg_layout
from ..errors import (
    AllocFailed,
    InvalidArgument,
    ModuleLoadFailed,
    Unsupported,
    UnsupportedBackend,
)
from ..ir.kernel import KernelIR
from ..plugins.records import Artifact
from .buffer import Buffer
from .streams import Event, Stream

if TYPE_CHECKING:
    from ..kinds.program import KernelProgram

Launcher = Callable[[tuple[int, int, int], tuple[int, int, int], int, "Stream"], None]
"""``launcher(grid, block, shared_bytes, stream)``: one launch of a loaded entry point with
the current args (grid and block as ``(x, y, z)``, already checked by the core)."""

CAPABILITIES = frozenset({"streams", "events", "graphs", "pinned_memory", "host_memory",
                          "f64_atomics", "serial_threads"})
"""Every capability name a device may declare."""

MAX_ALLOC_BYTES = 1 << 56
"""Larger requests are refused as ``AllocFailed`` before any backend call."""


CAPABILITY_METHODS: dict[str, tuple[str, ...]] = {
    "streams": ("create_stream",),
    "events": ("create_event",),
    "pinned_memory": ("pinned", "pin"),
    "host_memory": ("host_array",),
}
"""The methods that implement each capability a device class is checked for; the others
(``"graphs"``: the device's streams capture; ``"f64_atomics"``) are declared."""


def _implemented(cls: type, method: str) -> bool:
    """True when a class between ``cls`` and :class:`Device` defines ``method``."""
    for klass in cls.__mro__:
        if klass is Device:
            return False
        if method in klass.__dict__:
            return True
    return False


HOST_MEMORY_PACKED = ("host_array", "borrow")
"""What a device that packs its arguments implements to declare ``"host_memory"``: the core
then borrows the caller's arrays (``borrow``) and packs their addresses."""


def derive_capabilities(cls: type[Device]) -> frozenset[str]:
    """``cls``'s capabilities: the declared ones plus every one whose methods it implements.
    ``"host_memory"`` follows from ``packs_arguments = False`` (which needs ``host_array``);
    a packing device declares it, and then needs ``host_array`` and ``borrow``
    (:data:`HOST_MEMORY_PACKED`). ``UnsupportedBackend`` naming the class, the capability
    and the missing method for a capability declared but not implemented, or implemented
    in part."""
    declared = frozenset(cls.capabilities)
    unknown = declared - CAPABILITIES
    if unknown:
        raise UnsupportedBackend(f"{cls.__module__}.{cls.__qualname__} declares unknown "
                                 f"capabilities {sorted(unknown)}; known: {sorted(CAPABILITIES)}")
    derived = set(declared)
    for capability, methods in CAPABILITY_METHODS.items():
        if capability != "host_memory":
            wanted = capability in declared or any(_implemented(cls, m) for m in methods)
        elif not cls.packs_arguments:
            wanted = True
        else:  # packed arguments on host memory: declared, with borrow for run's arrays
            wanted, methods = capability in declared, HOST_MEMORY_PACKED
        if not wanted:
            continue
        have = [m for m in methods if _implemented(cls, m)]
        missing = [m for m in methods if m not in have]
        if missing:
            raise UnsupportedBackend(
                f"{cls.__module__}.{cls.__qualname__} implements capability {capability!r} "
                f"only in part: {', '.join(missing)} is missing (plugins.md, section 6)")
        derived.add(capability)
    return frozenset(derived)


class Device(ABC):
    """One device of a backend: allocation, program loading, streams, synchronization.

    A subclass's ``capabilities`` are checked and completed when the class is created
    (:func:`derive_capabilities`), so a half-implemented capability fails when the
    plugin's module is imported, naming the missing method.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.capabilities = derive_capabilities(cls)

    backend: ClassVar[str]
    capabilities: ClassVar[frozenset[str]] = frozenset()
    #: False for a backend whose launcher reads ``args.values``/``args.params`` (host calls)
    #: rather than the packed bytes; the core then skips packing. Whether ``run`` computes
    #: on the caller's arrays is the capability ``"host_memory"``, in either mode.
    packs_arguments: ClassVar[bool] = True
    #: most bytes of kernel arguments one launch may pass (None: no limit)
    max_argument_bytes: int | None = None
    #: most threads of a raw kernel's block along x, y, z, and in all
    max_block_dims: tuple[int, int, int] = (1024, 1024, 64)
    max_block_threads: int = 1024
    #: most bytes of dynamic plus static shared memory of one raw-kernel block
    max_shared_bytes: int = 48 * 1024
    ordinal: int
    arch: str
    name: str = ""
    #: DLPack ``DLDeviceType`` of the memory (1 CPU, 2 CUDA, 10 ROCm); None: buffers are not
    #: exported and foreign arrays not accepted (launch takes only the device's buffers).
    dlpack_device_type: ClassVar[int | None] = None
    #: Foreign stream handles every stream of this device is already ordered with, both ways
    #: (CUDA: the legacy default stream, for blocking streams).
    ordered_streams: ClassVar[frozenset[int]] = frozenset()

    # ---- primitives ----------------------------------------------------------------------
    @abstractmethod
    def _alloc(self, nbytes: int) -> Buffer:
        """A new owned buffer of ``nbytes`` bytes (``AllocFailed`` on failure)."""

    @abstractmethod
    def _load(self, artifact: Artifact, kernel: KernelIR, args: ArgBuffer) -> Launcher:
        """Load ``artifact``'s entry (cache modules per image) and return its launcher
        (``launcher(grid, block, shared_bytes, stream)``); ``kernel.kind`` is ``"raw"``
        for a raw kernel."""

    @abstractmethod
    def synchronize(self) -> None:
        """Wait for all work on the device; a device fault raises ``SyncFailed``."""

    @property
    @abstractmethod
    def stream(self) -> Stream:
        """The default stream (programs launch there unless given another)."""

    # ---- optional, with defaults -----------------------------------------------------------
    def max_grid_blocks(self, block_size: int) -> int:
        """Most blocks an elementwise launch uses (the entries loop grid-stride): enough to
        fill the device a few times over."""
        return 2**31 - 1

    def params_converter(self, kernel: KernelIR) -> Callable[[bytes], Any]:
        """For a device that does not pack arguments: what its launcher receives as
        ``args.params`` for the params' packed bytes (converted once per params object)."""
        return bytes

    def run_reduce_blocks(self, entry: Any, count: int, block_size: int) -> int:
        """Partials ``Kernel.run`` asks a reduce launch of ``entry`` (what :meth:`_load`
        returned) over ``count`` elements for: by default one per block, at most 1024."""
        return min(-(-count // block_size), 1024)

    def create_stream(self) -> Stream:
        """A new stream (capability ``"streams"``)."""
        raise Unsupported(f"backend {self.backend!r} does not provide streams (capability "
                          "'streams')")

    def create_event(self, timing: bool = True) -> Event:
        """A new event (capability ``"events"``)."""
        raise Unsupported(f"backend {self.backend!r} does not provide events (capability "
                          "'events')")

    def pinned(self, shape: Any, dtype: Any = np.uint8) -> np.ndarray:
        """A host array for fast transfers: page-locked where the backend declares
        ``"pinned_memory"``, an ordinary array elsewhere."""
        return np.empty(shape, dtype)

    def pin(self, host: np.ndarray) -> bool:
        """Page-lock ``host``'s memory for fast, truly asynchronous copies while it lives;
        False when the backend cannot (callers then stage through :meth:`pinned`)."""
        return False

    def host_array(self, buf: Buffer, dtype: np.dtype) -> np.ndarray:
        """The host memory of ``buf`` as a flat array of ``dtype`` (capability
        ``"host_memory"``; a device with ``packs_arguments = False`` gets these arrays in its
        launcher instead of packed addresses)."""
        raise Unsupported(f"backend {self.backend!r} does not compute on host memory "
                          "(capability 'host_memory')")

    def borrow(self, host: np.ndarray) -> Buffer:
        """A buffer viewing ``host``'s memory (capability ``"host_memory"``; required of a
        packing device that declares it: ``run`` packs these buffers' addresses)."""
        raise Unsupported(f"backend {self.backend!r} cannot compute on host memory "
                          "(capability 'host_memory')")

    def _borrow(self, addr: int, nbytes: int) -> Buffer:
        """A borrowed buffer (``owned=False``) over ``nbytes`` of this device's memory at
        ``addr`` that someone else owns (interop on a device that does not compute on host
        memory)."""
        raise Unsupported(f"backend {self.backend!r} cannot borrow foreign device memory")

    def pointer_ordinal(self, addr: int) -> int | None:
        """The ordinal of the device whose memory ``addr`` is, None when it is none of this
        backend's (interop with the CUDA Array Interface, which names no device)."""
        return self.ordinal

    def stream_handle(self, stream: Stream) -> int | None:
        """The native handle of ``stream`` that other libraries know it by (``CUstream``),
        None on a device without streams to order with."""
        return None

    def order_streams(self, waiter: int, signaller: int) -> None:  # noqa: B027 - no streams
        """Make work enqueued later on native stream ``waiter`` wait for the work already
        enqueued on native stream ``signaller`` (either may be another library's)."""

    def close(self) -> None:  # noqa: B027 - optional: a device may hold nothing to release
        """Release what the device holds (idempotent)."""

    # ---- checked public surface --------------------------------------------------------------
    def alloc(self, nbytes: int) -> Buffer:
        """``nbytes`` bytes of device memory (``AllocFailed`` when it cannot be had)."""
        if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or nbytes < 0:
            raise InvalidArgument(f"alloc: nbytes must be a non-negative int, got {nbytes!r}")
        nbytes = int(nbytes)
        if nbytes > MAX_ALLOC_BYTES:
            raise AllocFailed(f"{self.backend}: cannot allocate {nbytes} bytes on device "
                              f"{self.ordinal} (more than any device holds)")
        try:
            return self._alloc(nbytes)
        except AllocFailed as exc:
            if str(nbytes) in str(exc):
                raise
            raise AllocFailed(f"{self.backend}: cannot allocate {nbytes} bytes on device "
                              f"{self.ordinal}: {exc}") from exc
        except (MemoryError, ValueError, OverflowError) as exc:
            raise AllocFailed(f"{self.backend}: cannot allocate {nbytes} bytes on device "
                              f"{self.ordinal}: {exc}") from exc

    def program(self, artifact: Artifact, kernel: KernelIR) -> KernelProgram:
        """Load ``artifact`` (compiled from ``kernel``) as a launchable program."""
        from ..kinds.program import KernelProgram

        if artifact.backend != self.backend:
            raise ModuleLoadFailed(f"{self.backend}: cannot load an artifact of backend "
                                   f"{artifact.backend!r} ({artifact.entry!r})")
        return KernelProgram(self, artifact, kernel)

    def check_launch(self, what: str, block: tuple[int, int, int], shared_bytes: int = 0,
                     static_shared: int = 0) -> None:
        """The launch-geometry check of every kernel, raw and spec alike: ``InvalidArgument``
        naming ``what`` (the kernel, and for a spec its ``block_size``) when ``block``
        exceeds this device's ``max_block_dims`` or ``max_block_threads``, or
        ``shared_bytes`` of dynamic plus ``static_shared`` of static shared memory exceed
        ``max_shared_bytes``. Raw launches call it per launch shape, ``Kernel`` once when a
        spec (whose block is fixed) is loaded."""
        where = f"{self.backend} device {self.ordinal}"
        for axis, d, limit in zip("xyz", block, self.max_block_dims, strict=True):
            if d > limit:
                raise InvalidArgument(f"{what}: block {axis}={d} exceeds {where}'s limit "
                                      f"{limit} (max_block_dims)")
        threads = block[0] * block[1] * block[2]
        if threads > self.max_block_threads:
            raise InvalidArgument(f"{what}: block {block} ({threads} threads) exceeds {where}'s "
                                  f"{self.max_block_threads} threads per block "
                                  "(max_block_threads)")
        if shared_bytes + static_shared > self.max_shared_bytes:
            raise InvalidArgument(f"{what}: {shared_bytes} dynamic + {static_shared} static "
                                  f"shared bytes exceed {where}'s {self.max_shared_bytes} "
                                  "(max_shared_bytes)")

    def check_kernel(self, kernel: KernelIR) -> None:
        """The load-time checks of a spec's kernel (before compiling: the driver would refuse
        every launch): its fixed ``block_size`` (:meth:`check_launch`) and its arguments'
        bytes (:meth:`check_arguments`)."""
        self.check_launch(f"{kernel.kind} spec {kernel.name!r} (block_size="
                          f"{kernel.block_size})", (kernel.block_size, 1, 1))
        self.check_arguments(kernel)

    def check_arguments(self, kernel: KernelIR, layout: ArgLayout | None = None) -> None:
        """``InvalidArgument`` when ``kernel``'s entry arguments (``layout``, by default
        :func:`arg_layout`'s: a spec's pointers, counts and params struct; a raw kernel's
        signature) exceed what one launch of this device may pass."""
        limit = self.max_argument_bytes
        size = (layout or arg_layout(kernel)).size
        if limit is not None and size > limit:
            what = f" (params struct {kernel.params.name})" if kernel.params is not None else ""
            raise InvalidArgument(
                f"{kernel.name}: its arguments take {size} bytes{what}; {self.backend} device "
                f"{self.ordinal} passes at most {limit} bytes per launch (move large tables "
                "into a buffer and pass it to a raw kernel, or shrink the params)")

    def has(self, capability: str) -> bool:
        """True when the device declares ``capability`` (see :data:`CAPABILITIES`)."""
        return capability in self.capabilities

    @property
    def context(self) -> Device:
        """The device itself (``k.context.synchronize()``)."""
        return self

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.backend}:{self.ordinal} {self.name} ({self.arch})>"


def grid_blocks(count: int, per_block: int, cap: int) -> int:
    """Blocks covering ``count`` elements at ``per_block`` each, at most ``cap``."""
    return max(1, min(math.ceil(count / per_block), cap))

"""Typed records exchanged through the plugin hooks (no loose dicts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # records stay importable without NumPy (the registry imports them)
    from ..ir.kernel import KernelIR, Kind

PLUGIN_API_VERSION = 3
"""The version of the contract a plugin implements (hooks, ``gompute_core.backend`` base
classes). A plugin declaring another version is refused with both versions named.
1: four broadcast hooks, each backend its own per-kind programs; 2: routed hooks,
``gompute_compiler``, the SDK's ``Device``/``Buffer``/``Compiler`` with the core owning
every kind."""


@dataclass(frozen=True)
class BackendInfo:
    """What a plugin says about itself (``gompute_backend_info``).

    ``features`` are the kernel features the backend's compiler and launcher take; the
    core decides from them which kinds it runs. ``kinds`` (kind names) is deprecated,
    still honoured. ``unsupported_types`` lists short type names (``"f16"``, ``"f64"``) the
    backend cannot run; the conformance suite reads it instead of skipping
    tests by name. Higher ``priority`` is probed first by ``AutoKernel``
    (CUDA 300, HIP 200, CPU 100).
    """

    name: str
    version: str
    api_version: int
    priority: int
    kinds: tuple[Kind, ...]
    unsupported_types: tuple[str, ...] = ()
    description: str = ""
    example_arch: str = ""  # e.g. "sm_90": what error messages suggest pinning
    features: tuple[str, ...] | None = None
    """Kernel features (``"entries"``, ``"raw"``, ``"barriers"``, ``"shared_memory"``,
    ``"atomics"``): the core runs every kind whose needs they cover
    (``gompute_core.kinds.support``). ``kinds`` (names) is deprecated: still honoured,
    pass ``()`` once ``features`` says it."""


@dataclass(frozen=True)
class DeviceInfo:
    """One device a backend found."""

    ordinal: int
    name: str
    arch: str
    memory_bytes: int = 0


@dataclass(frozen=True)
class Availability:
    """Answer of ``gompute_probe``: usable devices, or the reason there are none."""

    backend: str
    available: bool
    reason: str = ""
    devices: tuple[DeviceInfo, ...] = ()
    compiler: str = ""  # e.g. "nvrtc 13.0"; empty when the backend cannot compile here
    warnings: tuple[str, ...] = ()
    """Known hazards of what was found (a compiler version that miscompiles): ``gompute
    doctor`` prints each."""


@dataclass(frozen=True)
class CompileRequest:
    """One kernel for one target, compiled through the backend's ``Compiler``.

    The core always names ``arch``: ``g.compile`` without one takes device 0's
    from the probe (:func:`gompute_core.runtime.compile.detected_arch`), so no
    plugin detects devices to compile.
    ``options`` are extra compiler options, part of the cache key. ``source``
    is a raw kernel's own C text (``g.RawKernel.from_source``): compiled as is
    instead of rendering ``kernel`` (which then only names the entry and has
    no functions).
    """

    backend: str
    kernel: KernelIR
    arch: str | None = None
    options: tuple[str, ...] = ()
    source: str | None = None


@dataclass(frozen=True)
class Artifact:
    """A compiled kernel: what ``g.compile`` returns and ``gompute build`` writes.

    ``image`` is the loadable bytes (cubin, ptx, hsaco; for the CPU, the
    rendered Python module's source encoded as UTF-8), ``format`` names it,
    ``entry`` is the symbol to launch, ``target`` the arch it was built for,
    ``source`` the rendered code, ``compiler`` the compiler and version that
    built it, ``digest`` the KernelIR digest it came from.
    """

    backend: str
    image: bytes
    format: str
    entry: str
    target: str
    source: str
    compiler: str = ""
    digest: str = ""
    kind: str = ""
    extra: tuple[tuple[str, str], ...] = field(default=())

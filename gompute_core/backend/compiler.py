"""``Compiler``: how a backend turns a KernelIR into an artifact; the core owns the cache.

A backend's compiler implements ``identity()`` (the compiler and its
version: ``"nvrtc 13.0"``), ``render(kernel, arch)`` (the source text) and
``build(source, kernel, arch, options)`` (the image). :func:`compile_kernel`
renders, then looks the artifact up under a key the core computes from the
backend, the compiler's identity, the arch, the options, the sha256 of the
rendered source and the kernel's IR digest: any change to the renderer, the
compiler or its inputs misses, with no version constant to bump by hand.
Hits come from this process's memory, then the on-disk cache (atomic
writes, a checksum checked before use), unless the compiler opts out of the
disk (``disk_cache = False``: artifacts cheaper to rebuild than to read).
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ..errors import InvalidArgument
from ..plugins.records import Artifact
from ..runtime.diskcache import CompileCache

if TYPE_CHECKING:
    from ..ir.kernel import KernelIR


@dataclass(frozen=True)
class Built:
    """What :meth:`Compiler.build` returns: the loadable image, its format (``"cubin"``,
    ``"ptx"``, ``"hsaco"``, ``"python"``, ``"opencl-source"``, ...), extra string pairs
    worth recording (the exact options, the code the image holds), and the entry symbol
    when the dialect had to mangle the spec name (a target's reserved word); default: the
    spec name."""

    image: bytes
    format: str
    extra: tuple[tuple[str, str], ...] = ()
    entry: str = ""


class Compiler(ABC):
    """One backend's compiler (returned by the plugin's ``gompute_compiler`` hook)."""

    backend: ClassVar[str]
    #: False when an artifact is cheaper to rebuild than to read back from disk
    disk_cache: ClassVar[bool] = True

    @abstractmethod
    def identity(self) -> str:
        """The compiler and its version (part of every cache key); ``BackendUnavailable``
        when no compiler is installed."""

    def check_arch(self, arch: str) -> str:
        """``arch`` validated (and normalised) for this compiler; ``InvalidArgument`` naming
        the targets it supports otherwise. The default accepts any non-empty string."""
        if not isinstance(arch, str) or not arch:
            raise InvalidArgument(f"arch: expected a non-empty string, got {arch!r}")
        return arch

    @abstractmethod
    def render(self, kernel: KernelIR, arch: str) -> str:
        """The complete source of ``kernel`` for ``arch``."""

    @abstractmethod
    def build(self, source: str, kernel: KernelIR, arch: str,
              options: tuple[str, ...]) -> Built:
        """Compile ``source``; ``CompileFailed`` carrying the compiler's log on rejection."""


def cache_key(compiler: Compiler, kernel: KernelIR, arch: str, options: tuple[str, ...],
              source: str) -> tuple[str, ...]:
    """The parts of ``kernel``'s cache key (see the module docstring)."""
    return (compiler.backend, compiler.identity(), arch, "\0".join(options),
            hashlib.sha256(source.encode()).hexdigest(), kernel.digest())


def compile_kernel(compiler: Compiler, kernel: KernelIR, arch: str,
                   options: tuple[str, ...] = (), cache: CompileCache | None = None,
                   source: str | None = None) -> Artifact:
    """Render ``kernel`` for ``arch`` (or take ``source``, a raw kernel's own C text) and
    return its artifact, built or from ``cache`` (by default a fresh one of the backend's
    namespace: the disk level only)."""
    arch = compiler.check_arch(arch)
    if source is None:
        source = compiler.render(kernel, arch)
    key = cache_key(compiler, kernel, arch, options, source)

    def build() -> Artifact:
        built = compiler.build(source, kernel, arch, options)
        return Artifact(backend=compiler.backend, image=built.image, format=built.format,
                        entry=built.entry or kernel.name, target=arch, source=source,
                        compiler=key[1], digest=kernel.digest(), kind=kernel.kind,
                        extra=built.extra)

    if cache is None:
        cache = CompileCache(compiler.backend)
    return cache.get_or_build(key, build, disk=compiler.disk_cache)

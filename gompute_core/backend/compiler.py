"""``Compiler``: how a backend turns a KernelIR into an artifact; the core owns the cache.

A backend's compiler implements ``identity()`` (the compiler and its
version: ``"nvrtc 13.0"``), ``render(kernel, arch)`` (the source text) and
``build(source, kernel, arch, options)`` (the image). The compile layer
(:func:`gompute_core.compilation.compile_kernel`) renders, then looks the
artifact up under a key computed from the backend, the backend's own identity
(:func:`backend_identity`: the distribution providing the compiler's class,
its version and the sha256 of the class's module), the compiler's identity,
the arch, the options, the sha256 of the rendered source and the kernel's IR
digest: any change to the renderer, the compiler, the backend's release or
the inputs misses, with no version constant to bump by hand.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata as metadata
import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ..errors import InvalidArgument

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

    def close(self) -> None:  # noqa: B027 - optional: most compilers hold nothing
        """Release what the compiler holds (a compiler process, a library handle)."""


@functools.cache
def backend_identity(module: str) -> str:
    """Who builds with the compiler class defined in ``module``: its top-level package and
    the ``__version__`` it states (``"gompute_cpu 0.1.0"``), else the installed distribution
    holding that package and its version (``"unpackaged"`` for a module no distribution
    holds, a backend under development or a test's), and the sha256 of the module's file,
    so editing ``build()`` misses the cache even in an editable install whose version did
    not change."""
    top = module.partition(".")[0]
    version = getattr(sys.modules.get(top), "__version__", None)
    if isinstance(version, str):  # the package states it: no scan of the installed metadata
        release = f"{top} {version}"  # (a few ms on a large environment, on every cache hit
    else:                          # of a new process)
        try:
            dist = metadata.distribution(top)  # the usual case: named like its package
        except metadata.PackageNotFoundError:
            names = metadata.packages_distributions().get(top, [])
            dist = metadata.distribution(names[0]) if names else None
        release = f"{dist.metadata['Name']} {dist.version}" if dist is not None \
            else "unpackaged"
    path = getattr(sys.modules.get(module), "__file__", None)
    digest = "no file"
    if path:
        try:
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()[:16]
        except OSError:
            pass
    return f"{release}; {module} sha256:{digest}"

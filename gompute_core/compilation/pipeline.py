"""The compile pipeline: render, key, look up (memory, then disk), build, store.

:func:`compile_kernel` is the one path from a ``KernelIR`` to an ``Artifact``
for every backend; :func:`compile_artifact` runs it for a ``CompileRequest``
through the registry's compiler and this registry's per-backend
:class:`~gompute_core.compilation.diskcache.CompileCache`. The key's parts are
:func:`cache_key`'s (see :mod:`gompute_core.backend.compiler`).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from ..backend.compiler import Compiler, backend_identity
from ..errors import InvalidArgument
from ..plugins import manager
from ..plugins.records import Artifact, CompileRequest
from .diskcache import CompileCache

if TYPE_CHECKING:
    from ..ir.kernel import KernelIR


def cache_key(compiler: Compiler, kernel: KernelIR, arch: str, options: tuple[str, ...],
              source: str) -> tuple[str, ...]:
    """The parts of ``kernel``'s cache key (:mod:`gompute_core.backend.compiler` lists them)."""
    return (compiler.backend, backend_identity(type(compiler).__module__), compiler.identity(),
            arch, "\0".join(options), hashlib.sha256(source.encode()).hexdigest(),
            kernel.digest())


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
                        compiler=key[2], digest=kernel.digest(), kind=kernel.kind,
                        extra=built.extra)

    if cache is None:
        cache = CompileCache(compiler.backend)
    return cache.get_or_build(key, build, disk=compiler.disk_cache)


def compile_artifact(request: CompileRequest) -> Artifact:
    """Compile ``request`` with its backend's compiler, through the core's caches (no
    device needed: the request names the arch)."""
    if not isinstance(request.arch, str):
        raise InvalidArgument(f"arch: expected a string, got {request.arch!r}")
    comp = manager.compiler(request.backend)
    cache = manager.compile_cache(request.backend, CompileCache)
    return compile_kernel(comp, request.kernel, request.arch, request.options, cache,
                          source=request.source)

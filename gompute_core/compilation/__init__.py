"""The compile layer: the pipeline from a ``KernelIR`` to an ``Artifact`` and its caches.

Above the backend SDK (it drives a backend's ``Compiler``) and below the kinds
and the handles (which load what it returns).
"""

from __future__ import annotations

from .diskcache import CompileCache, DiskCache
from .pipeline import cache_key, compile_artifact, compile_kernel

__all__ = ["CompileCache", "DiskCache", "cache_key", "compile_artifact", "compile_kernel"]

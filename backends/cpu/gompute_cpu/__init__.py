"""Gompute's CPU backend: KernelIR -> Python source -> numba machine code.

Modules, one job each (after tinygrad's runtime): :mod:`.params` flattens a
params record into scalar/array leaves, :mod:`.render` turns IR functions
into numba-ready Python, :mod:`.kernels` wraps them in per-kind loops,
:mod:`.compiler` caches and imports the rendered module, :mod:`.program`
launches it, :mod:`.device` owns buffers and streams, :mod:`.plugin` answers
the four hooks.
"""

from __future__ import annotations

__version__ = "0.1.0"

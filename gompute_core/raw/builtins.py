"""``g.builtins``: the device builtins of raw kernels.

These names mean something only inside a ``@g.raw_kernel`` function, where the
frontend lowers each call to the IR (:mod:`gompute_core.ir.nodes`); called from
Python they raise ``KernelSyntaxError``. Geometry builtins take a constant
dimension (0, 1, 2 for x, y, z) and return an ``i64``, read from the real launch
on every backend (never from a block size the code assumes):

* ``global_id(d)`` = ``block_id(d) * block_dim(d) + local_id(d)``;
* ``local_id(d)``, ``block_id(d)``, ``block_dim(d)``, ``grid_dim(d)``.

``barrier()`` waits for every thread of the block (global and shared memory
written before it is visible after it); it must be reached by all threads of
the block, so a barrier under a condition that depends on the thread index is
rejected at compile time where the frontend can see it (and undefined where
it cannot, as in CUDA).

``threadfence()`` orders the calling thread's memory accesses for every thread of the
launch: what it wrote to global memory before the fence is visible to any thread that
sees a write it made after the fence (CUDA's ``__threadfence()``, OpenCL's
``mem_fence``); the way to publish a value through a flag set with an atomic.

``shared_array(T, n)`` / ``shared_array(T, (rows, cols))`` declares static
block-shared memory; assign it once, at the top level of the kernel's body.

``local_array(T, n)`` / ``local_array(T, (rows, cols))`` (also ``g.local_array``) declares
a per-thread array, zero-initialized, in any kernel function (spec element functions and
helpers too); called from Python it is ``numpy.zeros(shape, T)``, so the function still
runs as its own oracle.

Atomics return the element's old value: ``atomic_add/sub/min/max/exch(arr, i,
v)`` and ``atomic_cas(arr, i, compare, v)``, on global or shared arrays of
``i32``, ``u32``, ``i64``, ``u64``, ``f32`` and ``f64`` (``i`` is a tuple for a
2-D shared array). Float ``min``/``max`` store ``v`` only if it is less
(greater) than the element, so a NaN never replaces it; ``cas`` compares bit
patterns.
"""

from __future__ import annotations

from typing import Any, NoReturn

from ..errors import KernelSyntaxError

__all__ = [
    "GEOMETRY", "ATOMICS", "global_id", "local_id", "block_id", "block_dim", "grid_dim",
    "barrier", "threadfence", "shared_array", "local_array", "atomic_add", "atomic_sub",
    "atomic_min", "atomic_max", "atomic_exch", "atomic_cas",
]


def _device_only(name: str) -> NoReturn:
    raise KernelSyntaxError(f"g.builtins.{name}() exists only inside a @g.raw_kernel function "
                            "(it was called from Python)", construct=name)


def global_id(dim: int) -> int:
    """The thread's index in the grid along ``dim``."""
    _device_only("global_id")


def local_id(dim: int) -> int:
    """The thread's index in its block along ``dim``."""
    _device_only("local_id")


def block_id(dim: int) -> int:
    """The block's index in the grid along ``dim``."""
    _device_only("block_id")


def block_dim(dim: int) -> int:
    """The launch's block size along ``dim``."""
    _device_only("block_dim")


def grid_dim(dim: int) -> int:
    """The launch's grid size (in blocks) along ``dim``."""
    _device_only("grid_dim")


def barrier() -> None:
    """Wait for every thread of the block."""
    _device_only("barrier")


def threadfence() -> None:
    """Order this thread's memory accesses for every thread of the launch (in Python, the
    oracle's one thread: nothing to do)."""


def shared_array(dtype: Any, shape: int | tuple[int, ...]) -> Any:
    """Declare block-shared memory of ``shape`` elements of ``dtype``."""
    _device_only("shared_array")


def local_array(dtype: Any, shape: int | tuple[int, ...]) -> Any:
    """A per-thread array of ``shape`` elements of ``dtype``, zero-initialized: in Python
    (the oracle) ``numpy.zeros(shape, dtype)``; in kernel code a fixed-size array in
    registers or on the thread's stack (declare it once, at the top level of a function's
    body: see ``docs/kernel-language.md``)."""
    import numpy as np

    return np.zeros(shape, dtype)


def atomic_add(arr: Any, index: Any, value: Any) -> Any:
    """``arr[index] += value`` atomically; the old value."""
    _device_only("atomic_add")


def atomic_sub(arr: Any, index: Any, value: Any) -> Any:
    """``arr[index] -= value`` atomically; the old value."""
    _device_only("atomic_sub")


def atomic_min(arr: Any, index: Any, value: Any) -> Any:
    """``arr[index] = min(arr[index], value)`` atomically; the old value."""
    _device_only("atomic_min")


def atomic_max(arr: Any, index: Any, value: Any) -> Any:
    """``arr[index] = max(arr[index], value)`` atomically; the old value."""
    _device_only("atomic_max")


def atomic_exch(arr: Any, index: Any, value: Any) -> Any:
    """``arr[index] = value`` atomically; the old value."""
    _device_only("atomic_exch")


def atomic_cas(arr: Any, index: Any, compare: Any, value: Any) -> Any:
    """``arr[index] = value`` if it equals ``compare`` (bits), atomically; the old value."""
    _device_only("atomic_cas")


GEOMETRY: dict[Any, str] = {f: f.__name__ for f in
                            (global_id, local_id, block_id, block_dim, grid_dim)}
"""Geometry builtin function -> IR name."""
ATOMICS: dict[Any, str] = {f: f.__name__.removeprefix("atomic_") for f in
                           (atomic_add, atomic_sub, atomic_min, atomic_max, atomic_exch,
                            atomic_cas)}
"""Atomic builtin function -> IR op."""

"""Page-locking the caller's host arrays for ``run``, once for every GPU backend.

``run`` on a device with streams is fastest when the caller's arrays are
page-locked: the driver copies them by DMA, asynchronously, with no staging
copy. :class:`HostPinning` registers an array's memory (its owning array,
from 1 MiB) through the backend's two driver calls, keeps it registered
while that owner lives (a ``weakref.finalize`` unregisters it), and caps the
total at ``$GOMPUTE_PIN_BUDGET`` bytes (default 1 GiB; 0 disables pinning:
transfers are then staged through pinned buffers). This is a side effect a
user can see (page-locked memory is a limited resource), hence the budget.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import InvalidArgument

PIN_MIN_BYTES = 1 << 20
"""Host arrays smaller than this are staged, not page-locked."""
ENV_PIN_BUDGET = "GOMPUTE_PIN_BUDGET"


def pin_budget() -> int:
    """Most bytes of user arrays kept page-locked (``$GOMPUTE_PIN_BUDGET``, default 1 GiB)."""
    try:
        return int(os.environ.get(ENV_PIN_BUDGET, 1 << 30))
    except ValueError:
        return 1 << 30


class HostPinning:
    """Registers host memory with a driver: ``register(addr, nbytes) -> bool`` (False when
    the driver refuses) and ``unregister(addr)``; ``is_pinned(addr) -> bool`` (optional)
    tells whether a byte is in page-locked memory already (a pinned allocation of the
    driver, of CuPy or torch, or memory someone registered)."""

    def __init__(self, register: Callable[[int, int], bool],
                 unregister: Callable[[int], None],
                 is_pinned: Callable[[int], bool] | None = None) -> None:
        self._register, self._unregister = register, unregister
        self._is_pinned = is_pinned
        self._pinned: dict[int, tuple[int, weakref.finalize]] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        self._closed = False

    def pin(self, arr: np.ndarray) -> bool:
        """Page-lock the memory of ``arr``'s owning array while it lives; False when it is
        too small, over the budget or refused. An array over memory NumPy does not own
        (a pinned buffer of the driver, CuPy or torch; an mmap) is never registered: True
        when its first and last bytes are page-locked already (``is_pinned``), else
        False."""
        owner = arr
        while isinstance(owner.base, np.ndarray):
            owner = owner.base
        if owner.base is not None:
            if self._is_pinned is None or arr.nbytes < PIN_MIN_BYTES:
                return False
            addr = arr.ctypes.data
            return self._is_pinned(addr) and self._is_pinned(addr + arr.nbytes - 1)
        if owner.nbytes < PIN_MIN_BYTES:
            return False
        ptr, size = owner.ctypes.data, owner.nbytes
        with self._lock:
            hit = self._pinned.get(ptr)
            if hit is not None:
                return hit[0] == size and hit[1].alive
            if self._closed or self._bytes + size > pin_budget() or \
                    not self._register(ptr, size):
                return False
            fin = weakref.finalize(owner, self._release, ptr)
            fin.atexit = False
            self._pinned[ptr] = (size, fin)
            self._bytes += size
        return True

    def _release(self, ptr: int) -> None:
        with self._lock:
            size, _ = self._pinned.pop(ptr, (0, None))
            self._bytes -= size
            if not self._closed:
                self._unregister(ptr)

    def close(self) -> None:
        """Unregister everything (the device is closing)."""
        with self._lock:
            self._closed = True
            pinned, self._pinned = self._pinned, {}
            self._bytes = 0
        for ptr, (_, fin) in pinned.items():
            fin.detach()
            self._unregister(ptr)


class _HostBlock:
    """One block of page-locked host memory; ``free(addr)`` runs when the last array viewing
    it is collected (from whatever thread: ``free`` must not depend on the caller's)."""

    def __init__(self, addr: int, free: Callable[[int], None]) -> None:
        self.addr, self._free = addr, free

    def __del__(self) -> None:
        if not sys.is_finalizing():
            self._free(self.addr)


def pinned_array(alloc: Callable[[int], int], free: Callable[[int], None], shape: Any,
                 dtype: Any = np.uint8) -> np.ndarray:
    """A NumPy array of ``shape``/``dtype`` over host memory from ``alloc(nbytes) -> addr``
    (a driver's page-locked allocation), released with ``free(addr)`` when the array and
    every view of it are gone."""
    dt = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    if count < 0:
        raise InvalidArgument(f"pinned: negative shape {shape!r}")
    nbytes = max(count * dt.itemsize, 1)
    block = _HostBlock(alloc(nbytes), free)
    raw = (ctypes.c_ubyte * nbytes).from_address(block.addr)
    raw._gompute_block = block  # type: ignore[attr-defined]  # the array's base keeps it alive
    return np.frombuffer(raw, dtype=np.uint8)[:count * dt.itemsize].view(dt).reshape(shape)

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

import os
import threading
import weakref
from collections.abc import Callable

import numpy as np

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
    the driver refuses) and ``unregister(addr)``."""

    def __init__(self, register: Callable[[int, int], bool],
                 unregister: Callable[[int], None]) -> None:
        self._register, self._unregister = register, unregister
        self._pinned: dict[int, tuple[int, weakref.finalize]] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        self._closed = False

    def pin(self, arr: np.ndarray) -> bool:
        """Page-lock the memory of ``arr``'s owning array while it lives; False when it is
        too small, over the budget, not owned by a NumPy array, or refused."""
        owner = arr
        while isinstance(owner.base, np.ndarray):
            owner = owner.base
        if owner.base is not None or owner.nbytes < PIN_MIN_BYTES:
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

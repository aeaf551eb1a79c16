"""``HostPinning``, the SDK's page-locking of ``run``'s host arrays, with the two driver
calls and the page-locked query given as plain callables that record what they are asked
(no GPU here; ``test_cuda_runtime.py`` runs the same paths on CUDA's driver)."""

from __future__ import annotations

import ctypes

import numpy as np

from gompute_core.backend import HostPinning
from gompute_core.backend.pinning import PIN_MIN_BYTES


class Driver:
    """Registers everything; ``locked`` is the set of byte ranges page-locked already."""

    def __init__(self, locked: tuple[int, int] | None = None) -> None:
        self.registered: list[tuple[int, int]] = []
        self.asked: list[int] = []
        self.locked = locked

    def register(self, addr: int, nbytes: int) -> bool:
        self.registered.append((addr, nbytes))
        return True

    def unregister(self, addr: int) -> None:
        self.registered = [r for r in self.registered if r[0] != addr]

    def is_pinned(self, addr: int) -> bool:
        self.asked.append(addr)
        return self.locked is not None and self.locked[0] <= addr < self.locked[1]


def _foreign(nbytes: int) -> tuple[np.ndarray, ctypes.Array]:
    """A float64 array over memory NumPy does not own."""
    raw = (ctypes.c_ubyte * nbytes)()
    return np.frombuffer(raw, np.float64), raw


def test_owned_arrays_are_registered_once_and_released_with_their_owner() -> None:
    drv = Driver()
    pinning = HostPinning(drv.register, drv.unregister, drv.is_pinned)
    a = np.zeros(PIN_MIN_BYTES // 8)
    assert pinning.pin(a[10:]) and pinning.pin(a)
    assert drv.registered == [(a.ctypes.data, a.nbytes)] and drv.asked == []
    del a
    assert drv.registered == []


def test_foreign_memory_is_never_registered_and_used_when_locked_end_to_end() -> None:
    a, raw = _foreign(PIN_MIN_BYTES)
    start = ctypes.addressof(raw)
    locked = Driver(locked=(start, start + PIN_MIN_BYTES))
    assert HostPinning(locked.register, locked.unregister, locked.is_pinned).pin(a)
    assert locked.asked == [start, start + PIN_MIN_BYTES - 1] and locked.registered == []
    half = Driver(locked=(start, start + PIN_MIN_BYTES // 2))  # the last byte is not
    assert not HostPinning(half.register, half.unregister, half.is_pinned).pin(a)
    assert half.registered == []


def test_foreign_memory_without_a_query_or_too_small_is_staged() -> None:
    a, _raw = _foreign(PIN_MIN_BYTES)
    drv = Driver(locked=(0, 2**64))
    assert not HostPinning(drv.register, drv.unregister).pin(a)
    small, _raw2 = _foreign(PIN_MIN_BYTES // 2)
    assert not HostPinning(drv.register, drv.unregister, drv.is_pinned).pin(small)
    assert drv.asked == [] and drv.registered == []

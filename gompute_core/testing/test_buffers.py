"""Tier ``buffers``: every public ``Buffer`` method against NumPy, and its refusals.

Offsets of ``upload_at``/``download_at``, device-to-device copies, ``fill``,
transfers past either end and use after ``free()`` (``InvalidArgument``,
nothing copied), ``alloc(0)``, an allocation no device can satisfy
(``AllocFailed``; a driver error recorded for this backend if any), and
``device_addr`` (non-zero, distinct for live buffers).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import gompute_core as g

from ._support import mark

TIER = "buffers"
pytestmark = mark()

N = 4096


@pytest.fixture(scope="module")
def device(gompute_backend: str) -> Any:
    """Device 0 of the backend under test."""
    from gompute_core.plugins import manager

    return manager.open_device(gompute_backend, 0)


@pytest.fixture
def pattern() -> np.ndarray:
    """``N`` distinct-looking bytes."""
    return (np.arange(N, dtype=np.uint32) * 2654435761 >> 13).astype(np.uint8)


@pytest.fixture
def buf(device: Any, pattern: np.ndarray) -> Iterator[Any]:
    """A buffer of ``N`` bytes holding :func:`pattern`."""
    b = device.alloc(N)
    b.upload(pattern)
    yield b
    b.free()


def _contents(b: Any) -> np.ndarray:
    out = np.empty(b.nbytes, np.uint8)
    b.download(out)
    return out


@pytest.mark.parametrize("offset,count", [(0, 1), (1, 7), (333, 1000), (N - 16, 16)])
def test_upload_at_and_download_at(buf: Any, pattern: np.ndarray, offset: int,
                                   count: int) -> None:
    """Bytes land at the offset asked for, and are read back from it."""
    chunk = np.full(count, 0xA5, np.uint8) ^ np.arange(count, dtype=np.uint8)
    buf.upload_at(offset, chunk)
    want = pattern.copy()
    want[offset:offset + count] = chunk
    np.testing.assert_array_equal(_contents(buf), want, err_msg=f"upload_at({offset})")
    back = np.zeros(count, np.uint8)
    buf.download_at(offset, back)
    np.testing.assert_array_equal(back, chunk, err_msg=f"download_at({offset})")


def test_async_transfers_on_the_default_stream(buf: Any, device: Any,
                                               pattern: np.ndarray) -> None:
    """``*_at_async`` on the default stream, done once it is synchronized."""
    chunk = np.arange(100, dtype=np.uint8)
    buf.upload_at_async(64, chunk, stream=device.stream)
    back = np.zeros(100, np.uint8)
    buf.download_at_async(64, back, stream=device.stream)
    device.stream.synchronize()
    np.testing.assert_array_equal(back, chunk)


def test_copy_from(device: Any, buf: Any, pattern: np.ndarray) -> None:
    """Whole and prefix device-to-device copies, sync and async."""
    dst = device.alloc(N)
    try:
        dst.fill(0)
        dst.copy_from(buf)
        np.testing.assert_array_equal(_contents(dst), pattern, err_msg="copy_from")
        dst.fill(7)
        dst.copy_from(buf, 100)
        want = np.full(N, 7, np.uint8)
        want[:100] = pattern[:100]
        np.testing.assert_array_equal(_contents(dst), want, err_msg="copy_from(nbytes=100)")
        dst.fill(9)
        dst.copy_from_async(buf, stream=device.stream)
        device.stream.synchronize()
        np.testing.assert_array_equal(_contents(dst), pattern, err_msg="copy_from_async")
    finally:
        dst.free()


def test_fill(buf: Any, pattern: np.ndarray) -> None:
    """``fill`` of a span, to the end, and of everything."""
    want = pattern.copy()
    buf.fill(0x3C, 10, offset=5)
    want[5:15] = 0x3C
    np.testing.assert_array_equal(_contents(buf), want, err_msg="fill(nbytes=10, offset=5)")
    buf.fill(0xFF, offset=N - 3)
    want[N - 3:] = 0xFF
    np.testing.assert_array_equal(_contents(buf), want, err_msg="fill to the end")
    buf.fill(0)
    assert not _contents(buf).any(), "fill(0) left non-zero bytes"


PAST_END: dict[str, Callable[[Any, Any], None]] = {
    "upload_at": lambda b, other: b.upload_at(N - 4, np.zeros(8, np.uint8)),
    "upload (too long)": lambda b, other: b.upload(np.zeros(N + 1, np.uint8)),
    "download_at": lambda b, other: b.download_at(N - 4, np.zeros(8, np.uint8)),
    "upload_at_async": lambda b, other: b.upload_at_async(N, np.zeros(1, np.uint8)),
    "download_at_async": lambda b, other: b.download_at_async(N, np.zeros(1, np.uint8)),
    "copy_from (nbytes)": lambda b, other: b.copy_from(other, N + 1),
    "fill": lambda b, other: b.fill(1, 8, offset=N - 4),
    "negative offset": lambda b, other: b.upload_at(-1, np.zeros(1, np.uint8)),
}


@pytest.mark.parametrize("what", sorted(PAST_END))
def test_past_the_end_is_refused(what: str, device: Any, buf: Any,
                                 pattern: np.ndarray) -> None:
    """A transfer past either end is ``InvalidArgument`` and copies nothing."""
    other = device.alloc(N + 8)
    try:
        other.fill(0xEE)
        with pytest.raises(g.InvalidArgument):
            PAST_END[what](buf, other)
        np.testing.assert_array_equal(_contents(buf), pattern,
                                      err_msg=f"{what}: bytes changed by a refused call")
    finally:
        other.free()


USE_AFTER_FREE: dict[str, Callable[[Any, Any], Any]] = {
    "upload": lambda b, other: b.upload(np.zeros(4, np.uint8)),
    "download": lambda b, other: b.download(np.zeros(4, np.uint8)),
    "upload_at": lambda b, other: b.upload_at(4, np.zeros(4, np.uint8)),
    "download_at": lambda b, other: b.download_at(4, np.zeros(4, np.uint8)),
    "copy_from (freed destination)": lambda b, other: b.copy_from(other, 4),
    "copy_from (freed source)": lambda b, other: other.copy_from(b, 4),
    "fill": lambda b, other: b.fill(0),
    "device_addr": lambda b, other: b.device_addr(),
}


@pytest.mark.parametrize("what", sorted(USE_AFTER_FREE))
def test_use_after_free_is_refused(what: str, device: Any) -> None:
    """Any use of a freed buffer is ``InvalidArgument``; ``free`` again is a no-op."""
    b, other = device.alloc(64), device.alloc(64)
    try:
        b.free()
        with pytest.raises(g.InvalidArgument, match="free"):
            USE_AFTER_FREE[what](b, other)
        b.free()
    finally:
        other.free()


def test_alloc_zero(device: Any) -> None:
    """``alloc(0)`` is a buffer of no bytes: empty transfers work, ``free`` works."""
    b = device.alloc(0)
    assert b.nbytes == 0
    b.upload(np.zeros(0, np.uint8))
    b.download(np.zeros(0, np.uint8))
    with pytest.raises(g.InvalidArgument):
        b.upload(np.zeros(1, np.uint8))
    b.free()


def test_allocation_failure(device: Any, gompute_backend: str) -> None:
    """A petabyte is ``AllocFailed`` naming the size; a recorded driver error is ours."""
    with pytest.raises(g.AllocFailed, match="1125899906842624"):
        device.alloc(1 << 50)
    last = g.last_driver_error()
    assert last is None or last[0] == gompute_backend, \
        f"last_driver_error() after a failed {gompute_backend} alloc names {last}"
    b = device.alloc(16)  # the device still works
    b.free()


def test_device_addresses(device: Any) -> None:
    """Live buffers have non-zero, non-overlapping addresses; ``device_addr`` is ``addr``."""
    bufs = [device.alloc(n) for n in (1, 100, 4096, 100_000)]
    try:
        spans = sorted((b.device_addr(), b.nbytes) for b in bufs)
        assert all(b.device_addr() == b.addr for b in bufs)
        assert spans[0][0] != 0, "device_addr() is 0 (a null pointer)"
        for (a0, n0), (a1, _) in zip(spans, spans[1:], strict=False):
            assert a0 + n0 <= a1, f"buffers overlap: {a0:#x}+{n0} and {a1:#x}"
    finally:
        for b in bufs:
            b.free()

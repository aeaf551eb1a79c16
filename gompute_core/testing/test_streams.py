"""Tier ``streams``: streams and events, for devices that declare them.

Order of work on one stream, a program's assigned stream honoured, two
streams joined by an event, ``query`` and elapsed time. Deselected by the
capabilities ``"streams"`` and ``"events"`` a device does not declare.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

import gompute_core as g

from ._support import mark
from ._tiers import LongWork, timed
from .kernels_tiers import TWICE

TIER = "streams"
pytestmark = mark(types=("f32", "u32"), capability="streams")


@pytest.fixture
def long(gompute_long_work: LongWork) -> LongWork:
    """Work that takes a while on this backend."""
    return gompute_long_work


def test_create_stream(long: LongWork) -> None:
    """``create_stream`` gives a stream of this device, idle and synchronizable."""
    device = long.kernel.context
    s = device.create_stream()
    assert s.device is device
    s.synchronize()
    assert s.query()


def test_order_on_one_stream(gompute_backend: str) -> None:
    """upload, two launches and download enqueued on one new stream run in order."""
    with g.Kernel(TWICE, gompute_backend) as k:
        s = k.context.create_stream()
        k.stream = s
        host = np.linspace(-3, 3, 5000, dtype=np.float32)
        out = np.empty_like(host)
        buf = k.alloc(host.size)
        buf.upload_at_async(0, host, stream=s)
        k.launch(buf, host.size)
        k.launch(buf, host.size)
        buf.download_at_async(0, out, stream=s)
        s.synchronize()
        buf.free()
    want = (host * np.float32(2) + np.float32(1)) * np.float32(2) + np.float32(1)
    np.testing.assert_array_equal(out, want)


def test_assigned_stream_is_honoured(long: LongWork) -> None:
    """Work launched on an assigned stream is on that stream, not the default one."""
    device = long.kernel.context
    s = device.create_stream()
    buf = long.buffer()
    try:
        device.synchronize()
        long.launch(buf, stream=s)
        on_default = timed(device.stream.synchronize)
        on_assigned = timed(s.synchronize)
        assert on_default < 0.5 * long.seconds, (
            f"the default stream waited {on_default:.3f} s for work launched on another "
            f"stream (launch: {long.seconds:.3f} s, assigned stream then {on_assigned:.3f} s)")
        long.check(buf, "after the assigned stream's synchronize")
    finally:
        device.synchronize()
        buf.free()


def test_query_on_a_created_stream(long: LongWork) -> None:
    """A new stream's ``query`` is not True while its work is pending, True after."""
    s = long.kernel.context.create_stream()
    buf = long.buffer()
    try:
        long.launch(buf, stream=s)
        done = s.query()
        waited = timed(s.synchronize)
        assert not (done and waited > 0.5 * long.seconds), (
            f"query() said idle, then synchronize() waited {waited:.3f} s")
        assert s.query(), "query() is False after synchronize()"
    finally:
        long.kernel.context.synchronize()
        buf.free()


@pytest.mark.gompute(capability="events")
def test_two_streams_joined_by_an_event(long: LongWork) -> None:
    """A copy on stream B waiting for an event recorded after a launch on stream A sees the
    finished launch."""
    device = long.kernel.context
    a, b = device.create_stream(), device.create_stream()
    src, dst = long.buffer(), long.kernel.alloc(long.n)
    try:
        device.synchronize()
        long.launch(src, stream=a)
        event = device.create_event()
        event.record(a)
        b.wait_event(event)
        dst.copy_from_async(src, stream=b)
        b.synchronize()
        long.check(dst, "copy on stream B after waiting for stream A's event")
    finally:
        device.synchronize()
        src.free()
        dst.free()


@pytest.mark.gompute(capability="events")
def test_event_query_and_elapsed_time(long: LongWork) -> None:
    """An event after long work is not done before the work has run; elapsed time is
    plausible (on a device whose calls wait for their work, ``query`` is True at once)."""
    device = long.kernel.context
    s = device.create_stream()
    buf = long.buffer()
    try:
        start, end = device.create_event(), device.create_event()
        t0 = time.perf_counter()
        start.record(s)
        long.launch(buf, stream=s)
        end.record(s)
        early = end.query()
        queried = time.perf_counter() - t0
        end.synchronize()
        wall = time.perf_counter() - t0
        assert end.query()
        us = end.elapsed_us(start)
        assert math.isfinite(us) and 0 <= us <= wall * 1e6 * 1.5 + 1000, \
            f"elapsed_us {us} for work that took {wall:.3f} s of wall time"
        if early:  # fine only where the work had already run (a device whose calls wait)
            assert us <= queried * 1e6 * 1.5 + 1000, (
                f"query() was True {queried:.3f} s after the start event, before the "
                f"{us / 1e6:.3f} s of work the event follows had run")
    finally:
        device.synchronize()
        buf.free()

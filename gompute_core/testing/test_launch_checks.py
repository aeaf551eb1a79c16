"""Tier ``launch``: the checked launch refuses bad input, and ``launch`` only enqueues.

Bad counts, buffers of another type, short buffers, and a launch that
returns before its work is done (which ``synchronize`` and ``query`` must
then account for: see :mod:`._tiers`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gompute_core as g

from ._support import mark
from ._tiers import LongWork, timed
from .kernels_tiers import TWICE

TIER = "launch"
pytestmark = mark(types=("f32", "u32"))


@pytest.fixture(scope="module")
def twice(gompute_backend: str) -> Any:
    """An open handle of ``2x + 1`` on f32."""
    with g.Kernel(TWICE, gompute_backend) as k:
        yield k


@pytest.fixture
def long(gompute_long_work: LongWork) -> LongWork:
    """Work that takes a while on this backend."""
    return gompute_long_work


@pytest.mark.parametrize("n", [-1, 1.5, "3", None, 2**64])
def test_bad_counts(twice: Any, n: Any) -> None:
    """A count that is not a u64 is ``InvalidArgument``."""
    buf = twice.alloc(8)
    try:
        with pytest.raises(g.InvalidArgument):
            twice.launch(buf, n)
    finally:
        buf.free()


@pytest.mark.parametrize("what", ["ndarray", "bytes", "None", "freed"])
def test_wrong_buffer_types(twice: Any, what: str) -> None:
    """Anything but memory of this device holding the kernel's element type is
    ``InvalidArgument``. (Arrays already on the kernel's device are valid operands, NumPy's
    on a host-memory device included: the ndarray here has the wrong element type, and on
    a GPU it is host memory too.)"""
    freed = twice.alloc(8)
    freed.free()
    bad = {"ndarray": np.zeros(8, np.float64), "bytes": b"\0" * 32, "None": None,
           "freed": freed}[what]
    with pytest.raises(g.InvalidArgument):
        twice.launch(bad, 8)


def test_short_buffer(twice: Any) -> None:
    """A buffer holding fewer elements than the count is refused, and left alone."""
    buf = twice.alloc(10)
    try:
        buf.upload(np.arange(10, dtype=np.float32))
        with pytest.raises(g.InvalidArgument, match="10"):
            twice.launch(buf, 11)
        back = np.empty(10, np.float32)
        buf.download(back)
        np.testing.assert_array_equal(back, np.arange(10, dtype=np.float32))
    finally:
        buf.free()


def test_synchronize_waits_for_the_launch(long: LongWork) -> None:
    """After ``context.synchronize()`` the work is complete and the stream is idle."""
    buf = long.buffer()
    try:
        long.launch(buf)
        long.kernel.context.synchronize()
        assert long.kernel.stream.query(), "query() is False after synchronize()"
        long.check(buf, "after synchronize")
    finally:
        buf.free()


def test_query_does_not_report_pending_work_as_done(long: LongWork) -> None:
    """``stream.query()`` right after a long launch is True only if nothing is pending:
    a ``synchronize`` that then still waits for most of the work proves it wrong."""
    buf = long.buffer()
    try:
        long.kernel.context.synchronize()
        long.launch(buf)
        done = long.kernel.stream.query()
        waited = timed(long.kernel.stream.synchronize)
        assert not (done and waited > 0.5 * long.seconds), (
            f"query() said the stream was idle, then synchronize() waited {waited:.3f} s "
            f"for a launch of {long.seconds:.3f} s")
        long.check(buf, "after stream synchronize")
    finally:
        buf.free()

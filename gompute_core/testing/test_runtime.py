"""Tier ``runtime``: the backend-neutral device layer ``g.runtime.Compute``, no vendor code.

Everything goes through ``g.runtime.Compute(backend)`` and the objects it
hands out: partial and offset transfers of typed data against NumPy slices,
device-to-device copies, byte fills, pinned host arrays, streams, events
(``elapsed_us`` is checked for sanity, never against a time threshold),
two streams ordered by an event, and graph capture where the device
declares ``"graphs"`` (``Unsupported`` naming ``graphs`` where it does
not). Refused input is a typed error naming the argument and leaves the
data untouched. On a device whose every operation is done when its call
returns (the CPU) the ordering tests pass trivially; the data checks do not.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import gompute_core as g
from gompute_core.runtime import Compute

from ._support import mark

TIER = "runtime"
pytestmark = mark()

N = 1000
"""float32 elements of the typed buffers."""
BIG = 1 << 22
"""float32 elements of the buffers the ordering tests move (16 MiB: long enough on a GPU
that a copy not waiting for its event would read stale bytes)."""


@pytest.fixture(scope="module")
def compute(gompute_backend: str) -> Compute:
    """The backend under test through ``g.runtime``."""
    return g.runtime.Compute(gompute_backend)


@pytest.fixture
def data() -> np.ndarray:
    """``N`` distinct float32 values."""
    return np.linspace(-7.5, 11.25, N, dtype=np.float32)


@pytest.fixture
def buf(compute: Compute, data: np.ndarray) -> Iterator[Any]:
    """A buffer of ``N`` float32 holding :func:`data`."""
    b = compute.alloc(data.nbytes)
    b.upload(data)
    yield b
    b.free()


def _floats(b: Any, count: int = N) -> np.ndarray:
    out = np.empty(count, np.float32)
    b.download(out)
    return out


def _bytes(b: Any) -> np.ndarray:
    out = np.empty(b.nbytes, np.uint8)
    b.download(out)
    return out


# ---------------------------------------------------------------- the surface
SURFACE = {
    "Compute": ("alloc", "load_module", "create_stream", "create_event", "pinned",
                "synchronize", "has", "capabilities", "stream", "arch"),
    "buffer": ("upload", "download", "upload_at", "download_at", "copy_from",
               "copy_from_async", "upload_at_async", "download_at_async", "fill", "fill_async",
               "device_addr", "free"),
    "stream": ("synchronize", "query", "wait_event", "begin_capture", "end_capture"),
    "event": ("record", "synchronize", "query", "elapsed_us"),
}
"""Every name of the runtime surface, per object."""

_REQUIRED = inspect.Parameter.empty
PARAMETERS = {
    ("Compute", "create_event"): [("timing", True)],
    ("stream", "begin_capture"): [("mode", "thread_local")],
    ("stream", "wait_event"): [("event", _REQUIRED)],
    ("event", "record"): [("stream", None)],
    ("event", "elapsed_us"): [("start", _REQUIRED)],
}
"""Parameters (name, default) that are the same on every backend."""


@pytest.mark.gompute(capability="events")
def test_every_name_of_the_surface(compute: Compute) -> None:
    """``Compute``, its buffers, streams and events have every name, same parameters."""
    b = compute.alloc(16)
    try:
        objects = {"Compute": compute, "buffer": b, "stream": compute.create_stream(),
                   "event": compute.create_event()}
        missing = [f"{what}.{name}" for what, names in SURFACE.items() for name in names
                   if not hasattr(objects[what], name)]
        assert not missing, f"{compute.backend}: runtime surface lacks {missing}"
        for (what, name), params in PARAMETERS.items():
            got = [(p.name, p.default) for p in
                   inspect.signature(getattr(objects[what], name)).parameters.values()]
            assert got == params, f"{what}.{name} takes {got}, every backend takes {params}"
        assert compute.capabilities <= g.backend.CAPABILITIES
        assert compute.has("streams") and compute.has("events")
        with pytest.raises(g.InvalidArgument, match="capability"):
            compute.has("teleport")
    finally:
        b.free()


# ---------------------------------------------------------------- transfers
def test_partial_and_offset_transfers(compute: Compute, buf: Any, data: np.ndarray) -> None:
    """``upload``/``download`` of a prefix and ``*_at`` at byte offsets match NumPy slices."""
    want = data.copy()
    part = np.arange(20, dtype=np.float32) * np.float32(-3)
    buf.upload_at(40 * 4, part)
    want[40:60] = part
    np.testing.assert_array_equal(_floats(buf), want, err_msg="upload_at(160)")
    buf.upload_at(900 * 4, part, 8 * 4)
    want[900:908] = part[:8]
    np.testing.assert_array_equal(_floats(buf), want, err_msg="upload_at(3600, nbytes=32)")
    buf.upload(part, 5 * 4)
    want[:5] = part[:5]
    np.testing.assert_array_equal(_floats(buf), want, err_msg="upload(nbytes=20)")
    back = np.zeros(30, np.float32)
    buf.download_at(33 * 4, back)
    np.testing.assert_array_equal(back, want[33:63], err_msg="download_at(132)")
    back[:] = 0
    buf.download_at((N - 10) * 4, back, 10 * 4)
    np.testing.assert_array_equal(back[:10], want[N - 10:], err_msg="download_at to the end")
    assert not back[10:].any(), "download_at wrote past nbytes"
    head = np.zeros(7, np.float32)
    buf.download(head, 3 * 4)
    np.testing.assert_array_equal(head[:3], want[:3], err_msg="download(nbytes=12)")
    assert not head[3:].any(), "download wrote past nbytes"


def test_copy_from_full_and_partial(compute: Compute, buf: Any, data: np.ndarray) -> None:
    """Device-to-device: all of the source, then a prefix of it, sync and on a stream."""
    dst = compute.alloc(data.nbytes + 64)
    try:
        dst.fill(0)
        dst.copy_from(buf)
        got = _bytes(dst)
        np.testing.assert_array_equal(got[:data.nbytes].view(np.float32), data,
                                      err_msg="copy_from")
        assert not got[data.nbytes:].any(), "copy_from wrote past the source's size"
        dst.fill(0xFF)
        dst.copy_from(buf, 100 * 4)
        got = _bytes(dst)
        np.testing.assert_array_equal(got[:400].view(np.float32), data[:100],
                                      err_msg="copy_from(nbytes=400)")
        assert (got[400:] == 0xFF).all(), "copy_from(nbytes=400) wrote past nbytes"
        if compute.has("streams"):
            s = compute.create_stream()
            dst.fill(0)
            dst.copy_from_async(buf, 10 * 4, stream=s)
            s.synchronize()
            got = _bytes(dst)
            np.testing.assert_array_equal(got[:40].view(np.float32), data[:10],
                                          err_msg="copy_from_async(nbytes=40)")
            assert not got[40:].any(), "copy_from_async wrote past nbytes"
    finally:
        dst.free()


def test_fill_bytes(compute: Compute, buf: Any, data: np.ndarray) -> None:
    """``fill`` and ``fill_async`` set byte values (0x00, 0x7F, 0x80, 0xFF) on spans."""
    want = data.copy().view(np.uint8)
    buf.fill(0x80, 12, offset=5)
    want[5:17] = 0x80
    np.testing.assert_array_equal(_bytes(buf), want, err_msg="fill(0x80, 12, offset=5)")
    buf.fill(0xFF, offset=want.size - 3)
    want[-3:] = 0xFF
    np.testing.assert_array_equal(_bytes(buf), want, err_msg="fill(0xFF) to the end")
    stream = compute.create_stream() if compute.has("streams") else compute.stream
    buf.fill_async(0x7F, 100, stream=stream, offset=64)
    want[64:164] = 0x7F
    buf.fill_async(0x00, 8, stream=stream, offset=1)
    want[1:9] = 0
    stream.synchronize()
    np.testing.assert_array_equal(_bytes(buf), want, err_msg="fill_async")
    buf.fill(0x3F)
    np.testing.assert_array_equal(_floats(buf), np.full(N, np.uint32(0x3F3F3F3F)).view(
        np.float32), err_msg="fill(0x3F) as float32")


def test_pinned_round_trip(compute: Compute) -> None:
    """``pinned`` gives a writable C-contiguous array of the shape and dtype asked for,
    which transfers round trip through, sync and async."""
    host = compute.pinned((4, 256), np.float32)
    assert host.shape == (4, 256) and host.dtype == np.float32
    assert host.flags.c_contiguous and host.flags.writeable
    host[:] = np.arange(1024, dtype=np.float32).reshape(4, 256) / np.float32(8)
    back = compute.pinned(1024, "float32")
    assert back.shape == (1024,)
    b = compute.alloc(host.nbytes)
    try:
        b.upload(host)
        back[:] = 0
        b.download(back)
        np.testing.assert_array_equal(back, host.reshape(-1), err_msg="sync round trip")
        b.fill(0)
        b.upload_at_async(0, host, stream=compute.stream)
        back[:] = 0
        b.download_at_async(0, back, stream=compute.stream)
        compute.stream.synchronize()
        np.testing.assert_array_equal(back, host.reshape(-1), err_msg="async round trip")
    finally:
        b.free()
    assert compute.pinned(0, np.uint8).size == 0


@pytest.mark.parametrize("shape,dtype", [(-1, np.uint8), ((2, -3), np.uint8), (2.5, np.uint8),
                                         (4, object), (4, "not a dtype")])
def test_pinned_refuses_bad_shapes(compute: Compute, shape: Any, dtype: Any) -> None:
    """A negative or non-int shape, or a dtype that is none, is named in the error."""
    name = "dtype" if shape == 4 else "shape"
    with pytest.raises(g.InvalidArgument, match=name):
        compute.pinned(shape, dtype)


# ---------------------------------------------------------------- streams and events
@pytest.mark.gompute(capability="streams")
def test_stream_async_transfers(compute: Compute) -> None:
    """Async upload and download at offsets on a new stream; ``query`` after
    ``synchronize``; ``compute.synchronize`` waits for every stream."""
    s = compute.create_stream()
    host = compute.pinned(BIG, np.float32)
    host[:] = np.arange(BIG, dtype=np.float32)
    out = compute.pinned(BIG, np.float32)
    out[:] = -1
    b = compute.alloc(host.nbytes)
    try:
        b.upload_at_async(0, host, stream=s)
        b.download_at_async(0, out, stream=s)
        s.synchronize()
        assert s.query(), "query() is False after synchronize()"
        np.testing.assert_array_equal(out, host, err_msg="async round trip on a stream")
        half = host.nbytes // 2
        b.upload_at_async(half, host, half, stream=s)
        tail = np.zeros(BIG // 2, np.float32)
        b.download_at_async(half, tail, stream=s)
        compute.synchronize()
        np.testing.assert_array_equal(tail, host[:BIG // 2], err_msg="async at an offset")
        assert s.query()
    finally:
        b.free()


@pytest.mark.gompute(capability="events")
def test_events_on_two_points(compute: Compute) -> None:
    """Events recorded around work: done after ``synchronize``, ``elapsed_us`` >= 0."""
    s = compute.create_stream()
    start, end = compute.create_event(), compute.create_event(timing=True)
    host = compute.pinned(BIG, np.float32)
    host[:] = 1.5
    b = compute.alloc(host.nbytes)
    try:
        start.record(s)
        b.upload_at_async(0, host, stream=s)
        b.fill_async(0, 4096, stream=s)
        end.record(s)
        end.synchronize()
        assert end.query() and start.query(), "an event is pending after synchronize()"
        us = end.elapsed_us(start)
        assert isinstance(us, float) and math.isfinite(us) and us >= 0, \
            f"elapsed_us {us!r} from the first to the second event"
        mark_default = compute.create_event()
        mark_default.record()  # the device's default stream
        mark_default.synchronize()
        assert mark_default.query()
        got = _floats(b, BIG)
        assert not got[:1024].any() and (got[1024:] == 1.5).all(), "work between the events"
    finally:
        compute.synchronize()
        b.free()


@pytest.mark.gompute(capability="events")
def test_wait_event_orders_a_copy_across_streams(compute: Compute) -> None:
    """A copy on stream B that waits for an event recorded after an upload on stream A
    sees the uploaded bytes."""
    a, b = compute.create_stream(), compute.create_stream()
    host = compute.pinned(BIG, np.float32)
    host[:] = np.arange(BIG, dtype=np.float32) * np.float32(0.5)
    src, dst = compute.alloc(host.nbytes), compute.alloc(host.nbytes)
    try:
        src.fill(0)
        dst.fill(0xFF)
        for _ in range(8):  # keep A busy before the upload, so B would overtake it unordered
            src.fill_async(0, stream=a)
        src.upload_at_async(0, host, stream=a)
        uploaded = compute.create_event(timing=False)
        uploaded.record(a)
        b.wait_event(uploaded)
        dst.copy_from_async(src, stream=b)
        b.synchronize()
        np.testing.assert_array_equal(_floats(dst, BIG), host,
                                      err_msg="copy on B after waiting for A's event")
    finally:
        compute.synchronize()
        src.free()
        dst.free()


# ---------------------------------------------------------------- graphs
@pytest.mark.gompute(capability="streams")
def test_graph_capture_or_unsupported(compute: Compute, buf: Any, data: np.ndarray) -> None:
    """With ``"graphs"``: a captured fill and partial copy run only when launched, and
    each launch redoes them with the source as it is then. Without: ``begin_capture`` is
    ``Unsupported`` naming ``graphs``."""
    s = compute.create_stream()
    if not compute.has("graphs"):
        with pytest.raises(g.Unsupported, match="graphs"):
            s.begin_capture()
        s.synchronize()  # the stream still works
        return
    dst = compute.alloc(buf.nbytes)
    try:
        dst.fill(0x55)
        s.begin_capture()
        dst.fill_async(0, stream=s)
        dst.copy_from_async(buf, 200 * 4, stream=s)
        graph = s.end_capture()
        compute.synchronize()
        assert (_bytes(dst) == 0x55).all(), "captured work ran before the graph was launched"
        exe = graph.instantiate()
        for round_ in range(2):
            source = data * np.float32(round_ + 1)
            buf.upload(source)
            exe.launch(s)
            s.synchronize()
            want = np.zeros(N, np.float32)
            want[:200] = source[:200]
            np.testing.assert_array_equal(_floats(dst), want, err_msg=f"launch {round_}")
    finally:
        compute.synchronize()
        dst.free()


@pytest.mark.gompute(capability="graphs")
def test_graph_update(compute: Compute) -> None:
    """``GraphExec.update`` takes a new capture of the same shape (another fill value)."""
    s = compute.create_stream()
    b = compute.alloc(4096)
    try:
        def capture(value: int) -> Any:
            s.begin_capture()
            b.fill_async(value, 1024, stream=s, offset=512)
            return s.end_capture()

        b.fill(0)
        exe = capture(0x11).instantiate()
        exe.launch(s)
        s.synchronize()
        assert (_bytes(b)[512:1536] == 0x11).all()
        exe.update(capture(0x22))
        exe.launch()  # the default stream
        compute.synchronize()
        got = _bytes(b)
        assert (got[512:1536] == 0x22).all(), "the updated graph did not fill with 0x22"
        assert not got[:512].any() and not got[1536:].any(), "fill outside its span"
    finally:
        compute.synchronize()
        b.free()


# ---------------------------------------------------------------- refusals
REFUSED: dict[str, tuple[str, Callable[[Any, Any, Any], None]]] = {
    "upload_at offset past the end": (
        "offset", lambda b, other, s: b.upload_at(N * 4 - 4, np.zeros(2, np.float32))),
    "download_at offset past the end": (
        "offset", lambda b, other, s: b.download_at(N * 4 + 1, np.zeros(1, np.uint8))),
    "upload_at_async offset past the end": (
        "offset", lambda b, other, s: b.upload_at_async(N * 4, np.zeros(1, np.uint8),
                                                        stream=s)),
    "fill offset past the end": ("offset", lambda b, other, s: b.fill(1, offset=N * 4 + 8)),
    "fill_async past the end": (
        "offset", lambda b, other, s: b.fill_async(1, 16, stream=s, offset=N * 4 - 8)),
    "negative offset": ("offset", lambda b, other, s: b.upload_at(-4, np.zeros(1, np.uint8))),
    "upload negative nbytes": (
        "nbytes", lambda b, other, s: b.upload(np.zeros(4, np.uint8), -1)),
    "download_at negative nbytes": (
        "nbytes", lambda b, other, s: b.download_at(0, np.zeros(4, np.uint8), -4)),
    "fill negative nbytes": ("nbytes", lambda b, other, s: b.fill(0, -1)),
    "copy_from negative nbytes": ("nbytes", lambda b, other, s: b.copy_from(other, -1)),
    "copy_from_async nbytes past the end": (
        "nbytes", lambda b, other, s: b.copy_from_async(other, N * 4 + 4, stream=s)),
    "fill value not a byte": ("value", lambda b, other, s: b.fill(256)),
}
"""Refused calls: the argument the error must name, and the call."""


@pytest.mark.parametrize("what", sorted(REFUSED))
def test_bad_input_is_refused_and_changes_nothing(what: str, compute: Compute, buf: Any,
                                                  data: np.ndarray) -> None:
    """``InvalidArgument`` naming the argument; the buffers keep their bytes."""
    name, call = REFUSED[what]
    other = compute.alloc(N * 4 + 8)
    try:
        other.fill(0xEE)
        with pytest.raises(g.InvalidArgument, match=name):
            call(buf, other, compute.stream)
        compute.synchronize()
        np.testing.assert_array_equal(_floats(buf), data,
                                      err_msg=f"{what}: bytes changed by a refused call")
        assert (_bytes(other) == 0xEE).all(), f"{what}: the other buffer changed"
    finally:
        other.free()


@pytest.mark.parametrize("nbytes", [-1, 2.0, True])
def test_alloc_refuses_a_bad_size(compute: Compute, nbytes: Any) -> None:
    """``alloc`` of a negative or non-int size is ``InvalidArgument`` naming ``nbytes``."""
    with pytest.raises(g.InvalidArgument, match="nbytes"):
        compute.alloc(nbytes)


USE_AFTER_FREE: dict[str, Callable[[Any, Any, Any], Any]] = {
    "upload_at": lambda b, other, s: b.upload_at(0, np.zeros(4, np.uint8)),
    "download": lambda b, other, s: b.download(np.zeros(4, np.uint8)),
    "upload_at_async": lambda b, other, s: b.upload_at_async(0, np.zeros(4, np.uint8),
                                                             stream=s),
    "download_at_async": lambda b, other, s: b.download_at_async(0, np.zeros(4, np.uint8),
                                                                 stream=s),
    "copy_from (freed source)": lambda b, other, s: other.copy_from(b, 4),
    "copy_from_async (freed destination)": lambda b, other, s: b.copy_from_async(other, 4,
                                                                                 stream=s),
    "fill_async": lambda b, other, s: b.fill_async(0, stream=s),
    "device_addr": lambda b, other, s: b.device_addr(),
}


@pytest.mark.parametrize("what", sorted(USE_AFTER_FREE))
def test_freed_buffer_is_refused(what: str, compute: Compute) -> None:
    """Every use of a freed buffer is ``InvalidArgument`` saying so; the other buffer of a
    copy keeps its bytes; ``free`` again is a no-op."""
    b, other = compute.alloc(64), compute.alloc(64)
    try:
        other.fill(0x5A)
        b.free()
        with pytest.raises(g.InvalidArgument, match="free"):
            USE_AFTER_FREE[what](b, other, compute.stream)
        b.free()
        compute.synchronize()
        assert (_bytes(other) == 0x5A).all(), f"{what}: the live buffer changed"
    finally:
        other.free()

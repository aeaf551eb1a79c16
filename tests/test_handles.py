"""Kernel, AutoKernel and g.compile against the pure-Python test backend.

Results are compared with the kernel function run as plain Python on NumPy
scalars; every validation failure must leave the user's arrays untouched.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pybackend import PyBackend, PyBuffer

import gompute_core as g
from gompute_core.backend import Buffer
from gompute_core.errors import (
    BackendUnavailable,
    GomputeWarning,
    InvalidArgument,
    Unsupported,
    UnsupportedBackend,
)
from gompute_core.plugins import manager
from gompute_core.runtime.compile import find_prebuilt, write_artifact

_ids = itertools.count()


def uname(base: str = "h") -> str:
    return f"{base}_{next(_ids)}"


@g.params
class Scale:
    scale: g.f32


def scale_relu(x, p):
    y = x * p.scale
    return y if y > 0 else 0


def oracle_map(fn, T, data, *extra):
    with np.errstate(all="ignore"):
        return np.array([T(fn(x, *extra)) for x in data], dtype=T)


@pytest.fixture(params=[False, True], ids=["device-style", "host-memory"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A registry holding only the reference backend, as a device-style backend (packed
    arguments, staged/pipelined ``run``) or a host-memory one (``run`` on the arrays)."""
    monkeypatch.delenv(manager.ENV_BACKENDS, raising=False)
    monkeypatch.delenv("GOMPUTE_ARTIFACT_DIR", raising=False)
    with manager.isolated():
        manager.register(PyBackend("pytest", host_memory=request.param))
        yield "pytest"


@pytest.fixture()
def empty(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(manager.ENV_BACKENDS, raising=False)
    with manager.isolated():
        yield


def test_map_matches_oracle(backend: str) -> None:
    spec = g.map(uname(), g.f32, Scale, scale_relu, block_size=4)
    data = np.array([-1, 2, -3, 4, 5.5, -0.0, 7], np.float32)
    expect = oracle_map(scale_relu, np.float32, data, Scale(scale=2))
    with g.Kernel(spec, backend) as k:
        out = k.run(data, Scale(scale=2))
    assert out is data
    np.testing.assert_array_equal(data, expect)
    np.testing.assert_array_equal(data, [0, 4, 0, 8, 11, 0, 14])


def test_every_kind_matches_oracle(backend: str) -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(-100, 100, 37).astype(np.int32)
    b = rng.standard_normal(37).astype(np.float64)
    with g.Kernel(g.map_to(uname(), g.i32, g.f64, None, lambda x: x * 0.5), backend) as k:
        out = k.run(a, np.empty(37, np.float64))
        np.testing.assert_array_equal(out, a * 0.5)
    with g.Kernel(g.zip(uname(), g.i32, g.f64, g.f64, None, lambda x, y: x + y), backend) as k:
        out = np.zeros(37)
        assert k.run(a, b, out) is out
        np.testing.assert_array_equal(out, a + b)
    with g.Kernel(g.map_indexed(uname(), g.u64, None, lambda x, i: x + i * 3), backend) as k:
        data = np.arange(37, dtype=np.uint64)
        k.run(data)
        np.testing.assert_array_equal(data, np.arange(37, dtype=np.uint64) * 4)
    idx = np.array([3, -1, 40, 0, 36, 5], np.int64)
    src = np.arange(37, dtype=np.float32) * 1.5
    with g.Kernel(g.gather(uname(), g.f32, g.i64, block_size=2), backend) as k:
        out = np.full(6, -7, np.float32)
        k.run(src, idx, out)
        np.testing.assert_array_equal(out, [4.5, -7, -7, 0, 54, 7.5])
    with g.Kernel(g.scatter(uname(), g.f32, g.i64), backend) as k:
        out = np.full(37, -7, np.float32)
        k.run(src[:6], idx, out)
        expect = np.full(37, -7, np.float32)
        for i, j in enumerate(idx):
            if 0 <= j < 37:
                expect[j] = src[i]
        np.testing.assert_array_equal(out, expect)


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 1000])
def test_reductions_match_oracle(backend: str, n: int) -> None:
    data = np.random.default_rng(n).integers(-50, 50, n).astype(np.int16)
    for spec in (g.sum(uname(), g.i16, block_size=4), g.max(uname(), g.i16, block_size=4),
                 g.reduce(uname(), g.i16, None, lambda a, b: a ^ b, 0, block_size=4),
                 g.any(uname(), g.i16, block_size=4), g.all(uname(), g.i16, block_size=4),
                 g.sum(uname(), g.i16, Scale, lambda x, p: x * 2, block_size=4)):
        p = Scale(scale=1) if spec.params is not None else None
        expect = np.int16(spec.identity)
        with np.errstate(all="ignore"):
            for x in data:
                x = x if spec.pre is None else np.int16(spec.pre(x, p))
                expect = np.int16(spec.combine(expect, x))
        with g.Kernel(spec, backend) as k:
            got = k.run(data, p)
        assert type(got) is np.int16 and got == expect, spec


def test_device_reduce_groups_by_size_not_by_pinning(monkeypatch: pytest.MonkeyPatch) -> None:
    """A float reduce from the host gives the same bits whether its array could be
    page-locked or not (staged): one launch of ``min(ceil(n / block_size), 1024)``
    contiguous partials over the whole array, folded left to right from the identity (the
    oracle below), for an array past the 2 MiB from which other kinds pipeline."""
    monkeypatch.delenv(manager.ENV_BACKENDS, raising=False)
    n, bs = 2**19 + 7, 256
    data = (np.random.default_rng(3).standard_normal(n) * 1000).astype(np.float32)
    with manager.isolated():
        manager.register(PyBackend("pytest", host_memory=False))
        spec = g.reduce(uname(), g.f32, None, lambda a, b: a + b, 0, block_size=bs)
        with g.Kernel(spec, "pytest") as k:
            pinned = k.run(data)
            monkeypatch.setattr(k.device, "pin", lambda host: False)
            staged = k.run(data)
    partials = []
    blocks = min(-(-n // bs), 1024)
    for b in range(blocks):
        acc = np.float32(0)
        for x in data[b * n // blocks:(b + 1) * n // blocks]:
            acc = acc + x
        partials.append(acc)
    want = np.float32(0)
    for x in partials:
        want = want + x
    assert pinned.view(np.uint32) == staged.view(np.uint32) == want.view(np.uint32)


def test_reduce_blocks_and_block_size(backend: str) -> None:
    with g.Kernel(g.sum(uname(), g.f32, block_size=128), backend) as k:
        assert k.block_size == 128
        assert [k.reduce_blocks(n) for n in (0, 1, 128, 129, 128 * 1024, 10**9)] == \
            [0, 1, 1, 2, 1024, 1024]


def test_allocation_free_path(backend: str) -> None:
    spec = g.map(uname(), g.f32, Scale, scale_relu)
    with g.Kernel(spec, backend) as k:
        assert k.launch == k.program.launch
        data = np.array([-1, 2, 3], np.float32)
        buf = k.alloc(3)
        assert buf.nbytes == 12
        buf.upload(data)
        k.launch(buf, 3, Scale(scale=3))
        k.context.synchronize()
        out = np.empty_like(data)
        buf.download(out)
        buf.free()
        buf.free()
        np.testing.assert_array_equal(out, [0, 6, 9])
        assert k.stream is k.program.stream
    z = g.zip(uname(), g.u8, g.f64, g.f16, None, lambda a, b: a)
    with g.Kernel(z, backend) as k:
        assert k.alloc(10).nbytes == 20
        assert k.alloc(10, "A").nbytes == 10
        assert k.alloc(10, "B").nbytes == 80
        with pytest.raises(InvalidArgument, match="no value type 'Idx'"):
            k.alloc(1, "Idx")
        with pytest.raises(InvalidArgument, match="count"):
            k.alloc(-1)


def test_reduce_launch_and_host_fold(backend: str) -> None:
    spec = g.sum(uname(), g.i64, block_size=8)
    data = np.arange(1000, dtype=np.int64)
    with g.Kernel(spec, backend) as k:
        blocks = k.reduce_blocks(data.size)
        dbuf, pbuf = k.alloc(data.size), k.alloc(blocks)
        dbuf.upload(data)
        k.launch(dbuf, data.size, pbuf, blocks, None)
        k.context.synchronize()
        partials = np.empty(blocks, np.int64)
        pbuf.download(partials)
        assert k.fold(partials) == data.sum()


def test_close_is_idempotent_and_final(backend: str) -> None:
    k = g.Kernel(g.map(uname(), g.i32, None, lambda x: x + 1), backend)
    data = np.zeros(5, np.int32)
    k.run(data)
    k.close()
    k.close()
    assert k.closed
    for call in (lambda: k.run(data), lambda: k.launch(None, 0, None), lambda: k.alloc(1)):
        with pytest.raises(InvalidArgument, match="closed"):
            call()
    np.testing.assert_array_equal(data, 1)


def test_program_launch_refused_after_close(backend: str) -> None:
    """``k.program.launch`` (and the run path's ``enqueue``) refuse once the handle is
    closed, as ``k.launch`` does; the buffer keeps what the open handle computed."""
    k = g.Kernel(g.map(uname(), g.i32, None, lambda x: x + 1), backend)
    buf = k.alloc(5)
    buf.fill(0)
    k.program.launch(buf, 5)
    k.close()
    with pytest.raises(InvalidArgument, match="closed"):
        k.program.launch(buf, 5)
    with pytest.raises(InvalidArgument, match="closed"):
        k.program.enqueue(k.stream, 1, (buf.addr, 5), None)
    got = np.empty(5, np.int32)
    buf.download(got)
    np.testing.assert_array_equal(got, 1)


class _Interface:
    """An object exposing only NumPy's array interface (``described``)."""

    def __init__(self, described: object) -> None:
        self.__array_interface__ = described


def test_scalars_and_bad_array_interfaces_refused(backend: str) -> None:
    """A NumPy scalar is not an array (an in-place map would write a copy and hand back the
    scalar unchanged); an array interface with a mask (NumPy drops it), a NULL data pointer,
    or no ``typestr`` is an ``InvalidArgument`` naming the argument; the data behind the
    interfaces stay as they were."""
    with g.Kernel(g.map(uname(), g.f32, None, lambda x: x + 1), backend) as k:
        with pytest.raises(InvalidArgument, match=r"^data: a NumPy scalar \(float32\)"):
            k.run(np.float32(1))
        base = np.arange(4, dtype=np.float32)
        good = {"shape": (4,), "typestr": "<f4", "data": (base.ctypes.data, False),
                "version": 3}
        k.run(_Interface(good))  # the interface itself is taken, in place
        np.testing.assert_array_equal(base, np.arange(4) + 1)
        bad = {"mask": (dict(good, mask=np.array([True, False, True, False])), "mask"),
               "NULL": (dict(good, data=(0, False)), "NULL"),
               "typestr": ({k: v for k, v in good.items() if k != "typestr"}, "typestr")}
        for case, (described, words) in bad.items():
            err = _untouched(lambda d=described: k.run(_Interface(d)), base)
            assert str(err).startswith("data: ") and words in str(err), case
    with g.Kernel(g.sum(uname(), g.f32), backend) as k:
        with pytest.raises(InvalidArgument, match=r"^data: a NumPy scalar"):
            k.run(np.float32(1))


def _untouched(fn, *arrays: np.ndarray) -> InvalidArgument:
    """Call ``fn``, expect InvalidArgument, check ``arrays`` kept their contents."""
    copies = [a.copy() for a in arrays]
    with pytest.raises(InvalidArgument) as info:
        fn()
    for a, c in zip(arrays, copies, strict=True):
        np.testing.assert_array_equal(a, c)
    return info.value


def test_validation_map(backend: str) -> None:
    spec = g.map(uname(), g.f32, Scale, scale_relu)
    p = Scale(scale=2)
    with g.Kernel(spec, backend) as k:
        f32 = np.array([-1, 2, 3], np.float32)
        f64 = f32.astype(np.float64)
        err = _untouched(lambda: k.run(f64, p), f64)
        assert "data" in str(err) and "float64" in str(err) and "astype" in str(err)
        assert "data" in str(_untouched(lambda: k.run([1.0, 2.0], p)))
        assert "p:" in str(_untouched(lambda: k.run(f32, None), f32))
        assert "p:" in str(_untouched(lambda: k.run(f32, 2.0), f32))
        strided = np.zeros(6, np.float32)[::2]
        assert "C-contiguous" in str(_untouched(lambda: k.run(strided, p), strided))
        ro = f32.copy()
        ro.flags.writeable = False
        assert "read-only" in str(_untouched(lambda: k.run(ro, p), ro))
        big_endian = f32.astype(">f4")
        _untouched(lambda: k.run(big_endian, p), big_endian)
        grid = np.array([[-1, 2], [3, -4]], np.float32)
        k.run(grid, p)
        np.testing.assert_array_equal(grid, [[0, 4], [6, 0]])
    with g.Kernel(g.map(uname(), g.f32, None, lambda x: x), backend) as k:
        assert "no params" in str(_untouched(lambda: k.run(f32, p), f32))


def test_validation_multi_array_kinds(backend: str) -> None:
    a, b = np.ones(4, np.float32), np.ones(4, np.float32)
    with g.Kernel(g.zip(uname(), g.f32, g.f32, g.f32, None, lambda x, y: x + y), backend) as k:
        short = np.zeros(3, np.float32)
        assert "out" in str(_untouched(lambda: k.run(a, b, short), a, b, short))
        err = _untouched(lambda: k.run(a, b[:3], np.zeros(4, np.float32)), a, b)
        assert str(err).startswith("b: shape (3,)")
        wrong = np.zeros(4, np.float64)
        assert "out" in str(_untouched(lambda: k.run(a, b, wrong), wrong))
        read_only_in = a.copy()
        read_only_in.flags.writeable = False
        out = np.zeros(4, np.float32)
        k.run(read_only_in, b, out)
        np.testing.assert_array_equal(out, 2)
    with g.Kernel(g.map_to(uname(), g.f32, g.i8, None, lambda x: x), backend) as k:
        out8 = np.zeros(5, np.int8)
        assert "out" in str(_untouched(lambda: k.run(a, out8), a, out8))
    with g.Kernel(g.gather(uname(), g.f32, g.i32), backend) as k:
        idx = np.zeros(4, np.int32)
        out = np.zeros(3, np.float32)
        assert "out" in str(_untouched(lambda: k.run(a, idx, out), a, idx, out))
        assert "idx" in str(_untouched(lambda: k.run(a, idx.astype(np.int64), a.copy())))
        assert "overlaps" in str(_untouched(lambda: k.run(a, idx, a), a, idx))
    with g.Kernel(g.scatter(uname(), g.f32, g.i32), backend) as k:
        idx = np.zeros(3, np.int32)
        out = np.zeros(9, np.float32)
        assert "idx" in str(_untouched(lambda: k.run(a, idx, out), a, idx, out))


def _view(buf: PyBuffer, offset: int) -> PyBuffer:
    """A borrowed buffer over ``buf``'s memory from byte ``offset`` on (what ``g.as_buffer``
    makes of an array view): the backend resolves its address into ``buf``."""
    view = PyBuffer.__new__(PyBuffer)
    view.mem = buf.mem[offset:]
    Buffer.__init__(view, buf.device, buf.nbytes - offset, buf.addr + offset, owned=False)
    return view


def _refusals_match(launch: Any, run: Any, *untouched: Buffer) -> None:
    """``launch()`` and ``run()`` both refuse, with one message (``launch:`` before it), and
    the buffers keep their bytes."""
    before = [bytes(b.mem) for b in untouched]  # type: ignore[attr-defined]
    with pytest.raises(InvalidArgument) as by_run:
        run()
    with pytest.raises(InvalidArgument) as by_launch:
        launch()
    assert "overlaps" in str(by_run.value)
    assert str(by_launch.value) == f"launch: {by_run.value}"
    assert [bytes(b.mem) for b in untouched] == before  # type: ignore[attr-defined]


def test_launch_refuses_overlap_like_run(backend: str) -> None:
    """A launch whose output partially overlaps an input (map_to, zip), or overlaps at all
    (gather/scatter), is refused exactly as ``run`` refuses the same arrays; the very same
    elements are still an in-place launch."""
    n = 6
    x = np.arange(n + 1, dtype=np.float32)
    with g.Kernel(g.map_to(uname(), g.f32, g.f32, None, lambda v: v * 2 + 1), backend) as k:
        buf = k.alloc(n + 1)
        buf.upload(x)
        _refusals_match(lambda: k.launch(buf, _view(buf, 4), n),
                        lambda: k.run(x[:-1], x[1:]), buf)
        k.launch(buf, buf, n)
        got = np.empty(n + 1, np.float32)
        buf.download(got)
        np.testing.assert_array_equal(got, [*(x[:n] * 2 + 1), x[n]])
    wide = np.arange(n, dtype=np.float64)
    with g.Kernel(g.map_to(uname(), g.f64, g.f32, None, lambda v: v), backend) as k:
        buf = k.alloc(n, "In")
        buf.upload(wide)
        _refusals_match(lambda: k.launch(buf, buf, n),
                        lambda: k.run(wide, wide.view(np.float32)[:n]), buf)
    with g.Kernel(g.zip(uname(), g.f32, g.f32, g.f32, None, lambda a, b: a + b), backend) as k:
        a, b = k.alloc(n), k.alloc(n + 1)
        a.upload(x[:n])
        b.upload(x)
        _refusals_match(lambda: k.launch(a, b, _view(b, 4), n),
                        lambda: k.run(x[:n].copy(), x[:-1], x[1:]), a, b)
    with g.Kernel(g.gather(uname(), g.f32, g.i32), backend) as k:
        src, idx = k.alloc(n + 1), k.alloc(n, "Idx")
        src.upload(x)
        idx.upload(np.zeros(n, np.int32))
        _refusals_match(lambda: k.launch(src, idx, _view(src, 4), n, n),
                        lambda: k.run(x[:-1], np.zeros(n, np.int32), x[1:]), src, idx)


def test_run_with_the_wrong_number_of_arguments_names_the_call(backend: str) -> None:
    """``k.run(data, p, 3)`` and other wrong argument counts are an ``InvalidArgument``
    listing what the kind takes (not Python's ``TypeError``); the data stay untouched."""
    data = np.arange(4, dtype=np.float32)
    with g.Kernel(g.map(uname(), g.f32, Scale, scale_relu), backend) as k:
        err = _untouched(lambda: k.run(data, Scale(scale=2), 3), data)
        assert str(err).startswith("run: a map kernel takes (data, p)") and "got 3" in str(err)
        assert "got 0 arguments" in str(_untouched(lambda: k.run()))
    with g.Kernel(g.gather(uname(), g.f32, g.i32), backend) as k:
        idx = np.zeros(4, np.int32)
        err = _untouched(lambda: k.run(data, idx), data, idx)
        assert str(err) == "run: a gather kernel takes (src, idx, out), got 2 arguments"


def test_reduce_returns_identity_for_empty(backend: str) -> None:
    with g.Kernel(g.min(uname(), g.f32), backend) as k:
        got = k.run(np.empty(0, np.float32))
        assert type(got) is np.float32 and got == np.inf
        ro = np.array([3, 1, 2], np.float32)
        ro.flags.writeable = False
        assert k.run(ro) == 1


def test_explicit_backend_errors(empty: None) -> None:
    manager.register(PyBackend("off", available=False, reason="no py device here"))
    spec = g.map(uname(), g.f32, None, lambda x: x)
    with pytest.raises(UnsupportedBackend, match="installed: off"):
        g.Kernel(spec, "nope")
    with pytest.raises(BackendUnavailable, match="no py device here"):
        g.Kernel(spec, "off")
    manager.register(PyBackend("nof16", unsupported_types=("f16",)))
    with pytest.raises(Unsupported, match="f16"):
        g.Kernel(g.map(uname(), g.f16, None, lambda x: x), "nof16")


def test_auto_kernel_picks_highest_priority(empty: None) -> None:
    manager.register(PyBackend("cpuish", priority=100))
    manager.register(PyBackend("gpuish", priority=300))
    spec = g.map(uname(), g.i32, None, lambda x: x * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with g.AutoKernel(spec) as k:
            assert k.selected() == "gpuish"
            data = np.arange(5, dtype=np.int32)
            k.run(data)
            np.testing.assert_array_equal(data, np.arange(5) * 2)


def test_auto_kernel_skips_unavailable_silently(empty: None) -> None:
    manager.register(PyBackend("gpuish", priority=300, available=False, reason="no driver"))
    manager.register(PyBackend("cpuish", priority=100))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        k = g.AutoKernel(g.sum(uname(), g.f32))
    assert k.selected() == "cpuish"


def test_auto_kernel_warns_on_compile_failure(empty: None) -> None:
    manager.register(PyBackend("gpuish", priority=300, compile_error="ptxas exploded"))
    manager.register(PyBackend("cpuish", priority=100))
    spec = g.sum(uname(), g.f32)
    with pytest.warns(GomputeWarning, match="gpuish.*ptxas exploded"):
        k = g.AutoKernel(spec)
    assert k.selected() == "cpuish"
    with pytest.raises(BackendUnavailable, match="ptxas exploded"):
        g.AutoKernel.strict(spec)


def test_auto_kernel_warns_on_broken_plugin(empty: None) -> None:
    manager.register(PyBackend("future", api_version=99))
    manager.register(PyBackend("cpuish", priority=100))
    with pytest.warns(GomputeWarning, match="future.*API version"):
        assert g.AutoKernel(g.sum(uname(), g.f32)).selected() == "cpuish"


def test_auto_kernel_honours_env(empty: None, monkeypatch: pytest.MonkeyPatch) -> None:
    manager.register(PyBackend("gpuish", priority=300))
    manager.register(PyBackend("cpuish", priority=100))
    monkeypatch.setenv(manager.ENV_BACKENDS, "cpuish")
    assert g.AutoKernel(g.sum(uname(), g.f32)).selected() == "cpuish"


def test_auto_kernel_nothing_available(empty: None) -> None:
    with pytest.raises(BackendUnavailable, match="no backends installed"):
        g.AutoKernel(g.sum(uname(), g.f32))
    manager.register(PyBackend("gpuish", available=False, reason="no driver"))
    with pytest.raises(BackendUnavailable, match="gpuish: no driver"):
        g.AutoKernel(g.sum(uname(), g.f32))


def test_compile_without_device(empty: None) -> None:
    plugin = PyBackend("off", available=False, reason="no device")
    manager.register(plugin)
    spec = g.map(uname(), g.f32, Scale, scale_relu)
    art = g.compile(spec, "off", arch="py9")
    assert (art.target, art.entry, art.digest) == ("py9", spec.name, spec.lower().digest())
    with pytest.raises(InvalidArgument, match="options"):
        g.compile(spec, "off", options="-O3")
    with pytest.raises(UnsupportedBackend):
        g.compile(spec, "nope")


def test_prebuilt_artifacts_are_used(backend: str, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    spec = g.map(uname(), g.f32, Scale, scale_relu)
    kir = spec.lower()
    art = g.compile(spec, backend, arch="py1")
    write_artifact(tmp_path, art, kir)
    found = find_prebuilt(kir, backend, "py1", tmp_path)
    assert found is not None and found.image == art.image and found.digest == kir.digest()
    assert find_prebuilt(kir, backend, "py2", tmp_path) is None
    assert find_prebuilt(kir, backend, "py1") is None
    plugin = manager.record(backend).plugin
    before = plugin.compiles
    monkeypatch.setenv("GOMPUTE_ARTIFACT_DIR", str(tmp_path))
    with g.Kernel(spec, backend) as k:
        assert k.artifact == found
    assert plugin.compiles == before
    other = g.map(uname(), g.f32, Scale, lambda x, p: x)
    manifest = next(tmp_path.glob("*.json"))
    manifest.rename(tmp_path / manifest.name.replace(spec.name, other.name))
    with pytest.warns(GomputeWarning, match="digest differs"):
        assert find_prebuilt(other.lower(), backend, "py1", tmp_path) is None


def test_compute_runtime(empty: None) -> None:
    manager.register(PyBackend("cpuish", priority=100))
    manager.register(PyBackend("gpuish", priority=300, available=False, reason="none"))
    c = g.runtime.Compute()
    assert c.backend == "cpuish" and c.arch == "py1"
    assert c.alloc(16).nbytes == 16
    assert c.create_stream().query()
    c.synchronize()
    with pytest.raises(Unsupported, match="load_module"):
        c.load_module(b"\0")
    with pytest.raises(BackendUnavailable, match="none"):
        g.runtime.Compute("gpuish")
    device = c.device
    g.runtime.shutdown()
    assert device.closed


def test_device_buffers_are_cached_and_grown(empty: None) -> None:
    manager.register(PyBackend("pytest", host_memory=False))
    with g.Kernel(g.map(uname(), g.i32, None, lambda x: x + 1), "pytest") as k:
        data = np.zeros(100, np.int32)
        k.run(data)
        allocs = k.device.allocs
        k.run(data)
        k.run(data[:10])
        assert k.device.allocs == allocs
        bigger = np.zeros(1000, np.int32)
        k.run(bigger)
        assert k.device.allocs == allocs + 1
        np.testing.assert_array_equal(data[:10], 3)
        np.testing.assert_array_equal(data[10:], 2)
        np.testing.assert_array_equal(bigger, 1)


def test_stream_can_be_replaced(backend: str) -> None:
    with g.Kernel(g.map(uname(), g.i32, None, lambda x: x), backend) as k:
        stream = k.device.create_stream()
        k.stream = stream
        assert k.stream is stream and k.program.stream is stream

"""Device limits are checked for every kernel, spec and raw alike (issue 19, item A).

One check (``Device.check_launch``) reads the device's ``max_block_dims``,
``max_block_threads`` and ``max_shared_bytes``: a raw launch goes through it per launch
shape and a raw kernel's declared block when it is loaded; a spec's fixed ``block_size``
when ``g.Kernel`` loads it, before anything is compiled. The devices here are the
reference backend's with small limits: a real plugin, registered for the test.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from pybackend import PyBackend, PyDevice

import gompute_core as g
from gompute_core.backend import hookimpl
from gompute_core.errors import GomputeWarning, InvalidArgument
from gompute_core.plugins import manager

B = g.builtins
_ids = itertools.count()


def uname() -> str:
    """A kernel name unused in this process."""
    return f"limits_{next(_ids)}"


def twice(x):
    return x * 2


class SmallBlocks(PyBackend):
    """The reference backend on a device of at most ``threads`` threads per block and
    ``dims`` along x, y, z."""

    def __init__(self, name: str, *, threads: int = 256,
                 dims: tuple[int, int, int] = (1024, 1024, 64), **knobs: object) -> None:
        super().__init__(name, **knobs)  # type: ignore[arg-type]
        self.threads, self.dims = threads, dims

    @hookimpl
    def gompute_device(self, ordinal: int) -> PyDevice:
        device = super().gompute_device(ordinal)
        device.max_block_threads, device.max_block_dims = self.threads, self.dims
        return device


@g.raw_kernel(block=512)
def limits_wide(data: g.GlobalPtr[g.f32], n: g.u64):
    i = B.global_id(0)
    if i < n:
        data[i] = data[i] + 1


@g.raw_kernel
def limits_any(data: g.GlobalPtr[g.f32], n: g.u64):
    i = B.global_id(0)
    if i < n:
        data[i] = data[i] * 2


@pytest.mark.parametrize("host_memory", [True, False])
def test_a_spec_whose_block_size_exceeds_the_device_fails_when_loaded(host_memory: bool) -> None:
    """``block_size=1024`` on a device of 256 threads per block: ``g.Kernel`` refuses it,
    naming the spec, its block size and the device's limit, before compiling."""
    plugin = SmallBlocks("small", host_memory=host_memory)
    with manager.isolated():
        manager.register(plugin)
        spec = g.map(uname(), g.f32, None, twice, block_size=1024)
        with pytest.raises(InvalidArgument, match=rf"map spec '{spec.name}' \(block_size=1024\)"
                                                  r".*1024 threads.*small device 0's 256 threads "
                                                  r"per block \(max_block_threads\)"):
            g.Kernel(spec, "small")
        assert plugin.compiles == 0
        fits = g.map(uname(), g.f32, None, twice, block_size=256)
        with g.Kernel(fits, "small") as k:
            data = np.arange(600, dtype=np.float32)
            np.testing.assert_array_equal(k.run(data.copy()), data * 2)


@pytest.mark.parametrize("make", [
    lambda: g.sum(uname(), g.f32, block_size=512),
    lambda: g.cumsum(uname(), g.f32, block_size=512),
    lambda: g.gather(uname(), g.f32, g.i32, block_size=512),
], ids=["reduce", "scan", "gather"])
def test_every_kind_goes_through_the_check(make) -> None:
    """Kinds with the core's program (reduce, gather) and with their own (scan) alike."""
    with manager.isolated():
        manager.register(SmallBlocks("small"))
        spec = make()
        with pytest.raises(InvalidArgument, match=rf"spec '{spec.name}' \(block_size=512\)"):
            g.Kernel(spec, "small")


def test_a_block_past_the_x_limit_is_refused() -> None:
    with manager.isolated():
        manager.register(SmallBlocks("narrow", threads=1024, dims=(128, 1024, 64)))
        spec = g.map(uname(), g.f32, None, twice, block_size=256)
        with pytest.raises(InvalidArgument, match=r"block x=256 exceeds narrow device 0's "
                                                  r"limit 128 \(max_block_dims\)"):
            g.Kernel(spec, "narrow")


def test_auto_kernel_skips_a_backend_whose_device_is_too_small() -> None:
    """The check is a load failure like any other: ``AutoKernel`` warns and moves on."""
    with manager.isolated():
        manager.register(SmallBlocks("small", priority=90))
        manager.register(PyBackend("roomy", priority=10))
        spec = g.map(uname(), g.f32, None, twice, block_size=1024)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            k = g.AutoKernel(spec)
        assert k.selected() == "roomy"
        assert any(issubclass(w.category, GomputeWarning) and "block_size=1024" in str(w.message)
                   for w in caught)
        with pytest.raises(g.BackendUnavailable, match="256 threads per block"):
            g.AutoKernel.strict(spec)
        k.close()


def test_raw_kernels_use_the_same_check() -> None:
    """A raw kernel's declared block is checked when it is loaded, a free one's per launch,
    with the same limits and words."""
    with manager.isolated():
        manager.register(SmallBlocks("small"))
        with pytest.raises(InvalidArgument, match=r"raw kernel 'limits_wide' \(declared block="
                                                  r"\(512, 1, 1\)\).*256 threads per block"):
            g.RawKernel(limits_wide, "small")
        raw = g.RawKernel(limits_any, "small")
        buf = raw.alloc(8, g.f32)
        buf.upload(np.arange(8, dtype=np.float32))
        with pytest.raises(InvalidArgument, match=r"limits_any: block \(512, 1, 1\) \(512 "
                                                  r"threads\).*256 threads per block"):
            raw.launch(1, 512, [buf, 8])
        raw.launch(1, 8, [buf, 8])
        raw.synchronize()
        out = np.empty(8, np.float32)
        buf.download(out)
        np.testing.assert_array_equal(out, np.arange(8, dtype=np.float32) * 2)


@g.raw_kernel
def limits_many_scalars(data: g.GlobalPtr[g.f64], n: g.u64, a: g.f64, b: g.f64, c: g.f64,
                        d: g.f64, e: g.f64, f: g.f64, h: g.f64):
    i = B.global_id(0)
    if i < n:
        data[i] = a + b + c + d + e + f + h


def test_raw_kernel_arguments_are_checked_against_the_device_like_a_specs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One argument layout for spec and raw entries, so one check of its size: a raw
    kernel whose arguments exceed ``max_argument_bytes`` fails when it is loaded, naming
    the bytes and the limit; within the limit it runs."""
    with manager.isolated():
        manager.register(PyBackend("argbytes"))
        monkeypatch.setattr(PyDevice, "max_argument_bytes", 64)
        with pytest.raises(InvalidArgument, match=r"limits_many_scalars: its arguments take "
                                                  r"72 bytes; argbytes device 0 passes at "
                                                  r"most 64 bytes per launch"):
            g.RawKernel(limits_many_scalars, "argbytes")
        monkeypatch.setattr(PyDevice, "max_argument_bytes", 72)
        raw = g.RawKernel(limits_many_scalars, "argbytes")
        buf = raw.alloc(4, g.f64)
        raw.launch(1, 4, [buf, 4, *(float(v) for v in range(1, 8))])
        raw.synchronize()
        out = np.empty(4, np.float64)
        buf.download(out)
        np.testing.assert_array_equal(out, np.full(4, 28.0))

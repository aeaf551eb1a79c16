"""Packed arguments and host memory compose (issue 19, item 4).

A device that packs its arguments into one buffer (a C entry taking an argument
buffer) and computes on host memory declares ``"host_memory"`` and implements
``host_array`` and ``borrow``: ``Kernel.run`` then borrows the caller's arrays and packs
their addresses, with no copy in or out. The device here is the reference backend's
packed flavour on host memory (``PyBackend(packed=True)``): its launcher reads the packed
bytes and maps each address back to the memory it names, so a run that copied would show
in its allocation count, and one that packed a wrong address would fail to resolve it.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from pybackend import PackedHostPyDevice, PackedPyDevice, PyBackend

import gompute_core as g
from gompute_core.plugins import manager

_ids = itertools.count()


def uname() -> str:
    """A kernel name unused in this process."""
    return f"hmp_{next(_ids)}"


@g.params
class Scale:
    factor: g.f32


def scaled(x, p):
    return x * p.factor


def plus(a, b):
    return a + b


def halve(x):
    return x / 2


@pytest.fixture
def packed_host() -> Any:
    """The packed host-memory reference backend, registered as ``packedhost``."""
    with manager.isolated():
        manager.register(PyBackend("packedhost", packed=True))
        yield "packedhost"


def opened(spec: g.Spec, backend: str) -> tuple[g.Kernel, PackedHostPyDevice]:
    k = g.Kernel(spec, backend)
    assert isinstance(k.device, PackedHostPyDevice)
    return k, k.device


def test_the_device_packs_and_has_host_memory(packed_host: str) -> None:
    k, dev = opened(g.map(uname(), g.f32, None, halve), packed_host)
    with k:
        assert dev.packs_arguments and dev.has("host_memory")
        assert not PackedPyDevice.capabilities & {"host_memory"}  # the staged flavour


def test_run_is_zero_copy_for_every_kind(packed_host: str) -> None:
    """map (with packed params), map_to, zip, reduce, gather and scatter run on the
    caller's arrays: nothing is allocated, every array is borrowed."""
    n = 1000
    x = np.arange(n, dtype=np.float32)
    idx = np.arange(n, dtype=np.int32)[::-1].copy()
    with g.Kernel(g.map(uname(), g.f32, Scale, scaled), packed_host) as k:
        dev = k.device
        data = x.copy()
        assert k.run(data, Scale(factor=3.0)) is data
        np.testing.assert_array_equal(data, x * 3)
    with g.Kernel(g.map_to(uname(), g.f32, g.f64, None, halve), packed_host) as k:
        out = np.zeros(n, np.float64)
        k.run(x, out)
        np.testing.assert_array_equal(out, x.astype(np.float64) / 2)
    with g.Kernel(g.zip(uname(), g.f32, g.f32, g.f32, None, plus), packed_host) as k:
        out = np.zeros(n, np.float32)
        k.run(x, x, out)
        np.testing.assert_array_equal(out, x * 2)
    with g.Kernel(g.sum(uname(), g.f32), packed_host) as k:
        assert k.run(x) == np.float32(x.sum(dtype=np.float64))
    with g.Kernel(g.gather(uname(), g.f32, g.i32), packed_host) as k:
        out = np.zeros(n, np.float32)
        k.run(x, idx, out)
        np.testing.assert_array_equal(out, x[idx])
    with g.Kernel(g.scatter(uname(), g.f32, g.i32), packed_host) as k:
        out = np.zeros(n, np.float32)
        k.run(x, idx, out)
        np.testing.assert_array_equal(out[idx], x)
    assert dev.allocs == 0, "run copied through device buffers"
    assert dev.borrows == 1 + 2 + 3 + 2 + 3 + 3  # reduce: data and its partials


def test_the_staged_flavour_still_copies() -> None:
    """The same launcher on a packing device without host memory: run goes through device
    buffers (the difference the capability makes)."""
    with manager.isolated():
        manager.register(PyBackend("staged", host_memory=False))
        with g.Kernel(g.map(uname(), g.f32, None, halve), "staged") as k:
            data = np.arange(100, dtype=np.float32)
            k.run(data)
            np.testing.assert_array_equal(data, np.arange(100, dtype=np.float32) / 2)
            assert k.device.allocs > 0


def test_launch_on_buffers_still_packs_addresses(packed_host: str) -> None:
    with g.Kernel(g.map(uname(), g.f32, None, halve), packed_host) as k:
        buf = k.alloc(10)
        buf.upload(np.full(10, 8, np.float32))
        k.launch(buf, 10)
        k.context.synchronize()
        out = np.empty(10, np.float32)
        buf.download(out)
        np.testing.assert_array_equal(out, np.full(10, 4, np.float32))

"""HIP runtime on a real AMD GPU, what only HIP does here: reduce partials, gather bounds,
the module cache, launch bounds (the checks CUDA and HIP share are in
``test_gpu_runtime.py``).

No AMD GPU is available to this project: these tests are written to run unchanged on an
AMD machine (ROCm >= 6 with the matching hip-python) and skip here with the probe's reason
("no AMD GPU (hipInit: 101)" or the missing library).
"""

from __future__ import annotations

import numpy as np
import pytest
from gpu_runtime_support import ADD1, SUM, skip_unless_available

import gompute_core as g
from gompute_core.plugins import manager
from gompute_core.testing.catalogue import entry

pytestmark = skip_unless_available("hip")


def test_reduce_sum_f64_and_partials() -> None:
    x = np.arange(100_003, dtype=np.float64)
    with g.Kernel(SUM, "hip") as k:
        assert k.run(x) == pytest.approx(x.sum(), rel=1e-12)
        blocks = k.reduce_blocks(x.size)
        data, partials = k.alloc(x.size), k.alloc(blocks)
        data.upload(x)
        k.launch(data, x.size, partials, blocks, None)
        k.context.synchronize()
        got = np.empty(blocks, np.float64)
        partials.download(got)
        assert got.sum() == pytest.approx(x.sum(), rel=1e-12)


def test_gather_skips_out_of_range() -> None:
    spec = entry("gather_i32_u64").spec()
    src = np.arange(10, dtype=spec.T)
    idx = np.array([0, 9, 10, 2**63, 5], dtype=spec.Idx)
    out = np.full(5, -1, dtype=spec.T)
    with g.Kernel(spec, "hip") as k:
        k.run(src, idx, out)
    np.testing.assert_array_equal(out, [0, 9, -1, -1, 5])


def test_module_cache_per_device_and_image() -> None:
    dev = manager.open_device("hip", 0)
    art = g.compile(ADD1, "hip", arch=dev.arch)
    assert dev.load_module(art.image) is dev.load_module(bytes(art.image))


def test_launch_with_a_larger_block_is_rejected_not_wrong() -> None:
    """__launch_bounds__(block_size): HIP refuses a bigger block instead of running it."""
    dev = manager.open_device("hip", 0)
    kir = entry("map_bs1_i32").spec().lower()
    prog = dev.program(g.compile(entry("map_bs1_i32").spec(), "hip", arch=dev.arch), kir)
    buf = dev.alloc(4 * 64)
    prog._block = (64, 1, 1)  # launch with more threads than the kernel was built for
    with pytest.raises(g.GomputeError):
        prog.launch(buf, 64, None)
        dev.synchronize()

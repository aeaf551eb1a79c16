"""CUDA runtime on a real GPU, what only CUDA does here: unaligned views and the launch
path, an f64 sum, the fp64 ratio, prebuilt artifacts (the checks CUDA and HIP share are
in ``test_gpu_runtime.py``). Skipped (one line) where no NVIDIA driver/device is present."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_runtime_support import ADD1, SUM, add_one, skip_unless_available

import gompute_core as g
from gompute_core.plugins import manager

pytestmark = skip_unless_available("cuda")


def test_map_unaligned_view_and_launch_path() -> None:
    x = np.arange(1001, dtype=np.float32)
    with g.Kernel(ADD1, "cuda") as k:
        buf = k.alloc(1001)
        buf.upload(x)
        sub = k.device.alloc(4 * 1000)
        sub.copy_from(buf, 4 * 1000)
        k.launch(buf, 1001, None)
        k.context.synchronize()
        out = np.empty_like(x)
        buf.download(out)
        np.testing.assert_array_equal(out, x + 1)
        buf.free()
        buf.free()
        sub.free()
        with pytest.raises(g.InvalidArgument, match="after free"):
            k.launch(buf, 1001, None)  # refused, never a launch on freed memory
        small = k.alloc(10)
        with pytest.raises(g.InvalidArgument, match="buf holds 10 elements, the launch needs 11"):
            k.launch(small, 11, None)  # O(1) bounds check: no write past the buffer
        small.free()


def test_reduce_sum_f64() -> None:
    x = np.random.default_rng(1).standard_normal(2**20 + 7)
    with g.Kernel(SUM, "cuda") as k:
        got = k.run(x)
    assert got == pytest.approx(float(np.sum(x)), rel=1e-12, abs=1e-9)


def test_fp64_ratio() -> None:
    assert 0 < manager.open_device("cuda", 0).fp64_ratio() <= 1


def test_prebuilt_artifacts_load_without_compiling(tmp_path, monkeypatch) -> None:
    from gompute_core.compilation import pipeline
    from gompute_core.runtime.compile import write_artifact

    dev = manager.open_device("cuda", 0)
    spec = g.map("cuda_rt_prebuilt_add_one", g.f32, None, add_one)
    write_artifact(tmp_path, g.compile(spec, "cuda", arch=dev.arch), spec.lower())
    monkeypatch.setenv("GOMPUTE_ARTIFACT_DIR", str(tmp_path))

    def no_compiling(*args, **kwargs):
        raise AssertionError("compiled although a prebuilt artifact exists")

    monkeypatch.setattr(pipeline, "compile_kernel", no_compiling)
    with g.Kernel(spec, "cuda") as k:
        out = k.run(np.arange(10, dtype=np.float32))
    np.testing.assert_array_equal(out, np.arange(1, 11, dtype=np.float32))


def test_run_uses_memory_that_is_page_locked_already() -> None:
    """An array over pinned memory NumPy does not own (the device's own ``pinned`` arrays,
    CuPy's ``alloc_pinned_memory``) is recognised as page-locked: ``run`` copies it by DMA
    instead of staging it (it was 3x slower than a pageable array: never registered,
    always staged), and the sum is the one NumPy computes in the same order."""
    dev = manager.open_device("cuda", 0)
    n = 1 << 21
    data = np.random.default_rng(7).standard_normal(n)  # SUM is an f64 sum
    pageable = data.copy()
    own = dev.pinned(n, np.float64)
    own[:] = data
    assert dev.pin(own) and not dev.pin(np.frombuffer(bytearray(data.tobytes()), np.float64))
    with g.Kernel(SUM, "cuda") as k:
        want = k.run(pageable)
        assert k.run(own) == want
        try:
            import cupy as cp
        except ImportError:
            return
        block = cp.cuda.alloc_pinned_memory(data.nbytes)
        foreign = np.frombuffer(block, np.float64, n)
        foreign[:] = data
        assert dev.pin(foreign)
        assert k.run(foreign) == want

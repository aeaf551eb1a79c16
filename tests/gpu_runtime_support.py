"""What the GPU runtime tests (``test_gpu_runtime.py``, ``test_cuda_runtime.py``,
``test_hip_runtime.py``) share: their kernels and the skip of a backend without a device."""

from __future__ import annotations

import pytest

import gompute_core as g
from gompute_core.cli_kernels import Scale, scale_relu
from gompute_core.plugins import manager


def add_one(x):
    """``x + 1``."""
    return x + 1


SCALE = g.map("gpu_rt_scale_relu", g.f32, Scale, scale_relu)
ADD1 = g.map("gpu_rt_add_one", g.f32, None, add_one)
SUM = g.sum("gpu_rt_sum_f64", g.f64, None)


def skip_unless_available(backend: str) -> pytest.MarkDecorator:
    """Skip (one line, with the probe's reason) where ``backend`` is not installed or has
    no device."""
    installed = any(r.name == backend for r in manager.backends())
    avail = manager.probe(backend) if installed else None
    reason = avail.reason if avail else f"gompute-{backend} not installed"
    return pytest.mark.skipif(avail is None or not avail.available,
                              reason=f"{backend} unavailable: {reason}")

"""Kernels of ``gompute doctor`` and ``gompute demo``, with their Python oracles.

Imported only by those commands, so ``gompute info`` registers no spec.
Each check returns ``(title, inputs, result, expected, ok)`` lines for the
CLI to print.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .abi import params
from .fusion import Fused, Unary
from .kinds.map import map
from .kinds.move import gather
from .kinds.reduce import sum
from .kinds.zip import zip
from .runtime.kernel import AutoKernel, Kernel
from .types import f32, i32


@dataclass(frozen=True)
class Check:
    """One kernel run: what went in, what came out, what the oracle says."""

    title: str
    inputs: str
    result: Any
    expected: Any
    ok: bool


@params
class Scale:
    """Multiplier of the scale_relu demo."""

    scale: f32


@params
class Axpy:
    """``alpha`` of the axpy demo."""

    alpha: f32


@params
class Affine:
    """Scale and offset of the fused pipeline demo."""

    scale: f32
    offset: f32


def scale_relu(x, p):
    """``max(x * scale, 0)``."""
    y = x * p.scale
    return y if y > 0 else 0


def axpy(a, b, p):
    """``alpha * a + b``."""
    return p.alpha * a + b


def scale_stage(x, p):
    """Stage 1 of the pipeline: ``x * scale``."""
    return x * p.scale


class Shift:
    """Stage 2 of the pipeline: ``x + offset``."""

    @staticmethod
    def eval(x, p):
        return x + p.offset


class Square:
    """Stage 3 of the pipeline: ``x * x``."""

    @staticmethod
    def eval(x, p):
        return x * x


def twice_plus_one(x):
    """The doctor's map: ``2x + 1``."""
    return x * 2 + 1


PIPELINE = Fused(f32, Affine, [Unary(f32, Affine, scale_stage), Shift, Square])

SCALE_RELU = map("gompute_demo_scale_relu", f32, Scale, scale_relu)
AXPY = zip("gompute_demo_axpy", f32, f32, f32, Axpy, axpy)
FUSED = map("gompute_demo_pipeline", f32, Affine, PIPELINE)
TOTAL = sum("gompute_demo_sum", i32)
GATHER = gather("gompute_demo_gather", f32, i32)
DOCTOR_MAP = map("gompute_doctor_map", f32, None, twice_plus_one)
DOCTOR_SUM = sum("gompute_doctor_sum", i32)


def _fmt(a: Any) -> str:
    return np.array2string(np.asarray(a), precision=3, threshold=12, separator=", ")


def _elementwise(fn: Any, T: type, *columns: np.ndarray, p: Any = None) -> np.ndarray:
    extra = () if p is None else (p,)
    with np.errstate(all="ignore"):
        return np.array([T(fn(*xs, *extra)) for xs in np.broadcast(*columns)], dtype=T)


def _sum_oracle(T: type, data: np.ndarray) -> Any:
    acc = T(0)
    with np.errstate(all="ignore"):
        for x in data:
            acc = T(acc + x)
    return acc


def doctor_checks(backend: str) -> list[Check]:
    """The doctor's tiny map and sum on ``backend``, against the Python oracle."""
    data = np.linspace(-4, 4, 1001, dtype=np.float32)
    expected = _elementwise(twice_plus_one, np.float32, data)
    ints = np.arange(-500, 1501, dtype=np.int32)
    with Kernel(DOCTOR_MAP, backend) as k:
        got = k.run(data.copy())
    with Kernel(DOCTOR_SUM, backend) as k:
        total = k.run(ints)
    want = _sum_oracle(np.int32, ints)
    return [
        Check("map 2x+1 (f32, 1001)", _fmt(data), _fmt(got), _fmt(expected),
              bool(np.array_equal(got, expected))),
        Check("sum (i32, 2001)", _fmt(ints), total, want, bool(total == want)),
    ]


def demo_checks() -> tuple[str, list[Check]]:
    """The demo kernels on the default backend (``AutoKernel``): ``(backend, checks)``."""
    checks: list[Check] = []
    x = np.array([-2, -0.5, 0, 1, 2.5, 4], np.float32)
    p = Scale(scale=2)
    with AutoKernel(SCALE_RELU) as k:
        backend = k.selected()
        got = k.run(x.copy(), p)
    want = _elementwise(scale_relu, np.float32, x, p=p)
    checks.append(Check("map scale_relu(x, scale=2)", f"x = {_fmt(x)}", _fmt(got), _fmt(want),
                        bool(np.array_equal(got, want))))
    a, b = np.arange(6, dtype=np.float32), np.full(6, 0.5, np.float32)
    q = Axpy(alpha=3)
    with AutoKernel(AXPY) as k:
        got = k.run(a, b, np.empty(6, np.float32), q)
    want = _elementwise(axpy, np.float32, a, b, p=q)
    checks.append(Check("zip axpy(a, b, alpha=3)", f"a = {_fmt(a)}, b = {_fmt(b)}", _fmt(got),
                        _fmt(want), bool(np.array_equal(got, want))))
    r = Affine(scale=0.5, offset=-1)
    with AutoKernel(FUSED) as k:
        got = k.run(x.copy(), r)
    want = _elementwise(PIPELINE.eval, np.float32, x, p=r)
    checks.append(Check("fused (x*0.5 - 1)**2, one loop", f"x = {_fmt(x)}", _fmt(got),
                        _fmt(want), bool(np.array_equal(got, want))))
    ints = np.arange(1, 101, dtype=np.int32)
    with AutoKernel(TOTAL) as k:
        total = k.run(ints)
    want_total = _sum_oracle(np.int32, ints)
    checks.append(Check("sum 1..100 (i32)", _fmt(ints), total, want_total,
                        bool(total == want_total)))
    src = np.array([10, 20, 30, 40], np.float32)
    idx = np.array([3, 0, 9, -1, 2], np.int32)
    out = np.full(5, -1, np.float32)
    want = np.array([src[i] if 0 <= i < src.size else -1 for i in idx], np.float32)
    with AutoKernel(GATHER) as k:
        got = k.run(src, idx, out)
    checks.append(Check("gather src[idx] (out-of-range kept)",
                        f"src = {_fmt(src)}, idx = {_fmt(idx)}", _fmt(got), _fmt(want),
                        bool(np.array_equal(got, want))))
    return backend, checks

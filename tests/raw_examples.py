"""Raw kernels of every shape the C-family renderers must handle, with NumPy oracles
(used by ``tests/test_codegen_raw.py`` and ``tests/test_raw_backends.py``).

The kernels of the conformance tier (:mod:`gompute_core.testing.kernels_raw`: block sum
and scan, tiled transpose, stencil, histogram, float max by CAS, atomics, 3-D indexing,
a fused pipeline) are used as they are, with that module's oracles; defined here are
only what they do not cover: three pointers to possibly one buffer, f16 and bool
arguments and stores, params records (an empty one too), every atomic op on every
type with its old values, and ``threadfence()`` publishing a value between blocks.

Each :class:`Example` names a kernel, a host ``setup(rng)`` returning its launch
(grid, block, shared bytes, the kernel's arguments with NumPy arrays standing for
device buffers) and ``check(args, out)`` comparing what the launch left in the arrays
with NumPy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import gompute_core as g
from gompute_core.testing import kernels_raw as K

B = g.builtins


@g.params
class Scale:
    """The params record of ``raw_saxpy``."""

    a: g.f32
    flip: bool


@g.params
class Nothing:
    """An empty params record (no launch argument)."""


@g.raw_kernel
def raw_add_pair(x: g.GlobalPtr[g.f32], y: g.GlobalPtr[g.f32], out: g.GlobalPtr[g.f32], n: g.u64):
    i = B.global_id(0)
    if i >= n:
        return
    out[i] = x[i] + y[i]


@g.raw_kernel
def raw_fill(marks: g.GlobalPtr[bool], halves: g.GlobalPtr[g.f16], n: g.u64, e: Nothing):
    i = B.global_id(0)
    if i < n:
        marks[i] = i % 3 == 0
        halves[i] = g.f16(i) * g.f16(0.5) if marks[i] else halves[i] + g.f16(1)


@g.raw_kernel
def raw_saxpy(x: g.GlobalPtr[g.f32], y: g.GlobalPtr[g.f32], n: g.i32, p: Scale, h: g.f16,
              b: bool):
    i = B.global_id(0)
    if i < n:
        v = p.a * x[i] + y[i] + g.f32(h)
        y[i] = -v if p.flip != b else v


@g.raw_kernel
def raw_atomics(i32s: g.GlobalPtr[g.i32], u32s: g.GlobalPtr[g.u32], i64s: g.GlobalPtr[g.i64],
                u64s: g.GlobalPtr[g.u64], f32s: g.GlobalPtr[g.f32], f64s: g.GlobalPtr[g.f64],
                olds: g.GlobalPtr[g.f64], n: g.i64):
    """Every atomic op on every type; slot k of each array gets op k from every thread."""
    i = B.global_id(0)
    if i >= n:
        return
    v = i + 1
    B.atomic_add(i32s, 0, v)
    B.atomic_sub(i32s, 1, v)
    B.atomic_min(i32s, 2, -v)
    B.atomic_max(i32s, 3, v)
    B.atomic_add(u32s, 0, v)
    B.atomic_sub(u32s, 1, v)
    B.atomic_min(u32s, 2, v)
    B.atomic_max(u32s, 3, v)
    B.atomic_add(i64s, 0, v)
    B.atomic_sub(i64s, 1, v)
    B.atomic_min(i64s, 2, -v)
    B.atomic_max(i64s, 3, v)
    B.atomic_add(u64s, 0, v)
    B.atomic_sub(u64s, 1, v)
    B.atomic_min(u64s, 2, v)
    B.atomic_max(u64s, 3, v)
    B.atomic_add(f32s, 0, g.f32(v))
    B.atomic_sub(f32s, 1, g.f32(v))
    B.atomic_min(f32s, 2, g.f32(-v))
    B.atomic_max(f32s, 3, g.f32(v))
    B.atomic_add(f64s, 0, g.f64(v))
    B.atomic_sub(f64s, 1, g.f64(v))
    B.atomic_min(f64s, 2, g.f64(-v))
    B.atomic_max(f64s, 3, g.f64(v))
    # exch and cas: only thread 0 (single-writer, so the old values are known)
    if i == 0:
        olds[0] = g.f64(B.atomic_exch(i32s, 4, -5))
        olds[1] = g.f64(B.atomic_exch(u32s, 4, 5))
        olds[2] = g.f64(B.atomic_exch(i64s, 4, -5))
        olds[3] = g.f64(B.atomic_exch(u64s, 4, 5))
        olds[4] = g.f64(B.atomic_exch(f32s, 4, g.f32(2.5)))
        olds[5] = g.f64(B.atomic_exch(f64s, 4, 2.5))
        olds[6] = g.f64(B.atomic_cas(i32s, 5, 7, -9))
        olds[7] = g.f64(B.atomic_cas(u32s, 5, 8, 9))
        olds[8] = g.f64(B.atomic_cas(i64s, 5, 7, -9))
        olds[9] = g.f64(B.atomic_cas(u64s, 5, 8, 9))
        olds[10] = g.f64(B.atomic_cas(f32s, 5, g.f32(1.5), g.f32(3.5)))
        olds[11] = g.f64(B.atomic_cas(f64s, 5, 1.25, 3.5))
        olds[12] = g.f64(B.atomic_max(f32s, 6, g.f32(float("nan"))))
        olds[13] = g.f64(B.atomic_min(f64s, 6, float("nan")))


@dataclass(frozen=True)
class Example:
    """A raw kernel with a host setup and a NumPy check."""

    kernel: Any
    setup: Callable[[np.random.Generator], tuple[Any, Any, int, list[Any]]]
    check: Callable[[list[Any], list[Any]], None]


LAST_BLOCK = 64


@g.raw_kernel(block=LAST_BLOCK)
def raw_last_block_sum(data: g.GlobalPtr[g.i64], n: g.u64, partials: g.GlobalPtr[g.i64],
                       arrived: g.GlobalPtr[g.u32], total: g.GlobalPtr[g.i64]):
    """CUDA's threadFenceReduction: each block publishes its sum behind ``threadfence()``
    and counts itself in with an atomic; the block that arrives last adds the published
    sums (read with atomics, past any cache)."""
    last = B.shared_array(g.u32, 1)
    b = g.u64(B.block_id(0))
    if B.local_id(0) == 0:
        acc = g.i64(0)
        for i in range(b * LAST_BLOCK, min(b * LAST_BLOCK + LAST_BLOCK, n)):
            acc += data[i]
        partials[b] = acc
        B.threadfence()
        last[0] = B.atomic_add(arrived, 0, g.u32(1))
    B.barrier()
    if B.local_id(0) == 0 and g.i64(last[0]) == B.grid_dim(0) - 1:
        B.threadfence()
        acc2 = g.i64(0)
        for k in range(B.grid_dim(0)):
            acc2 += B.atomic_add(partials, k, g.i64(0))
        total[0] = acc2


def _add_pair_setup(rng: np.random.Generator) -> tuple[Any, Any, int, list[Any]]:
    n = 1000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    return 8, 128, 0, [x, y, np.zeros(n, np.float32), np.uint64(n)]


def _add_pair_check(a: list[Any], out: list[Any]) -> None:
    np.testing.assert_array_equal(out[2], a[0] + a[1])


def _saxpy_setup(rng: np.random.Generator) -> tuple[Any, Any, int, list[Any]]:
    n = 300
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    return 3, 128, 0, [x, y, np.int32(n), Scale(a=np.float32(2.5), flip=True),
                       np.float16(0.5), np.bool_(False)]


def _saxpy_check(a: list[Any], out: list[Any]) -> None:
    v = np.float32(2.5) * a[0] + a[1] + np.float32(0.5)
    np.testing.assert_array_equal(out[1], -v)


def _fill_setup(rng: np.random.Generator) -> tuple[Any, Any, int, list[Any]]:
    n = 100
    return 1, 128, 0, [np.ones(n, np.bool_), np.full(n, 3, np.float16), np.uint64(n), Nothing()]


def _fill_check(a: list[Any], out: list[Any]) -> None:
    i = np.arange(100)
    np.testing.assert_array_equal(out[0], i % 3 == 0)
    want = np.where(i % 3 == 0, i.astype(np.float16) * np.float16(0.5), np.float16(4))
    np.testing.assert_array_equal(out[1], want.astype(np.float16))


N_ATOMIC = 200


def _atomics_setup(rng: np.random.Generator) -> tuple[Any, Any, int, list[Any]]:
    def arr(dtype: Any) -> np.ndarray:
        a = np.zeros(8, dtype)
        a[2] = np.iinfo(dtype).max if np.dtype(dtype).kind in "iu" else np.inf
        a[3] = np.iinfo(dtype).min if np.dtype(dtype).kind in "iu" else -np.inf
        a[4] = 11
        a[5] = 7 if np.dtype(dtype).kind == "i" else 8
        if np.dtype(dtype).kind == "f":
            a[5] = 1.5 if dtype == np.float32 else 1.25
        a[6] = 4
        return a

    return 2, 128, 0, [arr(np.int32), arr(np.uint32), arr(np.int64), arr(np.uint64),
                       arr(np.float32), arr(np.float64), np.zeros(14), np.int64(N_ATOMIC)]


def _atomics_check(a: list[Any], out: list[Any]) -> None:
    v = np.arange(1, N_ATOMIC + 1)
    for k, dtype in enumerate((np.int32, np.uint32, np.int64, np.uint64, np.float32,
                               np.float64)):
        got = out[k]
        signed = np.dtype(dtype).kind != "u"
        with np.errstate(over="ignore"):
            assert got[0] == dtype(v.sum()), (dtype, got)
            assert got[1] == (dtype(-v.sum()) if signed else
                              dtype(0) - dtype(v.sum())), (dtype, got)
        assert got[2] == (dtype(-N_ATOMIC) if signed else dtype(1)), (dtype, got)
        assert got[3] == dtype(N_ATOMIC), (dtype, got)
        assert got[4] == (dtype(-5) if np.dtype(dtype).kind == "i" else
                          dtype(2.5) if np.dtype(dtype).kind == "f" else dtype(5)), (dtype, got)
        assert got[5] == (dtype(-9) if np.dtype(dtype).kind == "i" else
                          dtype(3.5) if np.dtype(dtype).kind == "f" else dtype(9)), (dtype, got)
        assert got[6] == 4, (dtype, got)  # a NaN never replaces
    np.testing.assert_array_equal(out[6], [11] * 6 + [7, 8, 7, 8, 1.5, 1.25, 4, 4])


def _add_setup(rng: np.random.Generator) -> tuple[Any, Any, int, list[Any]]:
    n = 1000
    return 4, K.BLOCK, 0, [rng.standard_normal(n).astype(np.float32), np.uint64(n)]


def _add_check(a: list[Any], out: list[Any]) -> None:
    np.testing.assert_array_equal(out[0], a[0] + np.float32(1))


def _scale_setup(rng: np.random.Generator) -> tuple[Any, Any, int, list[Any]]:
    n = 1000
    return 8, 128, 0, [rng.standard_normal(n).astype(np.float32), np.uint64(n),
                       np.float32(2.5)]


def _scale_check(a: list[Any], out: list[Any]) -> None:
    np.testing.assert_array_equal(out[0], a[0] * a[2])


def _sum_setup(rng: np.random.Generator) -> tuple[Any, Any, int, list[Any]]:
    n = 1000
    x = rng.integers(-50, 50, n).astype(np.int32)
    return 3, K.BLOCK, 0, [x, np.uint64(n), np.zeros(3, np.int32)]


def _sum_check(a: list[Any], out: list[Any]) -> None:
    np.testing.assert_array_equal(out[2], K.block_sum_oracle(a[0], 3))


def _scan_setup(rng: np.random.Generator) -> tuple[Any, Any, int, list[Any]]:
    n = 300
    return 3, K.SCAN_BLOCK, 0, [rng.integers(-100, 100, n).astype(np.int32), np.uint64(n),
                                np.zeros(n, np.int32)]


def _scan_check(a: list[Any], out: list[Any]) -> None:
    np.testing.assert_array_equal(out[2], K.block_scan_oracle(a[0]))


def _transpose_setup(rng: np.random.Generator) -> tuple[Any, Any, int, list[Any]]:
    rows, cols = 37, 50
    src = rng.standard_normal(rows * cols).astype(np.float32)
    return ((4, 3), (K.TILE, K.TILE), 0,
            [src, np.zeros(rows * cols, np.float32), np.int64(rows), np.int64(cols)])


def _transpose_check(a: list[Any], out: list[Any]) -> None:
    np.testing.assert_array_equal(out[1], a[0].reshape(37, 50).T.ravel())


def _stencil_setup(rng: np.random.Generator) -> tuple[Any, Any, int, list[Any]]:
    rows, cols = 20, 27
    src = rng.integers(-9, 9, rows * cols).astype(np.float32)
    return ((2, 2), (K.TILE, K.TILE), 0,
            [src, np.zeros(rows * cols, np.float32), np.int64(rows), np.int64(cols)])


def _stencil_check(a: list[Any], out: list[Any]) -> None:
    np.testing.assert_array_equal(out[1], K.stencil_oracle(a[0].reshape(20, 27)).ravel())


def _hist_setup(rng: np.random.Generator) -> tuple[Any, Any, int, list[Any]]:
    n = 5000
    return 3, K.BLOCK, 0, [rng.integers(0, 256, n).astype(np.uint8), np.uint64(n),
                           np.zeros(256, np.uint32)]


def _hist_check(a: list[Any], out: list[Any]) -> None:
    np.testing.assert_array_equal(out[2], np.bincount(a[0], minlength=256).astype(np.uint32))


def _cas_max_setup(rng: np.random.Generator) -> tuple[Any, Any, int, list[Any]]:
    n = 2000
    return 16, 128, 0, [rng.standard_normal(n).astype(np.float32), np.uint64(n),
                        np.full(1, -np.inf, np.float32)]


def _cas_max_check(a: list[Any], out: list[Any]) -> None:
    assert out[2][0] == a[0].max()


def _last_block_setup(rng: np.random.Generator) -> tuple[Any, Any, int, list[Any]]:
    n = 7 * LAST_BLOCK - 5
    return 7, LAST_BLOCK, 0, [rng.integers(-2**40, 2**40, n), np.uint64(n),
                              np.zeros(7, np.int64), np.zeros(1, np.uint32),
                              np.zeros(1, np.int64)]


def _last_block_check(a: list[Any], out: list[Any]) -> None:
    data = a[0]
    sums = [data[k:k + LAST_BLOCK].sum() for k in range(0, data.size, LAST_BLOCK)]
    np.testing.assert_array_equal(out[2], sums)
    assert out[3][0] == 7 and out[4][0] == data.sum()


def _atomic_ops_setup(rng: np.random.Generator) -> tuple[Any, Any, int, list[Any]]:
    n = 1000
    values = rng.integers(-2**31, 2**31 - 1, n, dtype=np.int64).astype(np.int32)
    return 8, 128, 0, [values, np.uint64(n), *K.atomic_ops_start()]


def _atomic_ops_check(a: list[Any], out: list[Any]) -> None:
    K.check_atomic_ops(a[0], *out[2:])


INDEX_SHAPE, INDEX_BLOCK = (9, 5, 3), (4, 3, 2)


def _index_setup(rng: np.random.Generator) -> tuple[Any, Any, int, list[Any]]:
    nx, ny, nz = INDEX_SHAPE
    return (3, 2, 2), INDEX_BLOCK, 0, [np.zeros(nx * ny * nz, np.int64), np.int64(nx),
                                       np.int64(ny), np.int64(nz)]


def _index_check(a: list[Any], out: list[Any]) -> None:
    np.testing.assert_array_equal(out[0], K.index3d_oracle(INDEX_SHAPE, INDEX_BLOCK))


def _fused_setup(rng: np.random.Generator) -> tuple[Any, Any, int, list[Any]]:
    n = 300
    return 5, 64, 0, [rng.uniform(-3, 3, n).astype(np.float32), np.uint64(n),
                      K.COEF_F32(a=np.float32(1.5), b=np.float32(-0.25))]


def _fused_check(a: list[Any], out: list[Any]) -> None:
    np.testing.assert_array_equal(out[0], K.fused_oracle(a[0], a[2]))


EXAMPLES: dict[str, Example] = {
    "add_pair": Example(raw_add_pair, _add_pair_setup, _add_pair_check),
    "saxpy": Example(raw_saxpy, _saxpy_setup, _saxpy_check),
    "fill": Example(raw_fill, _fill_setup, _fill_check),
    "atomics": Example(raw_atomics, _atomics_setup, _atomics_check),
    "add": Example(K.raw_add, _add_setup, _add_check),
    "scale": Example(K.raw_scale, _scale_setup, _scale_check),
    "block_sum": Example(K.raw_block_sum, _sum_setup, _sum_check),
    "block_scan": Example(K.raw_block_scan, _scan_setup, _scan_check),
    "transpose": Example(K.raw_transpose, _transpose_setup, _transpose_check),
    "stencil": Example(K.raw_stencil, _stencil_setup, _stencil_check),
    "histogram": Example(K.raw_histogram, _hist_setup, _hist_check),
    "cas_max": Example(K.raw_cas_max, _cas_max_setup, _cas_max_check),
    "atomic_ops": Example(K.raw_atomic_ops, _atomic_ops_setup, _atomic_ops_check),
    "last_block_sum": Example(raw_last_block_sum, _last_block_setup, _last_block_check),
    "index3d": Example(K.raw_index3d, _index_setup, _index_check),
    "fused": Example(K.raw_fused, _fused_setup, _fused_check),
}
"""Every example by short name."""

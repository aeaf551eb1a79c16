"""Raw kernels on the CPU backend against hand-written numba (issue 9's CPU targets).

* block sum, 2**24 f32: the shared-memory tree reduction (one partial per block, a
  grid-stride loop first, the partials folded by NumPy) against a hand-written numba sum
  (``prange`` and serial loops, no fast-math, as the raw kernel). Target: <= 1.5x.
* tiled transpose, 4096 x 4096 f32: a 16 x 17 shared tile, 2-D grid and blocks, against a
  hand-written numba loop over 16 x 16 tiles (``prange`` over tile rows). Target: <= 2x.

Times are the best of 9 runs. Each is timed with one numba thread
(``numba.set_num_threads(1)``: the raw kernel's blocks then run serially) and with all.
Run: ``python bench/raw_cpu.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numba
import numpy as np
from numba import njit, prange

import gompute_core as g
from gompute_core.testing.kernels_raw import BLOCK, block_sum_kernel

B = g.builtins
TILE = 16


block_sum_f32 = block_sum_kernel(g.f32, "block_sum_f32")
"""The f32 block sum (``tests/test_cpu_raw.py`` checks it bit for bit)."""


@g.raw_kernel(block=(TILE, TILE))
def bench_cpu_transpose(src: g.GlobalPtr[g.f32], dst: g.GlobalPtr[g.f32], rows: g.i64,
                        cols: g.i64):
    tile = B.shared_array(g.f32, (TILE, TILE + 1))
    tx = B.local_id(0)
    ty = B.local_id(1)
    x = B.block_id(0) * TILE + tx
    y = B.block_id(1) * TILE + ty
    if x < cols and y < rows:
        tile[ty, tx] = src[y * cols + x]
    B.barrier()
    ox = B.block_id(1) * TILE + tx
    oy = B.block_id(0) * TILE + ty
    if ox < rows and oy < cols:
        dst[oy * rows + ox] = tile[tx, ty]


@njit(error_model="numpy", boundscheck=False)
def numba_sum(x: np.ndarray) -> np.float32:
    acc = np.float32(0)
    for i in range(x.shape[0]):
        acc += x[i]
    return acc


@njit(error_model="numpy", boundscheck=False, parallel=True)
def numba_sum_parallel(x: np.ndarray) -> np.float32:
    acc = np.float32(0)
    for i in prange(x.shape[0]):
        acc += x[i]
    return acc


def _tiled(src: np.ndarray, dst: np.ndarray, rows: int, cols: int, bi: int) -> None:
    for bj in range(0, cols, TILE):
        for i in range(bi, min(bi + TILE, rows)):
            for j in range(bj, min(bj + TILE, cols)):
                dst[j * rows + i] = src[i * cols + j]


_tile_rows = njit(error_model="numpy", boundscheck=False)(_tiled)


@njit(error_model="numpy", boundscheck=False)
def numba_transpose(src: np.ndarray, dst: np.ndarray, rows: int, cols: int) -> None:
    for bi in range(0, rows, TILE):
        _tile_rows(src, dst, rows, cols, bi)


@njit(error_model="numpy", boundscheck=False, parallel=True)
def numba_transpose_parallel(src: np.ndarray, dst: np.ndarray, rows: int, cols: int) -> None:
    for t in prange((rows + TILE - 1) // TILE):
        _tile_rows(src, dst, rows, cols, t * TILE)


def best_seconds(fn: Callable[[], object], reps: int = 9) -> float:
    """Fastest wall time of ``fn()`` over ``reps`` runs after one warm-up call (the
    minimum: other work on a shared 2-core host only ever adds time)."""
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    n = 1 << 24
    data = np.random.default_rng(0).uniform(0, 1, n).astype(np.float32)
    block_sum = g.RawKernel(block_sum_f32, "cpu")
    transpose = g.RawKernel(bench_cpu_transpose, "cpu")
    rows = cols = 4096
    src = np.random.default_rng(1).standard_normal(rows * cols).astype(np.float32)
    dst = np.empty_like(src)
    want = src.reshape(rows, cols).T.reshape(-1)
    all_threads = numba.config.NUMBA_NUM_THREADS
    print(f"raw kernels on the CPU backend ({all_threads} numba threads available)")
    for threads in (1, all_threads):
        numba.set_num_threads(threads)
        ref = numba_sum if threads == 1 else numba_sum_parallel
        t_ref = best_seconds(lambda ref=ref: ref(data))
        print(f"\n{threads} thread(s): block sum of 2**24 f32, hand-written numba sum "
              f"{t_ref * 1e3:.2f} ms")
        for grid in (64, 1024, n // BLOCK):
            partials = np.zeros(grid, np.float32)

            def run(grid: int = grid, partials: np.ndarray = partials) -> float:
                block_sum.launch(grid, BLOCK, [data, n, partials])
                return float(partials.sum(dtype=np.float64))

            t = best_seconds(run)
            assert abs(run() - data.sum(dtype=np.float64)) < 1e-3 * n ** 0.5
            print(f"  raw block sum, grid {grid:>6} x {BLOCK}: {t * 1e3:7.2f} ms  "
                  f"ratio {t / t_ref:.2f}x (target <= 1.5)")
        ref_t = numba_transpose if threads == 1 else numba_transpose_parallel
        t_ref = best_seconds(lambda ref_t=ref_t: ref_t(src, dst, rows, cols))
        grid3 = (cols // TILE, rows // TILE)
        t = best_seconds(lambda grid3=grid3: transpose.launch(grid3, (TILE, TILE),
                                                              [src, dst, rows, cols]))
        assert np.array_equal(dst, want)
        print(f"  transpose {rows}x{cols} f32: hand-written numba tiled {t_ref * 1e3:.2f} ms, "
              f"raw {t * 1e3:.2f} ms  ratio {t / t_ref:.2f}x (target <= 2)")
    numba.set_num_threads(all_threads)


if __name__ == "__main__":
    main()

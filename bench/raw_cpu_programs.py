"""Ported GPU programs as CPU raw kernels, against numba versions of the same programs
(issue 20's CPU numbers), with 1 numba thread and with all of them.

* grid-stride ``for`` vs ``while``: the block sum of 2**24 f32 (``raw_cpu.py``'s kernel)
  with its grid-stride loop written ``for i in range(global_id(0), n, stride)``, against
  the same kernel written with ``while``. Target: the ``for`` within 1.2x of the ``while``.
* Black-Scholes (CuPy's example: 3 inputs, 2 outputs, 2 scalars), 2**24 f32 options, a
  raw kernel (``i = global_id(0); if i < n: ...``) against the same program as a numba
  ``prange`` loop (no fast-math, NumPy error model, as the raw kernel). Target: <= 1.1x.
* 5-point Laplacian, 4096 x 4096 f32: a raw kernel on 32 x 32 tiles staged with a one-cell
  halo in shared memory, against a numba ``prange`` loop over the rows reading the
  neighbours directly. Target: <= 1.5x.

Both sides write the same preallocated outputs (where a large array lies in memory
changed the time of one and the same numba function by up to 1.3x on the shared 2-core
host: separate outputs would measure that), checked equal first (bit for bit: the same
operations, and numba's math for both). Each time is the best of ``REPS`` runs, the
contenders' runs interleaved (other work on a shared host only ever adds time, and
interleaving spreads it over both sides); next to the wall time, the best CPU time of
the process (all its threads) over the same runs, which other processes disturb less
on a busy host. Run: ``python bench/raw_cpu_programs.py``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numba
import numpy as np
from numba import njit, prange
from raw_cpu import block_sum_f32

import gompute_core as g
from gompute_core.testing.kernels_raw import BLOCK

B = g.builtins
REPS = 15
TILE = 32


@g.raw_kernel(block=BLOCK)
def bench_for_sum(data: g.GlobalPtr[g.f32], n: g.u64, out: g.GlobalPtr[g.f32]):
    """``raw_cpu.block_sum_f32`` with its grid-stride loop written as a ``for``."""
    s = B.shared_array(g.f32, BLOCK)
    lid = B.local_id(0)
    acc = g.f32(0)
    for i in range(B.global_id(0), n, B.grid_dim(0) * B.block_dim(0)):
        acc += data[i]
    s[lid] = acc
    B.barrier()
    step = B.block_dim(0) // 2
    while step > 0:
        if lid < step:
            s[lid] += s[lid + step]
        B.barrier()
        step //= 2
    if lid == 0:
        out[B.block_id(0)] = s[0]


def cnd(d):
    """The cumulative normal distribution of CuPy's example (Abramowitz-Stegun)."""
    k = g.f32(1) / (g.f32(1) + g.f32(0.2316419) * abs(d))
    c = g.f32(0.3989422804014327) * g.math.exp(-d * d / g.f32(2)) * (
        k * (g.f32(0.31938153) + k * (g.f32(-0.356563782) + k * (
            g.f32(1.781477937) + k * (g.f32(-1.821255978) + k * g.f32(1.330274429))))))
    if d > 0:
        c = 1 - c
    return c


@g.raw_kernel
def bench_black_scholes(s: g.GlobalPtr[g.f32], x: g.GlobalPtr[g.f32],
                        t: g.GlobalPtr[g.f32], call: g.GlobalPtr[g.f32],
                        put: g.GlobalPtr[g.f32], r: g.f32, v: g.f32, n: g.u64):
    i = B.global_id(0)
    if i < n:
        sqrt_t = g.math.sqrt(t[i])
        d1 = (g.math.log(s[i] / x[i]) + (r + v * v / 2) * t[i]) / (v * sqrt_t)
        d2 = d1 - v * sqrt_t
        cnd_d1 = cnd(d1)
        cnd_d2 = cnd(d2)
        exp_rt = g.math.exp(-r * t[i])
        call[i] = s[i] * cnd_d1 - x[i] * exp_rt * cnd_d2
        put[i] = x[i] * exp_rt * (1 - cnd_d2) - s[i] * (1 - cnd_d1)


_NB = dict(error_model="numpy", boundscheck=False)


@njit(inline="always", **_NB)
def numba_cnd(d: np.float32) -> np.float32:
    f = np.float32
    k = f(1) / (f(1) + f(0.2316419) * abs(d))
    c = f(0.3989422804014327) * np.exp(-d * d / f(2)) * (
        k * (f(0.31938153) + k * (f(-0.356563782) + k * (
            f(1.781477937) + k * (f(-1.821255978) + k * f(1.330274429))))))
    if d > 0:
        c = f(1) - c
    return c


@njit(parallel=True, **_NB)
def numba_black_scholes(s: np.ndarray, x: np.ndarray, t: np.ndarray, call: np.ndarray,
                        put: np.ndarray, r: np.float32, v: np.float32) -> None:
    for i in prange(s.shape[0]):
        sqrt_t = np.sqrt(t[i])
        d1 = (np.log(s[i] / x[i]) + (r + v * v / np.float32(2)) * t[i]) / (v * sqrt_t)
        d2 = d1 - v * sqrt_t
        cnd_d1 = numba_cnd(d1)
        cnd_d2 = numba_cnd(d2)
        exp_rt = np.exp(-r * t[i])
        call[i] = s[i] * cnd_d1 - x[i] * exp_rt * cnd_d2
        put[i] = x[i] * exp_rt * (np.float32(1) - cnd_d2) - s[i] * (np.float32(1) - cnd_d1)


@g.raw_kernel(block=(TILE, TILE))
def bench_laplace(src: g.GlobalPtr[g.f32], dst: g.GlobalPtr[g.f32], rows: g.i64,
                  cols: g.i64):
    """5-point Laplacian on the interior (edges copied), a 32 x 32 tile and its one-cell
    halo staged in shared memory (``testing.kernels_raw.raw_stencil`` on bigger tiles)."""
    halo = B.shared_array(g.f32, (TILE + 2, TILE + 2))
    tx = B.local_id(0)
    ty = B.local_id(1)
    x = B.block_id(0) * TILE + tx
    y = B.block_id(1) * TILE + ty
    k = ty * TILE + tx
    while k < (TILE + 2) * (TILE + 2):
        hy = k // (TILE + 2)
        hx = k % (TILE + 2)
        gy = B.block_id(1) * TILE + hy - 1
        gx = B.block_id(0) * TILE + hx - 1
        value = g.f32(0)
        if 0 <= gy < rows and 0 <= gx < cols:
            value = src[gy * cols + gx]
        halo[hy, hx] = value
        k += TILE * TILE
    B.barrier()
    if x < cols and y < rows:
        c = halo[ty + 1, tx + 1]
        if 0 < x < cols - 1 and 0 < y < rows - 1:
            dst[y * cols + x] = (halo[ty, tx + 1] + halo[ty + 2, tx + 1] + halo[ty + 1, tx]
                                 + halo[ty + 1, tx + 2] - g.f32(4) * c)
        else:
            dst[y * cols + x] = c


@njit(parallel=True, **_NB)
def numba_laplace(src: np.ndarray, dst: np.ndarray, rows: int, cols: int) -> None:
    for y in prange(rows):
        for x in range(cols):
            c = src[y * cols + x]
            if 0 < x < cols - 1 and 0 < y < rows - 1:
                dst[y * cols + x] = (src[(y - 1) * cols + x] + src[(y + 1) * cols + x]
                                     + src[y * cols + x - 1] + src[y * cols + x + 1]
                                     - np.float32(4) * c)
            else:
                dst[y * cols + x] = c


class Best:
    """Best wall and CPU seconds of each contender (:func:`interleaved_best`)."""

    def __init__(self, names: list[str]) -> None:
        self.wall = dict.fromkeys(names, float("inf"))
        self.cpu = dict.fromkeys(names, float("inf"))

    def line(self, ours: str, peer: str, target: str) -> str:
        """``ours`` against ``peer``: both times and ratios, wall then CPU."""
        return (f"{peer} {self.wall[peer] * 1e3:.2f} ms, {ours} {self.wall[ours] * 1e3:.2f} ms: "
                f"{self.wall[ours] / self.wall[peer]:.2f}x (CPU {self.cpu[peer] * 1e3:.2f} "
                f"vs {self.cpu[ours] * 1e3:.2f} ms: {self.cpu[ours] / self.cpu[peer]:.2f}x)"
                f"  target {target}")


def interleaved_best(fns: dict[str, Callable[[], object]], reps: int = REPS) -> Best:
    """Best wall and CPU time of each function over ``reps`` rounds, one run of each per
    round (after one warm-up run each)."""
    for fn in fns.values():
        fn()
    best = Best(list(fns))
    for _ in range(reps):
        for name, fn in fns.items():
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            best.wall[name] = min(best.wall[name], time.perf_counter() - t0)
            best.cpu[name] = min(best.cpu[name], time.process_time() - c0)
    return best


def grid_stride(n: int) -> None:
    data = np.random.default_rng(0).uniform(0, 1, n).astype(np.float32)
    loops = {"while": g.RawKernel(block_sum_f32, "cpu"), "for": g.RawKernel(bench_for_sum, "cpu")}
    for grid in (64, 1024):
        outs = {name: np.zeros(grid, np.float32) for name in loops}
        best = interleaved_best({
            name: (lambda k=k, o=outs[name], grid=grid: k.launch(grid, BLOCK, [data, n, o]))
            for name, k in loops.items()})
        assert np.array_equal(outs["for"], outs["while"])
        print(f"  block sum of {n} f32, grid {grid} x {BLOCK}: "
              f"{best.line('for', 'while', '<= 1.2')}")


def black_scholes(n: int) -> None:
    rng = np.random.default_rng(1)
    s = rng.uniform(5, 30, n).astype(np.float32)
    x = rng.uniform(1, 100, n).astype(np.float32)
    t = rng.uniform(0.25, 10, n).astype(np.float32)
    r, v = np.float32(0.02), np.float32(0.3)
    out = [np.empty(n, np.float32) for _ in range(2)]
    raw = g.RawKernel(bench_black_scholes, "cpu")
    grid = -(-n // 256)
    fns = {"numba": lambda: numba_black_scholes(s, x, t, *out, r, v),
           "raw": lambda: raw.launch(grid, 256, [s, x, t, *out, r, v, n])}
    fns["numba"]()
    want = [a.copy() for a in out]
    fns["raw"]()
    for got, peer in zip(out, want, strict=True):
        assert np.array_equal(got, peer)
    best = interleaved_best(fns)
    print(f"  Black-Scholes, {n} f32 options: {best.line('raw', 'numba', '<= 1.1')}")


def laplace(rows: int, cols: int) -> None:
    src = np.random.default_rng(2).standard_normal(rows * cols).astype(np.float32)
    dst = np.empty_like(src)
    raw = g.RawKernel(bench_laplace, "cpu")
    grid = (-(-cols // TILE), -(-rows // TILE))
    fns = {"numba": lambda: numba_laplace(src, dst, rows, cols),
           "raw": lambda: raw.launch(grid, (TILE, TILE), [src, dst, rows, cols])}
    fns["numba"]()
    want = dst.copy()
    fns["raw"]()
    assert np.array_equal(dst, want)
    best = interleaved_best(fns)
    print(f"  Laplacian {rows}x{cols} f32, {TILE}x{TILE} tiles: "
          f"{best.line('raw', 'numba', '<= 1.5')}")


def main() -> None:
    all_threads = numba.config.NUMBA_NUM_THREADS
    print(f"ported programs as CPU raw kernels ({all_threads} numba threads available, "
          f"best of {REPS}, interleaved)")
    for threads in sorted({1, all_threads}):
        numba.set_num_threads(threads)
        print(f"\n{threads} thread(s):")
        grid_stride(1 << 24)
        black_scholes(1 << 24)
        laplace(4096, 4096)
    numba.set_num_threads(all_threads)


if __name__ == "__main__":
    sys.exit(main())

"""SGEMM as Gompute raw kernels against CuPy's SGEMM example and cuBLAS, in one run.

* **The port** (``sgemm_port``): CuPy's ``examples/gemm/sgemm.cu`` (MAGMA's kernel; the
  original is ``bench/cupy_examples/sgemm.cu``) line for line in the kernel language:
  column-major ``A`` (M x K), ``B`` (K x N) and ``C`` (M x N), a 16 x 16 block computing
  a 64 x 64 tile of ``C``, ``BLK_K = 4`` columns of ``A`` and rows of ``B`` staged in
  shared memory per step (the next step's prefetched into registers, ``ra``/``rb``), a 4 x 4
  register tile per thread (``rC``, with ``rA``/``rB``: ``g.local_array``), the clamped
  ``fetch`` of the original as ``min(index, bound)``. The original's ``rC[n][m] += rA[m]
  * rB[n]`` is contracted by NVRTC (``--fmad=true``, CuPy's default) into one fused
  multiply-add: the port writes ``g.math.fma`` there, so both give the same bits.
* **The tuned kernel** (``sgemm_tuned``): our own, for row-major ``C = A @ B`` with ``M``
  and ``N`` multiples of 128 and ``K`` of 8: a 16 x 16 block computes a 128 x 128 tile, each
  thread an 8 x 8 register tile on rows ``ty + 16 i`` and columns ``tx + 16 j`` (conflict-free
  shared reads, coalesced stores), ``A`` and ``B`` tiles of depth 8 double-buffered in shared
  memory (``A`` transposed, padded), the next tile prefetched into registers while this one
  is multiplied, one barrier per step, constant loops (unrolled by the GPU compiler).

``--backend cuda`` (a GPU with CuPy; CuPy is imported only there):

* (a) the port against the original compiled through ``cupy.RawKernel`` from the same
  text the example builds (``#define`` lines prepended), same grid, block and
  ``shared_mem`` (the example passes the static arrays' size again as dynamic shared
  memory; so does ours), the same device arrays, timed with CUDA events (median of 20).
  Target: ratio <= 1.0. The two results are compared bit for bit;
* (b) the tuned kernel against ``cupy.matmul`` (cuBLAS SGEMM; CuPy does not use TF32
  unless ``CUPY_TF32=1``) on 4096 x 4096 f32, outputs preallocated. Target: >= 0.6 of
  cuBLAS's speed (the fraction printed is cuBLAS time / ours).

``--backend cpu``: the port (and the tuned kernel) as CPU raw kernels against a numba
i-k-j ``prange`` loop of the same arithmetic: ``C[i, j] = fma(A[i, k], B[k, j], C[i, j])``
for ``k`` ascending, the order every thread of both kernels accumulates in (numba has no
fma: the loop calls the CPU backend's own ``llvm.fma`` intrinsic, the instruction the
kernels compile to). The port's column-major problem runs through the loop as its
transpose (``C.T = B.T A.T`` on C-order views of the same memory), so the loop streams
memory as a row-major i-k-j loop does. Each kernel's result
must equal that loop's bit for bit (the same fma in the same order: the reference is
exact, not a tolerance). Times: best of ``--reps`` runs, contenders interleaved, on
``--threads`` numba threads (default 2). Target: port <= 3x the loop.

Run: ``python bench/sgemm.py --backend cuda`` (under a minute on an H100/H200) or
``python bench/sgemm.py --backend cpu``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]

import gompute_core as g  # noqa: E402

gb = g.builtins

# CuPy's example's default configuration (``sgemm.py``'s keyword defaults).
DIM_X, DIM_Y = 16, 16
BLK_M, BLK_N, BLK_K = 64, 64, 4
DIM_XA, DIM_YA = 64, 4
DIM_XB, DIM_YB = 4, 64
THR_M, THR_N = BLK_M // DIM_X, BLK_N // DIM_Y
SHARED_BYTES = BLK_K * (BLK_M + 1) * 4 + BLK_N * (BLK_K + 1) * 4
"""The example's ``shared_mem`` argument (the static arrays' size, passed again)."""


@g.raw_kernel(block=(DIM_X, DIM_Y), bounds={"A": "M * K", "B": "K * N", "C": "M * N"})
def sgemm_port(M: g.i32, N: g.i32, K: g.i32, A: g.GlobalPtr[g.f32], B: g.GlobalPtr[g.f32],
               C: g.GlobalPtr[g.f32]):
    """CuPy's ``sgemm.cu`` (column-major ``C = A B``), statement for statement."""
    idx = g.i32(gb.local_id(0))
    idy = g.i32(gb.local_id(1))
    idt = DIM_X * idy + idx
    idxA = idt % DIM_XA
    idyA = idt // DIM_XA
    idxB = idt % DIM_XB
    idyB = idt // DIM_XB
    blx = g.i32(gb.block_id(0))
    bly = g.i32(gb.block_id(1))

    sA = gb.shared_array(g.f32, (BLK_K, BLK_M + 1))
    sB = gb.shared_array(g.f32, (BLK_N, BLK_K + 1))

    # registers for the innermost loop
    rC = gb.local_array(g.f32, (THR_N, THR_M))
    rA = gb.local_array(g.f32, THR_M)
    rB = gb.local_array(g.f32, THR_N)
    ra = gb.local_array(g.f32, (BLK_K // DIM_YA, BLK_M // DIM_XA))
    rb = gb.local_array(g.f32, (BLK_N // DIM_YB, BLK_K // DIM_XB))

    # offs_dA / offs_dB: the original's pointers, as offsets into A and B
    offs_dA = blx * BLK_M + idyA * M + idxA
    boundA = (M * (K - 1) + M) - (blx * BLK_M + idyA * M + idxA) - 1
    offs_dB = bly * BLK_N * K + idyB * K + idxB
    boundB = (K * (N - 1) + K) - (bly * BLK_N * K + idyB * K + idxB) - 1

    for n in range(THR_N):
        for m in range(THR_M):
            rC[n, m] = 0

    # blockwise transpose to transpose load (fetch(arr, col, m, n, bound) is
    # arr[min(n * col + m, bound)])
    for n in range(0, BLK_K, DIM_YA):
        for m in range(0, BLK_M, DIM_XA):
            sA[n + idyA, m + idxA] = A[offs_dA + min(n * M + m, boundA)]
    for n in range(0, BLK_N, DIM_YB):
        for m in range(0, BLK_K, DIM_XB):
            sB[n + idyB, m + idxB] = B[offs_dB + min(n * K + m, boundB)]
    gb.barrier()

    kk = g.i32(0)
    while kk < K - BLK_K:
        offs_dA += BLK_K * M
        boundA -= BLK_K * M
        offs_dB += BLK_K
        boundB -= BLK_K

        for n in range(BLK_K // DIM_YA):
            for m in range(BLK_M // DIM_XA):
                ra[n, m] = A[offs_dA + min(n * DIM_YA * M + m * DIM_XA, boundA)]
        for n in range(BLK_N // DIM_YB):
            for m in range(BLK_K // DIM_XB):
                rb[n, m] = B[offs_dB + min(n * DIM_YB * K + m * DIM_XB, boundB)]

        # multiply
        for k in range(BLK_K):
            for m in range(THR_M):
                rA[m] = sA[k, m * DIM_X + idx]
            for n in range(THR_N):
                rB[n] = sB[n * DIM_Y + idy, k]
            for n in range(THR_N):
                for m in range(THR_M):
                    rC[n, m] = g.math.fma(rA[m], rB[n], rC[n, m])
        gb.barrier()

        # store A regs->smem
        for n in range(BLK_K // DIM_YA):
            for m in range(BLK_M // DIM_XA):
                sA[n * DIM_YA + idyA, m * DIM_XA + idxA] = ra[n, m]
        for n in range(BLK_N // DIM_YB):
            for m in range(BLK_K // DIM_XB):
                sB[n * DIM_YB + idyB, m * DIM_XB + idxB] = rb[n, m]
        gb.barrier()
        kk += BLK_K

    # the last full (BLK_K) or partial block of columns of A and rows of B
    kk = K - kk
    for k in range(kk):
        for m in range(THR_M):
            rA[m] = sA[k, m * DIM_X + idx]
        for n in range(THR_N):
            rB[n] = sB[n * DIM_Y + idy, k]
        for n in range(THR_N):
            for m in range(THR_M):
                rC[n, m] = g.math.fma(rA[m], rB[n], rC[n, m])

    for n in range(THR_N):
        coord_dCn = bly * BLK_N + n * DIM_Y + idy
        for m in range(THR_M):
            coord_dCm = blx * BLK_M + m * DIM_X + idx
            if coord_dCm < M and coord_dCn < N:
                C[coord_dCn * M + coord_dCm] = rC[n, m]


TB = 16
"""The tuned kernel's block is TB x TB threads."""
TM = 8
"""Each thread's register tile is TM x TM."""
TILE = TB * TM
"""A block's tile of C is TILE x TILE (128)."""
TK = 8
"""Depth of one step's tiles of A and B."""
LOADS = TILE * TK // (TB * TB)
"""Elements of A (and of B) each thread loads per step (4)."""
PAD = 4
"""Padding of the transposed A tile's rows: the transposing stores hit distinct banks."""


@g.raw_kernel(block=(TB, TB), bounds={"a": "M * K", "b": "K * N", "c": "M * N"})
def sgemm_tuned(M: g.i32, N: g.i32, K: g.i32, a: g.GlobalPtr[g.f32], b: g.GlobalPtr[g.f32],
                c: g.GlobalPtr[g.f32]):
    """Row-major ``c = a @ b``; ``M``, ``N`` multiples of ``TILE``, ``K`` of ``TK``."""
    tx = g.i32(gb.local_id(0))
    ty = g.i32(gb.local_id(1))
    t = ty * TB + tx
    row0 = g.i32(gb.block_id(1)) * TILE
    col0 = g.i32(gb.block_id(0)) * TILE

    sa = gb.shared_array(g.f32, (2 * TK, TILE + PAD))  # two buffers of a[k][m]
    sb = gb.shared_array(g.f32, (2 * TK, TILE))  # two buffers of b[k][n]
    acc = gb.local_array(g.f32, (TM, TM))
    ra = gb.local_array(g.f32, TM)
    rb = gb.local_array(g.f32, TM)
    pa = gb.local_array(g.f32, LOADS)
    pb = gb.local_array(g.f32, LOADS)

    # element q of this thread's share: a's row (t + q*256) // TK, column % TK; b's row
    # (t + q*256) // TILE, column % TILE (consecutive threads, consecutive addresses)
    for q in range(LOADS):
        e = t + q * TB * TB
        sa[e % TK, e // TK] = a[(row0 + e // TK) * K + e % TK]
        sb[e // TILE, e % TILE] = b[(e // TILE) * N + col0 + e % TILE]
    gb.barrier()

    buf = g.i32(0)
    k0 = g.i32(0)
    while k0 < K:
        nxt = k0 + TK
        if nxt < K:
            for q in range(LOADS):
                e = t + q * TB * TB
                pa[q] = a[(row0 + e // TK) * K + nxt + e % TK]
                pb[q] = b[(nxt + e // TILE) * N + col0 + e % TILE]
        for k in range(TK):
            for i in range(TM):
                ra[i] = sa[buf * TK + k, ty + TB * i]
            for j in range(TM):
                rb[j] = sb[buf * TK + k, tx + TB * j]
            for i in range(TM):
                for j in range(TM):
                    acc[i, j] = g.math.fma(ra[i], rb[j], acc[i, j])
        if nxt < K:
            for q in range(LOADS):
                e = t + q * TB * TB
                sa[(1 - buf) * TK + e % TK, e // TK] = pa[q]
                sb[(1 - buf) * TK + e // TILE, e % TILE] = pb[q]
        gb.barrier()
        buf = 1 - buf
        k0 = nxt

    for i in range(TM):
        for j in range(TM):
            c[(row0 + ty + TB * i) * N + col0 + tx + TB * j] = acc[i, j]


def port_launch(m: int, n: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """The example's grid and block for an ``m`` x ``n`` result."""
    return (-(-m // BLK_M), -(-n // BLK_N), 1), (DIM_X, DIM_Y, 1)


def tuned_launch(m: int, n: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """The tuned kernel's grid and block for an ``m`` x ``n`` result (x over columns)."""
    if m % TILE or n % TILE:
        raise ValueError(f"sgemm_tuned needs M and N multiples of {TILE}, not {m} x {n}")
    return (n // TILE, m // TILE, 1), (TB, TB, 1)


def operands(m: int, n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``A`` (m x k) and ``B`` (k x n) uniform in [-1, 1) as the example draws them, f32."""
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, (m, k)).astype(np.float32),
            rng.uniform(-1, 1, (k, n)).astype(np.float32))


def fma_reference() -> Callable[[np.ndarray, np.ndarray, np.ndarray], None]:
    """The numba i-k-j loop ``c[i, j] = fma(a[i, k], b[k, j], c[i, j])``, ``k`` ascending,
    on C-order 2-D arrays, parallel over ``i``: ``run(a, b, c)`` zeroes ``c`` and fills it.
    A column-major problem runs as its transpose, ``run(B.T, A.T, C.T)`` (C-order views):
    ``fma(b, a, c)`` is ``fma(a, b, c)``, so each element gets the same bits."""
    from gompute_cpu.fma import fma_f32
    from numba import njit, prange

    @njit(parallel=True, boundscheck=False, error_model="numpy")
    def ikj(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
        m, kdim = a.shape
        n = b.shape[1]
        for i in prange(m):
            for j in range(n):
                c[i, j] = np.float32(0)
            for k in range(kdim):
                aik = a[i, k]
                for j in range(n):
                    c[i, j] = fma_f32(aik, b[k, j], c[i, j])

    return ikj


def cpu(m: int, n: int, k: int, threads: int, reps: int) -> None:
    import numba

    sys.path.insert(0, HERE)
    from benchkit import interleaved_best

    numba.set_num_threads(threads)
    a, b = operands(m, n, k)
    af, bf = np.asfortranarray(a), np.asfortranarray(b)
    flat_a, flat_b = af.ravel(order="F"), bf.ravel(order="F")  # views: column-major memory
    c_port = np.empty(m * n, np.float32)
    c_loop_f = np.empty((m, n), np.float32, order="F")
    port = g.RawKernel(sgemm_port, "cpu")
    grid, block = port_launch(m, n)
    args = [np.int32(m), np.int32(n), np.int32(k), flat_a, flat_b, c_port]
    loop = fma_reference()
    fns: dict[str, Callable[[], Any]] = {
        "numba loop": lambda: loop(bf.T, af.T, c_loop_f.T),
        "port": lambda: (port.launch(grid, block, args), port.synchronize())}
    tuned = m % TILE == 0 and n % TILE == 0 and k % TK == 0
    if tuned:
        c_tuned = np.empty(m * n, np.float32)
        c_loop_c = np.empty((m, n), np.float32)
        kt = g.RawKernel(sgemm_tuned, "cpu")
        tgrid, tblock = tuned_launch(m, n)
        targs = [np.int32(m), np.int32(n), np.int32(k), a.ravel(), b.ravel(), c_tuned]
        fns["numba loop (row-major)"] = lambda: loop(a, b, c_loop_c)
        fns["tuned"] = lambda: (kt.launch(tgrid, tblock, targs), kt.synchronize())
    best = interleaved_best(fns, reps)
    same_port = np.array_equal(c_port, c_loop_f.ravel(order="F"))
    err = float(np.max(np.abs(c_loop_f - a.astype(np.float64) @ b.astype(np.float64))))
    print(f"cpu, {threads} numba threads, M={m} N={n} K={k} f32, best of {reps} "
          f"(interleaved); reference vs float64 matmul: max abs difference {err:.2e}")
    gflops = 2 * m * n * k * 1e-9
    print(f"  port (CuPy's sgemm.cu, column-major): {best['port'] * 1e3:.1f} ms "
          f"({gflops / best['port']:.2f} GFLOP/s), numba fma loop "
          f"{best['numba loop'] * 1e3:.1f} ms ({gflops / best['numba loop']:.2f} GFLOP/s): "
          f"ratio {best['port'] / best['numba loop']:.2f} (target <= 3); bit-identical to "
          f"the fma loop: {same_port}")
    if tuned:
        same_tuned = np.array_equal(c_tuned, c_loop_c.ravel())
        print(f"  tuned (row-major, 128x128 tiles): {best['tuned'] * 1e3:.1f} ms "
              f"({gflops / best['tuned']:.2f} GFLOP/s), numba fma loop (row-major i-k-j) "
              f"{best['numba loop (row-major)'] * 1e3:.1f} ms: ratio "
              f"{best['tuned'] / best['numba loop (row-major)']:.2f}; bit-identical to the "
              f"fma loop: {same_tuned}")
    if not same_port or (tuned and not same_tuned):
        raise SystemExit("a kernel's result differs from the fma reference")


def cupy_source() -> str:
    """The example's kernel text as its ``utils.read_code`` builds it: each configuration
    ``#define`` prepended to ``sgemm.cu``."""
    config = {"DIM_X": DIM_X, "DIM_Y": DIM_Y, "BLK_M": BLK_M, "BLK_N": BLK_N, "BLK_K": BLK_K,
              "DIM_XA": DIM_XA, "DIM_YA": DIM_YA, "DIM_XB": DIM_XB, "DIM_YB": DIM_YB,
              "THR_M": THR_M, "THR_N": THR_N}
    with open(os.path.join(HERE, "cupy_examples", "sgemm.cu")) as f:
        code = f.read()
    for key, value in config.items():
        code = f"#define {key} {value}\n" + code
    return code


def cuda_port(cp: Any, m: int, n: int, k: int, reps: int) -> None:
    """(a): the port against the original, same launch, same arrays."""
    from benchkit import cupy_events_median

    a, b = (cp.asfortranarray(cp.asarray(x)) for x in operands(m, n, k))
    flat_a, flat_b = a.ravel(order="F"), b.ravel(order="F")  # views of the F-order memory
    c_cp = cp.empty((m, n), cp.float32, order="F")
    c_ours = cp.empty(m * n, cp.float32)
    kern = cp.RawKernel(cupy_source(), "sgemm")
    grid, block = port_launch(m, n)
    port = g.RawKernel(sgemm_port, "cuda")
    bufs = [g.as_buffer(x, "cuda") for x in (flat_a, flat_b, c_ours)]
    args = [np.int32(m), np.int32(n), np.int32(k), *bufs]
    t_cp = cupy_events_median(cp, lambda: kern(grid, block, (np.int32(m), np.int32(n),
                                                             np.int32(k), a, b, c_cp),
                                               shared_mem=SHARED_BYTES), reps=reps)
    t_ours = cupy_events_median(cp, lambda: port.launch(grid, block, args,
                                                        shared_bytes=SHARED_BYTES), reps=reps)
    t_cp2 = cupy_events_median(cp, lambda: kern(grid, block, (np.int32(m), np.int32(n),
                                                              np.int32(k), a, b, c_cp),
                                                shared_mem=SHARED_BYTES), reps=reps)
    port.synchronize()
    t_cp = min(t_cp, t_cp2)  # CuPy timed before and after ours: the better of the two
    same = bool(cp.array_equal(c_ours, c_cp.ravel(order="F")))
    err = float(cp.max(cp.abs(c_cp - cp.matmul(a, b))))
    tflops = 2 * m * n * k * 1e-12
    print(f"  (a) port vs CuPy's sgemm.cu, M={m} N={n} K={k}: ours {t_ours * 1e3:.3f} ms "
          f"({tflops / t_ours:.1f} TFLOP/s), original {t_cp * 1e3:.3f} ms "
          f"({tflops / t_cp:.1f} TFLOP/s): ratio {t_ours / t_cp:.3f} (target <= 1.0); "
          f"bit-identical: {same}; original vs cupy.matmul max abs {err:.2e}")
    if not same:
        diff = float(cp.max(cp.abs(c_ours - c_cp.ravel(order="F"))))
        print(f"      port vs original max abs difference {diff:.2e}")


def cuda_tuned(cp: Any, size: int, reps: int) -> None:
    """(b): the tuned kernel against cuBLAS through ``cupy.matmul``."""
    from benchkit import cupy_events_median

    a, b = (cp.asarray(x) for x in operands(size, size, size, seed=1))
    c_cp = cp.empty((size, size), cp.float32)
    c_ours = cp.empty((size, size), cp.float32)
    kt = g.RawKernel(sgemm_tuned, "cuda")
    grid, block = tuned_launch(size, size)
    bufs = [g.as_buffer(x.ravel(), "cuda") for x in (a, b, c_ours)]
    args = [np.int32(size), np.int32(size), np.int32(size), *bufs]
    t_cp = cupy_events_median(cp, lambda: cp.matmul(a, b, out=c_cp), reps=reps)
    t_ours = cupy_events_median(cp, lambda: kt.launch(grid, block, args), reps=reps)
    t_cp2 = cupy_events_median(cp, lambda: cp.matmul(a, b, out=c_cp), reps=reps)
    kt.synchronize()
    t_cp = min(t_cp, t_cp2)
    rel = float(cp.max(cp.abs(c_ours - c_cp)) / cp.max(cp.abs(c_cp)))
    tflops = 2 * size ** 3 * 1e-12
    print(f"  (b) tuned vs cupy.matmul (cuBLAS), {size}x{size} f32: ours {t_ours * 1e3:.3f} ms "
          f"({tflops / t_ours:.1f} TFLOP/s), cuBLAS {t_cp * 1e3:.3f} ms "
          f"({tflops / t_cp:.1f} TFLOP/s): fraction of cuBLAS {t_cp / t_ours:.3f} "
          f"(target >= 0.6); max difference / max |C| {rel:.2e}")


def cuda(m: int, n: int, k: int, size: int, reps: int) -> None:
    import cupy as cp

    sys.path.insert(0, HERE)
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"cuda ({dev}), CUDA events, median of {reps}; CUPY_TF32="
          f"{os.environ.get('CUPY_TF32', 'unset')}")
    cuda_port(cp, m, n, k, reps)
    cuda_port(cp, size, size, size, reps)
    cuda_tuned(cp, size, reps)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--m", type=int, default=None, help="rows of A and C (cpu 512, cuda 1234)")
    ap.add_argument("--n", type=int, default=None, help="columns of B and C (cpu 512, cuda 1376)")
    ap.add_argument("--k", type=int, default=None, help="the inner size (cpu 512, cuda 2345)")
    ap.add_argument("--size", type=int, default=4096, help="cuda: the square size of (b)")
    ap.add_argument("--threads", type=int, default=2, help="cpu: numba threads")
    ap.add_argument("--reps", type=int, default=None, help="timed runs (cpu 5, cuda 20)")
    args = ap.parse_args()
    if args.backend == "cuda":
        cuda(args.m or 1234, args.n or 1376, args.k or 2345, args.size, args.reps or 20)
    else:
        cpu(args.m or 512, args.n or 512, args.k or 512, args.threads, args.reps or 5)


if __name__ == "__main__":
    main()

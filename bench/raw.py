"""Raw kernels on CUDA against their peers, in the same run (issue 9's numbers).

* block reduction, 2**28 f32: four accumulators per thread, then a shared-memory tree (one
  partial per block, then a second launch folding the partials) against CuPy ``sum`` —
  bandwidth ratio (target >= 0.9);
* tiled transpose 16384 x 16384 f32 against a hand-written CUDA C tiled transpose run
  through CuPy's ``RawKernel`` (target >= 0.95), with a device copy and CuPy's
  ``ascontiguousarray(a.T)`` for scale;
* 256-bin histogram of 2**28 u8 values against a hand-written CUDA C shared-memory
  histogram through CuPy's ``RawKernel`` (target >= 0.9), and CuPy ``bincount``;
* raw launch host overhead: ``RawKernel.launch`` of a 3-argument kernel against pycuda's
  ``prepared_async_call`` (target <= 1.0x) and CuPy's ``RawKernel`` (target: below), with
  the floor for scale: ``cuLaunchKernel`` called through ctypes with nothing checked.

Run: ``python bench/raw.py`` on a CUDA machine (CuPy and pycuda installed).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable

from benchkit import cupy_events_median, events_median

# bench/cuda.py would shadow CuPy's ``cuda`` package: drop bench/ from the path once benchkit
# is imported
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(
    os.path.abspath(__file__))]

import numpy as np  # noqa: E402

import gompute_core as g  # noqa: E402

B = g.builtins
BLOCK = 256
TILE = 32
ROWS_PER = 8


@g.raw_kernel(block=BLOCK)
def bench_block_sum(data: g.GlobalPtr[g.f32], n: g.i64, out: g.GlobalPtr[g.f32]):
    """Four loads in flight per thread (four accumulators), then a shared-memory tree.

    Integer arithmetic wraps in the kernel language (as in NumPy), so the compiler may not
    assume ``i += stride`` never overflows and cannot unroll a grid-stride loop itself, as
    it does for CUDA C's signed (overflow-undefined) counter: the single-accumulator loop
    reaches 0.58x CuPy ``sum`` on an H200, this one 1.0x
    (``bench/results/raw-sum-variants-launch-pieces-2026-12-01-h200.log``)."""
    s = B.shared_array(g.f32, BLOCK)
    lid = B.local_id(0)
    a0 = g.f32(0)
    a1 = g.f32(0)
    a2 = g.f32(0)
    a3 = g.f32(0)
    i = B.global_id(0)
    stride = B.grid_dim(0) * BLOCK
    while i + 3 * stride < n:
        a0 += data[i]
        a1 += data[i + stride]
        a2 += data[i + 2 * stride]
        a3 += data[i + 3 * stride]
        i += 4 * stride
    while i < n:
        a0 += data[i]
        i += stride
    s[lid] = (a0 + a1) + (a2 + a3)
    B.barrier()
    step = BLOCK // 2
    while step > 0:
        if lid < step:
            s[lid] += s[lid + step]
        B.barrier()
        step //= 2
    if lid == 0:
        out[B.block_id(0)] = s[0]


@g.raw_kernel(block=(TILE, ROWS_PER))
def bench_transpose(src: g.GlobalPtr[g.f32], dst: g.GlobalPtr[g.f32], rows: g.i64,
                    cols: g.i64):
    tile = B.shared_array(g.f32, (TILE, TILE + 1))
    tx = B.local_id(0)
    ty = B.local_id(1)
    x = B.block_id(0) * TILE + tx
    y0 = B.block_id(1) * TILE + ty
    for k in range(0, TILE, ROWS_PER):
        if x < cols and y0 + k < rows:
            tile[ty + k, tx] = src[(y0 + k) * cols + x]
    B.barrier()
    ox = B.block_id(1) * TILE + tx
    oy0 = B.block_id(0) * TILE + ty
    for k in range(0, TILE, ROWS_PER):
        if ox < rows and oy0 + k < cols:
            dst[(oy0 + k) * rows + ox] = tile[tx, ty + k]


@g.raw_kernel(block=BLOCK)
def bench_histogram(values: g.GlobalPtr[g.u8], n: g.u64, bins: g.GlobalPtr[g.u32]):
    h = B.shared_array(g.u32, 256)
    lid = B.local_id(0)
    h[lid] = 0
    B.barrier()
    i = B.global_id(0)
    stride = B.grid_dim(0) * BLOCK
    while i < n:
        B.atomic_add(h, values[i], 1)
        i += stride
    B.barrier()
    B.atomic_add(bins, lid, h[lid])


@g.raw_kernel
def bench_tiny(data: g.GlobalPtr[g.f32], n: g.u64, x: g.f32):
    i = B.global_id(0)
    if i < n:
        data[i] = x


CUDA_TRANSPOSE = r"""
extern "C" __global__ void cu_transpose(const float* __restrict__ src, float* __restrict__ dst,
                                        long long rows, long long cols) {
  __shared__ float tile[32][33];
  long long x = blockIdx.x * 32 + threadIdx.x, y0 = blockIdx.y * 32 + threadIdx.y;
  for (int k = 0; k < 32; k += 8)
    if (x < cols && y0 + k < rows) tile[threadIdx.y + k][threadIdx.x] = src[(y0 + k) * cols + x];
  __syncthreads();
  long long ox = blockIdx.y * 32 + threadIdx.x, oy0 = blockIdx.x * 32 + threadIdx.y;
  for (int k = 0; k < 32; k += 8)
    if (ox < rows && oy0 + k < cols)
      dst[(oy0 + k) * rows + ox] = tile[threadIdx.x][threadIdx.y + k];
}
"""

CUDA_HISTOGRAM = r"""
extern "C" __global__ void cu_histogram(const unsigned char* __restrict__ v, unsigned long long n,
                                        unsigned int* __restrict__ bins) {
  __shared__ unsigned int h[256];
  h[threadIdx.x] = 0;
  __syncthreads();
  for (unsigned long long i = blockIdx.x * 256ull + threadIdx.x; i < n; i += gridDim.x * 256ull)
    atomicAdd(&h[v[i]], 1u);
  __syncthreads();
  atomicAdd(&bins[threadIdx.x], h[threadIdx.x]);
}
"""

CUDA_TINY = r"""
extern "C" __global__ void cu_tiny(float* data, unsigned long long n, float x) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) data[i] = x;
}
"""


def ratio_line(what: str, ours: float, peer: float, peer_name: str, target: str) -> str:
    """One table row: our number, the peer's, their ratio and the target."""
    return f"| {what} | {ours:,.1f} | {peer:,.1f} ({peer_name}) | {ours / peer:.3f} | {target} |"


def main() -> None:
    """Run every measurement and print the table."""
    import cupy as cp

    dev_name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"# Raw kernels on CUDA, {time.strftime('%Y-%m-%d')}, {dev_name}\n")
    print("| measure | gompute | peer | ratio | target |\n|---|---|---|---|---|")

    # --- block reduction -------------------------------------------------------------
    n = 1 << 28
    raw = g.RawKernel(bench_block_sum, "cuda")
    dev = raw.device
    host = np.random.default_rng(1).random(n, dtype=np.float32)
    data = raw.alloc(n, g.f32)
    data.upload(host)
    blocks = dev.sm_count * (dev.max_threads_per_sm // BLOCK) * 2  # two full waves
    partials = raw.alloc(blocks, g.f32)
    total = raw.alloc(1, g.f32)

    def ours_sum() -> None:
        raw.launch(blocks, BLOCK, [data, n, partials])
        raw.launch(1, BLOCK, [partials, blocks, total])

    t_ours = events_median(dev, ours_sum)
    got = np.empty(1, np.float32)
    total.download(got)
    xs = cp.asarray(host)
    t_cp = cupy_events_median(cp, lambda: xs.sum())
    want = float(cp.asnumpy(xs.sum()))
    assert abs(got[0] - want) <= 1e-3 * abs(want), (got[0], want)
    gbs = lambda t: n * 4 / t / 1e9  # noqa: E731
    print(ratio_line("block sum 2**28 f32, GB/s", gbs(t_ours), gbs(t_cp), "CuPy sum", ">= 0.9"))

    # --- transpose ---------------------------------------------------------------------
    side = 16384
    tr = g.RawKernel(bench_transpose, "cuda")
    a = cp.random.random((side, side), dtype=cp.float32)
    out = cp.empty_like(a)
    src, dst = g.as_buffer(a), g.as_buffer(out)
    grid = g.Dim3(side // TILE, side // TILE)
    t_tr = events_median(dev, lambda: tr.launch(grid, (TILE, ROWS_PER), [src, dst, side, side]))
    assert bool((out == a.T).all())
    cu_tr = cp.RawKernel(CUDA_TRANSPOSE, "cu_transpose")
    out2 = cp.empty_like(a)
    t_cu = cupy_events_median(cp, lambda: cu_tr((side // TILE, side // TILE), (TILE, ROWS_PER),
                                                (a, out2, np.int64(side), np.int64(side))))
    copy = cp.empty_like(a)
    t_copy = cupy_events_median(cp, lambda: copy.__setitem__(Ellipsis, a))
    t_asc = cupy_events_median(cp, lambda: cp.ascontiguousarray(a.T))
    gb = lambda t: 2 * side * side * 4 / t / 1e9  # noqa: E731
    print(ratio_line("transpose 16384^2 f32, GB/s", gb(t_tr), gb(t_cu), "CUDA C via CuPy "
                     "RawKernel", ">= 0.95"))
    print(f"| (scale) device copy {gb(t_copy):,.1f} GB/s; ours/copy {t_copy / t_tr:.3f}; "
          f"CuPy ascontiguousarray(a.T) {gb(t_asc):,.1f} GB/s | | | | |")

    # --- histogram ---------------------------------------------------------------------
    hist = g.RawKernel(bench_histogram, "cuda")
    vals = cp.random.randint(0, 256, n, dtype=cp.uint8)
    bins = cp.zeros(256, cp.uint32)
    vb, bb = g.as_buffer(vals), g.as_buffer(bins)
    hblocks = dev.sm_count * 8
    t_h = events_median(dev, lambda: hist.launch(hblocks, BLOCK, [vb, np.uint64(n), bb]))
    bins[...] = 0
    hist.launch(hblocks, BLOCK, [vb, np.uint64(n), bb])
    hist.synchronize()
    assert bool((bins == cp.bincount(vals, minlength=256).astype(cp.uint32)).all())
    cu_h = cp.RawKernel(CUDA_HISTOGRAM, "cu_histogram")
    bins2 = cp.zeros(256, cp.uint32)
    t_ch = cupy_events_median(cp, lambda: cu_h((hblocks,), (BLOCK,),
                                               (vals, np.uint64(n), bins2)))
    t_bc = cupy_events_median(cp, lambda: cp.bincount(vals, minlength=256))
    gv = lambda t: n / t / 1e9  # noqa: E731
    print(ratio_line("histogram 2**28 u8, Gvalues/s", gv(t_h), gv(t_ch), "CUDA C via CuPy "
                     "RawKernel", ">= 0.9"))
    print(f"| (scale) CuPy bincount {gv(t_bc):,.2f} Gvalues/s; ours/bincount "
          f"{t_bc / t_h:.1f}x | | | | |")

    # --- launch overhead ----------------------------------------------------------------
    tiny = g.RawKernel(bench_tiny, "cuda")
    nt = 256
    buf = tiny.alloc(nt, g.f32)
    args = [buf, np.uint64(nt), np.float32(2)]
    reps = 20000

    def per_launch(fn: Callable[[], object]) -> float:
        samples = []
        for _ in range(5):
            dev.synchronize()
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            samples.append((time.perf_counter() - t0) / reps)
            dev.synchronize()
        return statistics.median(samples) * 1e6

    t_launch = per_launch(lambda: tiny.launch(1, 256, args))
    import pycuda.driver as drv
    from pycuda.compiler import SourceModule

    drv.init()  # the pycuda peer runs in the device's primary context, the one ours runs in
    peer_context = drv.Device(tiny.device.ordinal).retain_primary_context()
    peer_context.push()
    mod = SourceModule(CUDA_TINY, no_extern_c=True)
    fn = mod.get_function("cu_tiny")
    fn.prepare("PQf")
    stream = drv.Stream()
    t_pycuda = per_launch(lambda: fn.prepared_async_call((1, 1), (256, 1, 1), stream, buf.addr,
                                                         nt, 2.0))
    cu_tiny = cp.RawKernel(CUDA_TINY, "cu_tiny")
    carr = cp.empty(nt, cp.float32)
    t_cupy = per_launch(lambda: cu_tiny((1,), (256,), (carr, np.uint64(nt), np.float32(2))))
    print(f"| raw launch host overhead, us | {t_launch:.2f} | {t_pycuda:.2f} (pycuda "
          f"prepared_async_call) | {t_launch / t_pycuda:.3f} | <= 1.0 |")
    print(f"| raw launch host overhead, us | {t_launch:.2f} | {t_cupy:.2f} (CuPy RawKernel) | "
          f"{t_launch / t_cupy:.3f} | < 1.0 |")
    launcher = tiny._launcher  # the GpuLauncher RawKernel calls
    cu_launch, cfn, extra, cstream = (launcher._launch, launcher._fn, launcher._extra_ptr,
                                      tiny.device.stream.handle)
    t_floor = per_launch(lambda: cu_launch(cfn, 1, 1, 1, 256, 1, 1, 0, cstream, None, extra))
    print(f"| (scale) bare cuLaunchKernel via ctypes, nothing checked: {t_floor:.2f} us; our "
          f"checks and dispatch {t_launch - t_floor:.2f} us | | | | |")
    peer_context.pop()


if __name__ == "__main__":
    main()

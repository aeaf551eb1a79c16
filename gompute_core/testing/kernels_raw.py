"""The raw kernels of the conformance suite's ``raw`` tier, with the NumPy oracles that
are more than one NumPy call (used by :mod:`gompute_core.testing.test_raw` and by the
repository's C-family renderer tests, ``tests/raw_examples.py``).

Module-level definitions: raw kernels register their names at definition, like specs.
"""

from __future__ import annotations

import numpy as np

import gompute_core as g

from ..raw.kernel import RawKernelDef
from .kernels import COEF
from .kernels_params import composed, fused_pipeline

B = g.builtins

BLOCK = 256
TILE = 16
SCAN_BLOCK = 128


@g.raw_kernel(block=BLOCK, bounds={"data": "n"})
def raw_add(data: g.GlobalPtr[g.f32], n: g.u64):
    """The seed's example: one added to every element."""
    i = B.global_id(0)
    if i < n:
        data[i] += 1


@g.raw_kernel(bounds={"data": "n"})
def raw_scale(data: g.GlobalPtr[g.f32], n: g.u64, factor: g.f32):
    """Multiply in place; any block shape (none declared); early return past the end."""
    i = B.global_id(0)
    if i >= n:
        return
    data[i] = data[i] * factor


def block_sum_kernel(T: type, name: str) -> RawKernelDef:
    """The block sum over element type ``T``, registered as ``name``: one partial per
    block, a grid-stride accumulation, then a shared-memory tree."""

    @g.raw_kernel(name=name, block=BLOCK)
    def block_sum(data: g.GlobalPtr[T], n: g.u64, out: g.GlobalPtr[T]):
        s = B.shared_array(T, BLOCK)
        lid = B.local_id(0)
        acc = T(0)
        i = B.global_id(0)
        stride = B.grid_dim(0) * B.block_dim(0)
        while i < n:
            acc += data[i]
            i += stride
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

    return block_sum


raw_block_sum = block_sum_kernel(g.i32, "raw_block_sum")


def block_sum_oracle(data: np.ndarray, blocks: int) -> np.ndarray:
    """``raw_block_sum``'s partials over ``blocks`` blocks (int64): block b sums the
    grid-stride elements its threads visit."""
    ids = np.arange(data.size) % (blocks * BLOCK) // BLOCK
    return np.bincount(ids, weights=data.astype(np.int64), minlength=blocks).astype(np.int64)


@g.raw_kernel(block=SCAN_BLOCK)
def raw_block_scan(data: g.GlobalPtr[g.i32], n: g.u64, out: g.GlobalPtr[g.i32]):
    """Inclusive scan of each block's elements (Hillis-Steele): a value read before a
    barrier is written after it, so it lives across the barrier in every thread."""
    s = B.shared_array(g.i32, SCAN_BLOCK)
    lid = B.local_id(0)
    i = B.global_id(0)
    v = g.i32(0)
    if i < n:
        v = data[i]
    s[lid] = v
    B.barrier()
    offset = 1
    while offset < B.block_dim(0):
        add = g.i32(0)
        if lid >= offset:
            add = s[lid - offset]
        B.barrier()
        s[lid] += add
        B.barrier()
        offset *= 2
    if i < n:
        out[i] = s[lid]


def block_scan_oracle(data: np.ndarray) -> np.ndarray:
    """``raw_block_scan``: the inclusive int32 scan of each block's elements."""
    return np.concatenate([np.cumsum(data[k:k + SCAN_BLOCK], dtype=np.int32)
                           for k in range(0, data.size, SCAN_BLOCK)])


@g.raw_kernel(block=(TILE, TILE))
def raw_transpose(src: g.GlobalPtr[g.f32], dst: g.GlobalPtr[g.f32], rows: g.i64,
                  cols: g.i64):
    """``dst (cols x rows) = src (rows x cols).T`` through a padded shared tile."""
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


@g.raw_kernel(block=(TILE, TILE))
def raw_stencil(src: g.GlobalPtr[g.f32], dst: g.GlobalPtr[g.f32], rows: g.i64, cols: g.i64):
    """5-point Laplacian on the interior (edges copied) with a shared halo of one cell."""
    halo = B.shared_array(g.f32, (TILE + 2, TILE + 2))
    tx = B.local_id(0)
    ty = B.local_id(1)
    x = B.block_id(0) * TILE + tx
    y = B.block_id(1) * TILE + ty
    # fill the (TILE+2)^2 halo tile cooperatively: each thread loads up to two cells
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


def stencil_oracle(a: np.ndarray) -> np.ndarray:
    """``raw_stencil`` on the (rows, cols) float32 array ``a``: the same f32 operations in
    the same order on the interior (equal bit for bit), the edges copied."""
    want = a.copy()
    if a.shape[0] > 2 and a.shape[1] > 2:
        want[1:-1, 1:-1] = (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:]
                            - np.float32(4) * a[1:-1, 1:-1])
    return want


@g.raw_kernel(block=BLOCK)
def raw_histogram(values: g.GlobalPtr[g.u8], n: g.u64, bins: g.GlobalPtr[g.u32]):
    """256 bins: shared-memory atomics per block, then one global atomic per bin."""
    h = B.shared_array(g.u32, 256)
    lid = B.local_id(0)
    for k in range(lid, 256, B.block_dim(0)):
        h[k] = 0
    B.barrier()
    i = B.global_id(0)
    stride = B.grid_dim(0) * B.block_dim(0)
    while i < n:
        B.atomic_add(h, values[i], 1)
        i += stride
    B.barrier()
    for k in range(lid, 256, B.block_dim(0)):
        if h[k] != 0:
            B.atomic_add(bins, k, h[k])


@g.raw_kernel
def raw_cas_max(values: g.GlobalPtr[g.f32], n: g.u64, result: g.GlobalPtr[g.f32]):
    """A float maximum through compare-and-swap (lock-free: no thread ever waits on
    another, a failed swap retries with the value that won)."""
    i = B.global_id(0)
    if i < n:
        v = values[i]
        old = result[0]
        while v > old:
            seen = B.atomic_cas(result, 0, old, v)
            if seen == old:
                break
            old = seen


@g.raw_kernel
def raw_atomic_ops(values: g.GlobalPtr[g.i32], n: g.u64, acc: g.GlobalPtr[g.i32],
                   facc: g.GlobalPtr[g.f32], uacc: g.GlobalPtr[g.u64]):
    """Every atomic op on global memory: i32 add/sub/min/max, f32 add/min/max, u64 add,
    and exch (whose final value must be one of the values written)."""
    i = B.global_id(0)
    if i < n:
        v = values[i]
        B.atomic_add(acc, 0, v)
        B.atomic_sub(acc, 1, v)
        B.atomic_min(acc, 2, v)
        B.atomic_max(acc, 3, v)
        B.atomic_exch(acc, 4, v)
        B.atomic_add(facc, 0, g.f32(v & 255))
        B.atomic_min(facc, 1, g.f32(v))
        B.atomic_max(facc, 2, g.f32(v))
        B.atomic_add(uacc, 0, g.u64(v & 0xFFFF))


def atomic_ops_start() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``acc``, ``facc`` and ``uacc`` arrays ``raw_atomic_ops`` starts from (min and
    max slots at the type's other end, so every value competes)."""
    return (np.array([5, 5, 2**31 - 1, -2**31, 0], np.int32),
            np.array([0, np.inf, -np.inf], np.float32), np.array([3], np.uint64))


def check_atomic_ops(values: np.ndarray, acc: np.ndarray, facc: np.ndarray,
                     uacc: np.ndarray) -> None:
    """Assert that ``raw_atomic_ops`` over ``values`` turned :func:`atomic_ops_start`'s
    arrays into ``acc``, ``facc`` and ``uacc``."""
    with np.errstate(over="ignore"):
        total = np.int32(5) + values.sum(dtype=np.int32)
        neg = np.int32(5) - values.sum(dtype=np.int32)
    assert acc[0] == total and acc[1] == neg
    assert acc[2] == values.min() and acc[3] == values.max()
    assert acc[4] in set(values.tolist())
    assert facc[0] == np.float32((values & 255).sum())
    assert facc[1] == values.astype(np.float32).min()
    assert facc[2] == values.astype(np.float32).max()
    assert uacc[0] == 3 + int((values.astype(np.int64) & 0xFFFF).sum())


@g.raw_kernel
def raw_index3d(out: g.GlobalPtr[g.i64], nx: g.i64, ny: g.i64, nz: g.i64):
    """3-D geometry: every thread of a 3-D grid writes its coordinates' code and the launch
    shape (through block_dim and grid_dim) into its own cell."""
    x = B.global_id(0)
    y = B.global_id(1)
    z = B.global_id(2)
    if x < nx and y < ny and z < nz:
        shape = (B.block_dim(0) * 1000000 + B.block_dim(1) * 10000 + B.block_dim(2) * 100
                 + B.grid_dim(0) + B.grid_dim(1) + B.grid_dim(2))
        out[(z * ny + y) * nx + x] = x + 1000 * y + 1000000 * z + shape * 1000000000


@g.raw_kernel
def raw_tally(total: g.GlobalPtr[g.i64], add: g.i64):
    """Thread 0 adds ``add`` to ``total[0]``: a launch that ran with another launch's
    arguments leaves two totals wrong (one short, one added twice)."""
    if B.global_id(0) == 0:
        total[0] += add


def index3d_oracle(shape: tuple[int, int, int], block: tuple[int, int, int]) -> np.ndarray:
    """``raw_index3d`` over ``shape`` (nx, ny, nz) launched with ``block`` and the grid
    that covers ``shape``: the flat int64 output."""
    grid = [-(-s // b) for s, b in zip(shape, block, strict=True)]
    nx, ny, nz = shape
    z, y, x = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
    code = block[0] * 1000000 + block[1] * 10000 + block[2] * 100 + sum(grid)
    return (x + 1000 * y + 1000000 * z + code * 1000000000).astype(np.int64).reshape(-1)


COEF_F32 = COEF[np.float32]
"""The params of ``raw_fused``: the conformance params class ``a: f32, b: f32``."""

PIPELINE = fused_pipeline(np.float32)
"""The conformance fusion pipeline over f32, called from ``raw_fused``."""


@g.raw_kernel
def raw_fused(data: g.GlobalPtr[g.f32], n: g.u64, p: COEF_F32):
    """A raw kernel calling a ``g.Fused`` pipeline's ``eval``."""
    i = B.global_id(0)
    if i < n:
        data[i] = PIPELINE.eval(data[i], p)


def fused_oracle(x: np.ndarray, p: object) -> np.ndarray:
    """``raw_fused`` on NumPy scalars, element by element (the pipeline's ops composed)."""
    return np.array([composed(v, p) for v in x], dtype=np.float32)

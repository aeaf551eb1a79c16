"""CPU raw kernels with barriers whose uniform loops and ifs run outside the thread loops
(:mod:`gompute_cpu.interchange`), and indices computed without wraparound casts where their
range is known (:mod:`gompute_cpu.ranges`): which phases move, which values get a slot per
thread, and every result against a NumPy oracle."""

from __future__ import annotations

import numpy as np
import pytest
from gompute_cpu.raw_flat import render_raw_module

import gompute_core as g
from gompute_core.ir import nodes as ir
from gompute_core.workgroup import Leaf, Outer, moved, plan

B = g.builtins
BX, BY = 8, 4
"""The block shape of :func:`tiles`."""


@g.raw_kernel(block=(BX, BY))
def tiles(src: g.GlobalPtr[g.f32], out: g.GlobalPtr[g.f32], flag: g.i32):
    """Per block: a shared tile of 4 x 32, a register tile summed over it in moved loops
    (``acc`` carried across leaves and iterations), a uniform ``if``, a leaf's own
    temporary ``j``, i32 indices."""
    tx = g.i32(B.local_id(0))
    ty = g.i32(B.local_id(1))
    t = ty * BX + tx
    base = g.i32(B.block_id(0)) * 128
    s = B.shared_array(g.f32, (4, 32))
    r = B.local_array(g.f32, 4)
    for q in range(4):
        s[q, t] = src[base + q * 32 + t]
    B.barrier()
    acc = g.f32(0)
    for k in range(4):
        for m in range(4):
            r[m] = s[k, (t + m * 8) % 32]
        if flag > 0:
            for m in range(4):
                acc = g.math.fma(r[m], g.f32(k + 1), acc)
        else:
            acc -= r[k]
    j = g.i32(0)
    for i in range(3):
        j = i * 2
        acc += g.f32(j)
    B.barrier()
    out[base // 4 + t] = acc


def oracle(src: np.ndarray, flag: int, blocks: int) -> np.ndarray:
    """Thread by thread, the kernel's arithmetic in the kernel's order (f32)."""
    out = np.empty(blocks * 32, np.float32)
    for b in range(blocks):
        s = src[b * 128:(b + 1) * 128].reshape(4, 32)
        for t in range(32):
            acc = np.float32(0)
            for k in range(4):
                r = [s[k, (t + m * 8) % 32] for m in range(4)]
                if flag > 0:
                    for m in range(4):  # exact: f64 product and sum, rounded once
                        acc = np.float32(np.float64(r[m]) * (k + 1) + np.float64(acc))
                else:
                    acc = np.float32(acc - r[k])
            for i in range(3):
                acc = np.float32(acc + np.float32(i * 2))
            out[b * 32 + t] = acc
    return out


def test_plan_moves_uniform_loops_and_keeps_crossing_values() -> None:
    p = plan(tiles.lower().functions[-1], "tiles")
    nodes = moved(p)
    assert set(nodes) == {0, 1}  # both phases of the kernel move
    body = nodes[1]
    assert isinstance(body[0], Leaf) and isinstance(body[1], Outer)  # acc = 0; for k
    assert isinstance(body[-1], Outer)  # for i: j = ...; acc += j
    assert "acc" in p.arrays  # read in a later leaf and in later iterations
    assert {"k", "m", "q", "i"}.isdisjoint(p.arrays)  # one scalar per block
    assert "j" not in p.arrays  # assigned before it is read in its leaf


@pytest.mark.parametrize("flag", [1, 0])
@pytest.mark.parametrize("threshold", ["0", str(1 << 40)])
def test_tiles_match_oracle(flag: int, threshold: str, monkeypatch: pytest.MonkeyPatch
                            ) -> None:
    monkeypatch.setenv("GOMPUTE_CPU_PARALLEL_THRESHOLD", threshold)
    blocks = 5
    src = np.random.default_rng(flag).uniform(-1, 1, blocks * 128).astype(np.float32)
    out = np.full(blocks * 32, np.nan, np.float32)
    g.RawKernel(tiles, "cpu").launch((blocks, 1, 1), (BX, BY, 1), [src, out, flag])
    np.testing.assert_array_equal(out, oracle(src, flag, blocks))


@g.raw_kernel(block=(BX, BY))
def tile_mm(a: g.GlobalPtr[g.f32], b: g.GlobalPtr[g.f32], out: g.GlobalPtr[g.f32], steps: g.i32):
    """Per block: a 2 x 2 register tile ``rc`` per thread accumulated from shared operands
    over a moved loop of ``steps`` and a small constant loop (kept in its leaf and
    unrolled: :mod:`gompute_cpu.registers`), the operands staged in ``ra``/``rb``."""
    tx = g.i32(B.local_id(0))
    ty = g.i32(B.local_id(1))
    t = ty * BX + tx
    sa = B.shared_array(g.f32, (4, 2 * BX))
    sb = B.shared_array(g.f32, (4, 2 * BY))
    rc = B.local_array(g.f32, (2, 2))
    ra = B.local_array(g.f32, 2)
    rb = B.local_array(g.f32, 2)
    for q in range(2):
        sa[t // 8, (t % 8) * 2 + q] = a[t * 2 + q]
        if t < 16:
            sb[t // 4, (t % 4) * 2 + q] = b[t * 2 + q]
    B.barrier()
    for i in range(2):
        for j in range(2):
            rc[i, j] = g.f32(i - j)
    for s in range(steps):
        for k in range(4):
            for i in range(2):
                ra[i] = sa[k, tx + BX * i]
            for j in range(2):
                rb[j] = sb[k, ty + BY * j]
            for i in range(2):
                for j in range(2):
                    rc[i, j] = g.math.fma(ra[i], rb[j] + g.f32(s), rc[i, j])
    base = g.i32(B.block_id(0)) * 4 * BX * BY
    for i in range(2):
        for j in range(2):
            out[base + (i * 2 + j) * BX * BY + t] = rc[i, j]


def tile_oracle(a: np.ndarray, b: np.ndarray, steps: int) -> np.ndarray:
    """Thread by thread, :func:`tile_mm`'s arithmetic in its order (f32; one block)."""
    sa = np.empty((4, 2 * BX), np.float32)
    sb = np.empty((4, 2 * BY), np.float32)
    for t in range(BX * BY):
        for q in range(2):
            sa[t // 8, (t % 8) * 2 + q] = a[t * 2 + q]
            if t < 16:
                sb[t // 4, (t % 4) * 2 + q] = b[t * 2 + q]
    out = np.empty(4 * BX * BY, np.float32)
    for ty in range(BY):
        for tx in range(BX):
            rc = np.array([[i - j for j in range(2)] for i in range(2)], np.float32)
            for s in range(steps):
                for k in range(4):
                    for i in range(2):
                        for j in range(2):  # exact: f64 product and sum, rounded once
                            rb = np.float32(sb[k, ty + BY * j] + np.float32(s))
                            rc[i, j] = np.float32(np.float64(sa[k, tx + BX * i]) * np.float64(rb)
                                                  + np.float64(rc[i, j]))
            for i in range(2):
                for j in range(2):
                    out[(i * 2 + j) * BX * BY + ty * BX + tx] = rc[i, j]
    return out


def test_register_tile_loop_stays_in_its_leaf_unrolled() -> None:
    p = plan(tile_mm.lower().functions[-1], "tile_mm")
    nodes = moved(p)
    outer = [n for n in nodes[1] if isinstance(n, Outer)]
    steps = outer[-2]  # for s (the rc = ... init loop moves too: it loads nothing)
    assert isinstance(steps.stmt, ir.ForRange) and steps.stmt.var == "s"
    (leaf,) = steps.body  # for k stays inside the leaf, unrolled with its inner loops
    assert isinstance(leaf, Leaf) and not any(isinstance(s, ir.ForRange) for s in leaf.stmts)
    source = render_raw_module(tile_mm.lower())
    assert "_r_rc_1_1 = _fma_f32(" in source  # the tile in scalars across the leaf


@pytest.mark.parametrize("steps", [0, 1, 3])
def test_register_tile_matches_oracle(steps: int) -> None:
    rng = np.random.default_rng(steps)
    a = rng.uniform(-1, 1, 2 * BX * BY).astype(np.float32)
    b = rng.uniform(-1, 1, 2 * BX * BY).astype(np.float32)
    out = np.full(4 * BX * BY, np.nan, np.float32)
    g.RawKernel(tile_mm, "cpu").launch((1, 1, 1), (BX, BY, 1), [a, b, out, steps])
    np.testing.assert_array_equal(out, tile_oracle(a, b, steps))

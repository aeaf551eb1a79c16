"""The allocation-free path: ``alloc / upload / launch / context.synchronize / download / free``.

Every kind is launched on buffers the test allocates (per role), results are
downloaded and compared with the oracle; reduce partials (one per block) are
folded on the host with the combine, from the identity. A launch over 0
elements must leave the buffers alone; two launches before one synchronize
run in order; ``free`` is idempotent; ``reduce_blocks`` follows the contract.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gompute_core as g

from . import kernels as k
from ._reduce import check_reduce
from ._support import (
    assert_bits,
    cases,
    check_elementwise,
    coef,
    rng_for,
    scalar_oracle,
    values,
)
from .catalogue import Entry, entry

TIER = "launch"
pytestmark = pytest.mark.gompute()

SIZES = (0, 1, 257, 100_003)


def _upload(kern: Any, host: np.ndarray, role: str | None = None) -> Any:
    buf = kern.alloc(max(host.size, 1), role) if role else kern.alloc(max(host.size, 1))
    buf.upload(host)
    return buf


def _download(buf: Any, like: np.ndarray) -> np.ndarray:
    out = np.empty_like(like)
    buf.download(out)
    buf.free()
    buf.free()  # idempotent
    return out


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("e", cases([entry("map_f32"), entry("map_i64"), entry("idx_u8"),
                                     entry("map_bs1_i32")]))
def test_launch_map(e: Entry, n: int, gompute_kernels: Any) -> None:
    """map/map_indexed launched twice before one synchronize: ``f(f(x))`` in order."""
    kern = gompute_kernels.get(e)
    t = e.t()
    rng = rng_for(e.key, "launch", n)
    host = values(t, max(n, 1), rng)
    p = coef(t, rng)
    buf = _upload(kern, host)
    kern.launch(buf, n, p)
    kern.launch(buf, n, p)
    kern.context.synchronize()
    got = _download(buf, host)
    once = scalar_oracle(e.fn, [host[:n]], [p], t, index_arg=e.kind == "map_indexed")
    if n <= 5000:
        twice = scalar_oracle(e.fn, [once], [p], t, index_arg=e.kind == "map_indexed")
        assert_bits(got[:n], twice, context=f"{e.name} launched twice, n={n}")
    else:
        mid = np.empty(n, t)
        mid[:] = once
        check_elementwise(got[:n], e.fn, [mid], [p], t, vectorized=e.kind == "map",
                          index_arg=e.kind == "map_indexed", context=f"{e.name} n={n}")
    assert_bits(got[n:], host[n:], context=f"{e.name}: launch over n={n} wrote past n")


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("e", cases([entry("cast_i64_f64"), entry("zipmix_u8_f32_f64")]))
def test_launch_map_to_zip(e: Entry, n: int, gompute_kernels: Any) -> None:
    """map_to ``(inp, out, n, p)`` and zip ``(a, b, out, n, p)`` on role-typed buffers."""
    kern = gompute_kernels.get(e)
    rng = rng_for(e.key, "launch", n)
    roles = ("In",) if e.kind == "map_to" else ("A", "B")
    ins = [values(e.t(r), max(n, 1), rng) for r in roles]
    tout = e.t("Out")
    sentinel = values(tout, max(n, 1), rng)
    p = coef(tout, rng)
    bufs = [_upload(kern, h, r) for h, r in zip(ins, roles, strict=True)]
    obuf = _upload(kern, sentinel, "Out")
    kern.launch(*bufs, obuf, n, p)
    kern.context.synchronize()
    got = _download(obuf, sentinel)
    for b in bufs:
        b.free()
    want = scalar_oracle(e.fn, [h[:n] for h in ins], [p], tout) if n <= 5000 else None
    if want is not None:
        assert_bits(got[:n], want, context=f"{e.name} n={n}")
    else:
        check_elementwise(got[:n], e.fn, [h[:n] for h in ins], [p], tout, vectorized=True,
                          context=f"{e.name} n={n}")
    assert_bits(got[n:], sentinel[n:], context=f"{e.name}: launch over n={n} wrote past n")


def _fold(e: Entry, kern: Any, partials: np.ndarray) -> Any:
    """Fold partials with the entry's combine from its identity (Python on NumPy scalars)."""
    t = e.t()
    spec = kern.spec
    acc = t(spec.identity)
    combine = e.fn if e.fn is not None else spec.combine
    with np.errstate(all="ignore"):
        for x in partials:
            acc = np.asarray(combine(acc, x)).astype(t)[()]
    return acc


@pytest.mark.parametrize("n", SIZES + (1024 * 256 + 1,))
@pytest.mark.parametrize("e", cases([entry("sum_f32"), entry("rfirst_i64"), entry("max_u16"),
                                     entry("rlast_f64"), entry("sumpre_i32")]))
def test_launch_reduce(e: Entry, n: int, gompute_kernels: Any) -> None:
    """reduce ``(data, n, partials, blocks, p)``: one partial per block, folded by the caller."""
    kern = gompute_kernels.get(e)
    t = e.t()
    rng = rng_for(e.key, "launch", n)
    if e.fn in (k.first_nonzero, k.last_nonzero):
        host = np.zeros(max(n, 1), t)
        if n:
            nz = rng.choice(n, size=min(n, 3), replace=False)
            host[nz] = values(t, nz.size, rng, lo=1, hi=50)
    else:
        host = values(t, max(n, 1), rng, lo=-10, hi=10)
    p = coef(t, rng)
    blocks = kern.reduce_blocks(n)
    assert blocks == min(-(-n // e.block_size), 1024), f"reduce_blocks({n}) = {blocks}"
    dbuf = _upload(kern, host)
    pbuf = kern.alloc(max(blocks, 1))
    kern.launch(dbuf, n, pbuf, blocks, p)
    kern.context.synchronize()
    partials = np.empty(blocks, t)
    if blocks:
        pbuf.download(partials)
    pbuf.free()
    dbuf.free()
    check_reduce(e, _fold(e, kern, partials), host[:n], p, f"{e.name} n={n} blocks={blocks}")


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("e", cases([entry("gather_f32_u32"), entry("scatter_i64_i64")]))
def test_launch_gather_scatter(e: Entry, n: int, gompute_kernels: Any) -> None:
    """gather/scatter ``(src, idx, out, n, bound)``; out-of-range indices skipped."""
    kern = gompute_kernels.get(e)
    t, it = e.t(), e.t("Idx")
    rng = rng_for(e.key, "launch", n)
    bound = 50 if e.kind == "gather" else max(n, 1) + 5
    if e.kind == "gather":
        src = values(t, bound, rng)
        idx = rng.integers(-5, bound + 5, max(n, 1)).astype(it)
        out = values(t, max(n, 1), rng)
    else:
        src = values(t, max(n, 1), rng)
        idx = rng.permutation(max(n, 1) + 10)[: max(n, 1)].astype(it) - it(3)
        out = values(t, bound, rng)
    before = out.copy()
    sbuf, ibuf = _upload(kern, src), _upload(kern, idx, "Idx")
    obuf = _upload(kern, out)
    kern.launch(sbuf, ibuf, obuf, n, bound)
    kern.context.synchronize()
    got = _download(obuf, out)
    sbuf.free()
    ibuf.free()
    want = before.copy()
    ix = idx[:n].astype(np.int64)
    valid = (ix >= 0) & (ix < bound)
    if e.kind == "gather":
        want[:n][valid] = src[ix[valid]]
    else:
        want[ix[valid]] = src[:n][valid]
    assert_bits(got, want, context=f"{e.name} n={n} bound={bound}")


def test_handle_surface(gompute_backend: str) -> None:
    """Context manager, idempotent close, a stream, ``reduce_blocks`` at its cap."""
    spec = entry("sum_i32").spec()
    with g.Kernel(spec, gompute_backend) as kern:
        assert kern.stream is not None
        assert kern.reduce_blocks(0) == 0
        assert kern.reduce_blocks(1) == 1
        assert kern.reduce_blocks(spec.block_size * 5000) == 1024
        data = np.arange(1000, dtype=np.int32)
        assert kern.run(data, coef(np.int32, rng_for("surface"))) == np.int32(499500)
        kern.close()
    kern.close()


def test_partial_upload_download(gompute_kernels: Any) -> None:
    """Buffer transfers are in bytes; ``nbytes`` moves a prefix only."""
    kern = gompute_kernels.get(entry("map_u8"))
    buf = kern.alloc(64)
    buf.upload(np.zeros(64, np.uint8))
    buf.upload(np.arange(64, dtype=np.uint8), 16)
    back = np.full(64, 255, np.uint8)
    buf.download(back, 32)
    buf.free()
    want = np.concatenate([np.arange(16), np.zeros(16), np.full(32, 255)]).astype(np.uint8)
    assert_bits(back, want, context="partial upload/download")


@pytest.mark.parametrize("e", cases([entry("map_f32"), entry("sum_i64"), entry("gather_u8_u16")]))
def test_compile_artifact(e: Entry, gompute_backend: str) -> None:
    """``g.compile`` returns this backend's Artifact for the spec's IR (no device work)."""
    spec = e.spec()
    art = g.compile(spec, gompute_backend)
    assert isinstance(art, g.Artifact)
    assert art.backend == gompute_backend
    assert isinstance(art.image, bytes) and art.image
    assert art.format and art.target and spec.name in art.entry
    assert art.digest in ("", spec.lower().digest())

"""Tier ``raw``: raw kernels (``g.raw_kernel``, ``g.RawKernel``), for backends that list the
``raw`` kind.

Each kernel of :mod:`.kernels_raw` runs against a NumPy oracle: a raw add, a kernel
chosen by name at run time, a shared-memory tree block sum, a block-wide scan, a 2-D
tiled transpose, a 5-point stencil with a shared halo, a 256-bin histogram with shared
then global atomics, a float max by compare-and-swap, every atomic op, 3-D indexing and
a ``g.Fused`` pipeline called from a raw kernel. Then the launch checks: wrong argument
types, counts and block shapes are rejected before the device sees them, and the data
stays untouched.
"""

from __future__ import annotations

import numpy as np
import pytest

import gompute_core as g

from . import kernels_raw as K
from ._support import mark, rng_for

TIER = "raw"
pytestmark = mark(kind="raw")


class RawCache(dict[str, g.RawKernel]):
    """Loaded raw kernels, by name (each compiled once per module), loaded with
    ``checked`` (None: as ``$GOMPUTE_CHECKED`` says; the ``checked`` tier,
    :mod:`.test_checked`, collects this module's tests again with True)."""

    def __init__(self, checked: bool | None = None) -> None:
        super().__init__()
        self.checked = checked


@pytest.fixture(scope="module")
def raws(gompute_backend: str) -> RawCache:
    """The module's loaded raw kernels (checked mode as the environment says)."""
    return RawCache()


def load(raws: RawCache, kernel: object, backend: str) -> g.RawKernel:
    """The kernel loaded on ``backend``, from ``raws`` when it already is."""
    name = kernel.name  # type: ignore[attr-defined]
    if name not in raws:
        raws[name] = g.RawKernel(kernel, backend, checked=raws.checked)
    return raws[name]


def upload(raw: g.RawKernel, host: np.ndarray) -> object:
    """A device buffer of ``host``'s dtype holding ``host``."""
    buf = raw.alloc(host.size, host.dtype.type)
    buf.upload(np.ascontiguousarray(host).reshape(-1))
    return buf


def download(buf: object, count: int, dtype: type) -> np.ndarray:
    """``count`` elements of ``buf``."""
    out = np.empty(count, dtype)
    buf.download(out)  # type: ignore[attr-defined]
    return out


@pytest.mark.parametrize("n", [1, 255, 256, 1000, 70001])
def test_raw_add(raws: RawCache, gompute_backend: str, n: int) -> None:
    """The seed's raw add over ``global_id(0)``, n not a multiple of the block."""
    raw = load(raws, K.raw_add, gompute_backend)
    host = rng_for("raw_add", n).uniform(-100, 100, n).astype(np.float32)
    buf = upload(raw, host)
    raw.launch(g.Dim3.linear(n, K.BLOCK), g.Dim3(K.BLOCK), [buf, np.uint64(n)])
    raw.synchronize()
    np.testing.assert_array_equal(download(buf, n, np.float32), host + np.float32(1))


def test_kernel_chosen_by_name(raws: RawCache, gompute_backend: str) -> None:
    """A name from a config file picks the kernel; an unknown one is ``KernelNotFound`` (a
    ``LookupError``) naming the close match."""
    config = {"op": "raw_scale"}
    raw = g.raw_kernel_by_name(gompute_backend, config["op"])
    assert raw.name == "raw_scale"
    n = 1000
    host = np.arange(n, dtype=np.float32)
    buf = upload(raw, host)
    raw.launch(g.Dim3.linear(n, 64), 64, [buf, np.uint64(n), np.float32(2.5)])
    raw.synchronize()
    np.testing.assert_array_equal(download(buf, n, np.float32), host * np.float32(2.5))
    with pytest.raises(g.KernelNotFound, match="raw_scale") as info:
        g.raw_kernel_by_name(gompute_backend, "raw_scael")
    assert isinstance(info.value, LookupError)


@pytest.mark.parametrize("n,blocks", [(1, 1), (1000, 3), (1 << 18, 40), (12345, 7)])
def test_block_sum(raws: RawCache, gompute_backend: str, n: int, blocks: int) -> None:
    """Shared-memory tree reduction with barriers in a loop: one exact partial per block."""
    raw = load(raws, K.raw_block_sum, gompute_backend)
    host = rng_for("block_sum", n).integers(-1000, 1000, n).astype(np.int32)
    buf = upload(raw, host)
    out = raw.alloc(blocks, g.i32)
    raw.launch(blocks, K.BLOCK, [buf, np.uint64(n), out])
    raw.synchronize()
    partials = download(out, blocks, np.int32)
    np.testing.assert_array_equal(partials.astype(np.int64), K.block_sum_oracle(host, blocks))


@pytest.mark.parametrize("n", [1, 127, 128, 1000, 4099])
def test_block_scan(raws: RawCache, gompute_backend: str, n: int) -> None:
    """Block-wide inclusive scan: values live across barriers in every thread."""
    raw = load(raws, K.raw_block_scan, gompute_backend)
    host = rng_for("scan", n).integers(-50, 50, n).astype(np.int32)
    buf = upload(raw, host)
    out = raw.alloc(n, g.i32)
    raw.launch(g.Dim3.linear(n, K.SCAN_BLOCK), K.SCAN_BLOCK, [buf, np.uint64(n), out])
    raw.synchronize()
    np.testing.assert_array_equal(download(out, n, np.int32), K.block_scan_oracle(host))


@pytest.mark.parametrize("rows,cols", [(16, 16), (100, 75), (1, 300), (257, 33)])
def test_tiled_transpose(raws: RawCache, gompute_backend: str, rows: int, cols: int) -> None:
    """2-D grid and blocks, a padded 2-D shared tile."""
    raw = load(raws, K.raw_transpose, gompute_backend)
    host = rng_for("transpose", rows, cols).standard_normal((rows, cols)).astype(np.float32)
    src = upload(raw, host)
    dst = raw.alloc(rows * cols, g.f32)
    grid = g.Dim3(-(-cols // K.TILE), -(-rows // K.TILE))
    raw.launch(grid, g.Dim3(K.TILE, K.TILE), [src, dst, rows, cols])
    raw.synchronize()
    got = download(dst, rows * cols, np.float32).reshape(cols, rows)
    np.testing.assert_array_equal(got, host.T)


@pytest.mark.parametrize("rows,cols", [(1, 1), (16, 16), (50, 37), (3, 200)])
def test_stencil(raws: RawCache, gompute_backend: str, rows: int, cols: int) -> None:
    """5-point stencil with a shared halo; the same f32 operations, in the same order, as
    the NumPy oracle: equal bit for bit."""
    raw = load(raws, K.raw_stencil, gompute_backend)
    a = rng_for("stencil", rows, cols).uniform(-1, 1, (rows, cols)).astype(np.float32)
    src = upload(raw, a)
    dst = raw.alloc(rows * cols, g.f32)
    grid = g.Dim3(-(-cols // K.TILE), -(-rows // K.TILE))
    raw.launch(grid, (K.TILE, K.TILE), [src, dst, rows, cols])
    raw.synchronize()
    np.testing.assert_array_equal(download(dst, rows * cols, np.float32).reshape(rows, cols),
                                  K.stencil_oracle(a))


@pytest.mark.parametrize("n,blocks", [(1, 1), (5000, 3), (1 << 20, 64)])
def test_histogram(raws: RawCache, gompute_backend: str, n: int, blocks: int) -> None:
    """Shared-memory atomics per block, then global atomics, against ``np.bincount``."""
    raw = load(raws, K.raw_histogram, gompute_backend)
    host = rng_for("hist", n).integers(0, 256, n).astype(np.uint8)
    host[: n // 3] = 7  # a heavily contended bin
    buf = upload(raw, host)
    bins = raw.alloc(256, g.u32)
    bins.fill(0)
    raw.launch(blocks, K.BLOCK, [buf, np.uint64(n), bins])
    raw.synchronize()
    np.testing.assert_array_equal(download(bins, 256, np.uint32),
                                  np.bincount(host, minlength=256).astype(np.uint32))


@pytest.mark.parametrize("n", [1, 1000, 100000])
def test_cas_float_max(raws: RawCache, gompute_backend: str, n: int) -> None:
    """A float maximum by compare-and-swap equals NumPy's."""
    raw = load(raws, K.raw_cas_max, gompute_backend)
    host = rng_for("casmax", n).standard_normal(n).astype(np.float32) * np.float32(1e3)
    buf = upload(raw, host)
    result = upload(raw, np.array([-np.inf], np.float32))
    raw.launch(g.Dim3.linear(n, 128), 128, [buf, np.uint64(n), result])
    raw.synchronize()
    assert download(result, 1, np.float32)[0] == host.max()


def test_atomic_ops(raws: RawCache, gompute_backend: str) -> None:
    """add/sub/min/max/exch on i32, add/min/max on f32 and add on u64, all contended."""
    raw = load(raws, K.raw_atomic_ops, gompute_backend)
    n = 10000
    host = rng_for("atomics", n).integers(-2**31, 2**31 - 1, n, dtype=np.int64).astype(np.int32)
    buf = upload(raw, host)
    acc, facc, uacc = (upload(raw, a) for a in K.atomic_ops_start())
    raw.launch(g.Dim3.linear(n, 128), 128, [buf, np.uint64(n), acc, facc, uacc])
    raw.synchronize()
    K.check_atomic_ops(host, download(acc, 5, np.int32), download(facc, 3, np.float32),
                       download(uacc, 1, np.uint64))


@pytest.mark.parametrize("shape,block", [((5, 3, 2), (4, 2, 2)), ((33, 17, 9), (8, 4, 2)),
                                         ((1, 1, 70), (1, 1, 64))])
def test_index_3d(raws: RawCache, gompute_backend: str, shape: tuple, block: tuple) -> None:
    """global_id, block_dim and grid_dim in three dimensions."""
    raw = load(raws, K.raw_index3d, gompute_backend)
    nx, ny, nz = shape
    grid = tuple(-(-s // b) for s, b in zip(shape, block, strict=True))
    out = raw.alloc(nx * ny * nz, g.i64)
    raw.launch(g.Dim3(*grid), g.Dim3(*block), [out, nx, ny, nz])
    raw.synchronize()
    np.testing.assert_array_equal(download(out, nx * ny * nz, np.int64),
                                  K.index3d_oracle(shape, block))


def test_fused_pipeline_in_raw_kernel(raws: RawCache, gompute_backend: str) -> None:
    """A raw kernel calling ``Pipeline.eval`` equals the Python pipeline on NumPy scalars."""
    raw = load(raws, K.raw_fused, gompute_backend)
    n = 777
    host = rng_for("fused").uniform(-3, 3, n).astype(np.float32)
    p = K.COEF_F32(a=np.float32(1.5), b=np.float32(-0.25))
    buf = upload(raw, host)
    raw.launch(g.Dim3.linear(n, 64), 64, [buf, np.uint64(n), p])
    raw.synchronize()
    np.testing.assert_array_equal(download(buf, n, np.float32), K.fused_oracle(host, p))


# ------------------------------------------------------------------ launch checks
def test_wrong_argument_types_rejected(raws: RawCache, gompute_backend: str) -> None:
    """A float64 buffer or scalar where an f32 is declared is an ``InvalidArgument`` naming
    the argument's index and name; nothing runs and the data stays as it was."""
    raw = load(raws, K.raw_scale, gompute_backend)
    host = np.arange(300, dtype=np.float32)
    buf = upload(raw, host)
    wrong = raw.alloc(300, g.f64)
    with pytest.raises(g.InvalidArgument, match=r"#0 \('data'\).*float64.*GlobalPtr\[f32\]"):
        raw.launch(5, 64, [wrong, np.uint64(300), np.float32(2)])
    with pytest.raises(g.InvalidArgument, match=r"#2 \('factor'\).*float64.*f32"):
        raw.launch(5, 64, [buf, np.uint64(300), np.float64(2)])
    with pytest.raises(g.InvalidArgument, match=r"#1 \('n'\)"):
        raw.launch(5, 64, [buf, 2.5, np.float32(2)])
    with pytest.raises(g.InvalidArgument, match=r"#1 \('n'\).*does not fit u64"):
        raw.launch(5, 64, [buf, -1, np.float32(2)])
    with pytest.raises(g.InvalidArgument, match="takes 3 arguments"):
        raw.launch(5, 64, [buf, np.uint64(300)])
    with pytest.raises(g.InvalidArgument, match=r"'data' holds 300 elements but n=301"):
        raw.launch(5, 64, [buf, np.uint64(301), np.float32(2)])
    raw.synchronize()
    np.testing.assert_array_equal(download(buf, 300, np.float32), host)



@g.params
class Factor:
    """A params record with the field ``raw_scale``'s ``factor`` is: the oracle of its
    range check."""

    factor: g.f32


@pytest.mark.parametrize("value", [1e40, -1e40, 10**400, -(10**400)])
def test_scalar_range_checked_like_params_fields(raws: RawCache, gompute_backend: str,
                                                 value: object) -> None:
    """A Python number an ``f32`` argument cannot hold (``1e40`` would become ``inf``;
    ``10**400`` is past any float) is refused exactly as a params field refuses it, naming
    the argument; the data stay as they were."""
    raw = load(raws, K.raw_scale, gompute_backend)
    host = np.arange(100, dtype=np.float32)
    buf = upload(raw, host)
    with pytest.raises(g.InvalidArgument) as field:
        Factor(factor=value)
    with pytest.raises(g.InvalidArgument) as argument:
        raw.launch(2, 64, [buf, np.uint64(100), value])
    reason = str(field.value).removeprefix("Factor.factor: ")
    assert str(argument.value) == f"raw_scale: argument #2 ('factor'): {reason}"
    raw.synchronize()
    np.testing.assert_array_equal(download(buf, 100, np.float32), host)


def test_checks_hold_after_good_launches(raws: RawCache, gompute_backend: str) -> None:
    """Launches that passed (NumPy scalars, then Python numbers) do not let a later wrong
    argument through: a buffer of another dtype, a freed buffer, an int past the declared
    type or of another NumPy type are each refused, naming the argument, and the data keep
    the good launches' results (the kernel run as Python on NumPy scalars is the oracle)."""
    raw = load(raws, K.raw_scale, gompute_backend)
    host = rng_for("checks_hold", 200).uniform(-4, 4, 200).astype(np.float32)
    buf = upload(raw, host)
    raw.launch(4, 64, [buf, np.uint64(200), np.float32(1.5)])
    raw.launch(4, 64, [buf, 150, 0.5])  # Python numbers: exactly as the NumPy scalars
    want = host.copy()
    for i in range(200):
        want[i] = want[i] * np.float32(1.5)
        if i < 150:
            want[i] = want[i] * np.float32(0.5)
    wrong = raw.alloc(200, g.f64)
    gone = raw.alloc(200, g.f32)
    gone.free()
    rejected = [([wrong, np.uint64(200), np.float32(2)], r"#0 \('data'\).*float64"),
                ([gone, np.uint64(200), np.float32(2)], r"#0 \('data'\).*freed"),
                ([buf, 2**64, np.float32(2)], r"#1 \('n'\).*does not fit u64"),
                ([buf, np.int64(200), np.float32(2)], r"#1 \('n'\).*int64"),
                ([buf, np.uint64(201), np.float32(2)], r"holds 200 elements but n=201"),
                ([buf, np.uint64(200), np.float16(2)], r"#2 \('factor'\).*float16")]
    for args, message in rejected:
        with pytest.raises(g.InvalidArgument, match=message):
            raw.launch(4, 64, args)
    raw.synchronize()
    np.testing.assert_array_equal(download(buf, 200, np.float32), want)


def test_block_shapes_checked(raws: RawCache, gompute_backend: str) -> None:
    """A block other than the declared one, or past the device's limits, is rejected."""
    raw = load(raws, K.raw_add, gompute_backend)
    host = np.zeros(512, np.float32)
    buf = upload(raw, host)
    with pytest.raises(g.InvalidArgument, match=r"block \(128, 1, 1\).*declares "
                                                r"block=\(256, 1, 1\)"):
        raw.launch(4, 128, [buf, np.uint64(512)])
    free = load(raws, K.raw_scale, gompute_backend)
    with pytest.raises(g.InvalidArgument, match="2048 threads"):
        free.launch(1, (64, 32), [buf, np.uint64(512), np.float32(1)])
    with pytest.raises(g.InvalidArgument, match="z=65"):
        free.launch(1, (1, 1, 65), [buf, np.uint64(512), np.float32(1)])
    with pytest.raises(g.InvalidArgument, match="Dim3.x"):
        free.launch(0, 64, [buf, np.uint64(512), np.float32(1)])
    np.testing.assert_array_equal(download(buf, 512, np.float32), host)


def test_unknown_name_and_spec_name(gompute_backend: str) -> None:
    """``g.RawKernel`` of a spec's name says it is a spec; of an unknown name lists the raw
    kernels that resemble it."""
    from .kernels_tiers import TWICE

    with pytest.raises(g.InvalidArgument, match="not a raw kernel"):
        g.RawKernel(TWICE.name, gompute_backend)
    with pytest.raises(g.KernelNotFound, match="raw_histogram"):
        g.RawKernel("raw_histogramm", gompute_backend)


def test_checked_shapes_are_not_confused_with_equal_values(raws: RawCache,
                                                           gompute_backend: str) -> None:
    """A launch shape checked once is remembered; ``True`` or ``1.0`` (equal to 1) are still
    refused after a launch with 1."""
    raw = load(raws, K.raw_scale, gompute_backend)
    buf = upload(raw, np.ones(64, np.float32))
    raw.launch(1, 64, [buf, np.uint64(64), np.float32(3)])
    raw.launch(1, 64, [buf, np.uint64(64), np.float32(3)])
    for grid in (True, 1.0):
        with pytest.raises(g.InvalidArgument, match="Dim3.x"):
            raw.launch(grid, 64, [buf, np.uint64(64), np.float32(3)])
    with pytest.raises(g.InvalidArgument, match="block x"):
        raw.launch(1, 64.0, [buf, np.uint64(64), np.float32(3)])
    raw.launch(1, (64, 1), [buf, np.uint64(64), np.float32(1)])
    with pytest.raises(g.InvalidArgument, match="block y"):
        raw.launch(1, (64, 1.0), [buf, np.uint64(64), np.float32(3)])
    raw.synchronize()
    np.testing.assert_array_equal(download(buf, 64, np.float32), np.full(64, 9, np.float32))

"""gompute_core.dask on a real two-process ``distributed.LocalCluster`` (CPU backend).

Every result is compared with one ``Kernel.run`` over the whole array in this
process and with NumPy (or the kernel functions run as plain Python). Chunks
are uneven and include an empty one.
"""

from __future__ import annotations

import gc
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import dask  # noqa: E402
import dask.array as da  # noqa: E402

import gompute_core as g  # noqa: E402
from gompute_core import dask as gd  # noqa: E402
from gompute_core.specs import spec_by_reference  # noqa: E402

pytest.importorskip("gompute_cpu")

import dask_kernels as K  # noqa: E402  (tests/ is on sys.path, and on the workers')

HERE = os.path.dirname(os.path.abspath(__file__))
N = 1000
CHUNKS = ((97, 0, 403, 1, 499),)  # uneven, with an empty chunk and a one-element chunk


@pytest.fixture(scope="module")
def client():
    """Two worker processes, one thread each; they import ``dask_kernels`` from tests/."""
    path = os.pathsep.join([HERE, *sys.path])
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", path)
        with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster) as c:
            yield c


def single(spec, *args):
    """The single-process reference: one ``Kernel.run`` on the CPU backend."""
    with g.Kernel(spec, "cpu") as k:
        return k.run(*args)


def chunked(x, chunks=CHUNKS):
    return da.from_array(x, chunks=chunks)


def rng():
    return np.random.default_rng(11)


# ------------------------------------------------------------------ elementwise kinds
def test_map_equals_single_process_and_numpy(client):
    x = rng().integers(-1000, 1000, N).astype(np.float32) / 8
    p = K.Affine(scale=1.5, shift=-2)
    got = client.compute(gd.map_blocks(K.affine_map, chunked(x), p=p, backend="cpu")).result()
    expected = x * np.float32(1.5) + np.float32(-2)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, single(K.affine_map, x.copy(), p))
    # the work ran in the workers: they hold the kernel handle, this process does not
    held = client.run(lambda: [s.name for s, _, _ in gd._handles])
    assert any("dask_affine" in names for names in held.values())
    assert all(s.name != "dask_affine" for s, _, _ in gd._handles)


def test_device_chosen_in_the_worker(client):
    x = np.arange(N, dtype=np.float32)
    p = K.Affine(scale=2, shift=1)
    work = gd.map_blocks(K.affine_map, chunked(x), p=p, backend="cpu", device=K.worker_device)
    np.testing.assert_array_equal(client.compute(work).result(), x * 2 + 1)
    keys = client.run(lambda: [(s.name, b, d) for s, b, d in gd._handles])
    assert any(("dask_affine", "cpu", 0) in found for found in keys.values())


def test_map_to_and_zip(client):
    r = rng()
    a = r.integers(-999, 999, N).astype(np.float32) / 4
    b = r.integers(-10**6, 10**6, N).astype(np.int32)
    got_to = client.compute(gd.map_blocks(K.halve_to, chunked(b))).result()
    np.testing.assert_array_equal(got_to, b.astype(np.float64) / 2)
    np.testing.assert_array_equal(got_to, single(K.halve_to, b, np.empty(N, np.float64)))

    p = K.Affine(scale=3, shift=0)
    # b in other chunks than a: Dask aligns them, the result has a's chunks
    zipped = gd.map_blocks(K.weighted_zip, chunked(a), chunked(b, ((500, 500),)), p=p,
                           backend="cpu")
    got = client.compute(zipped).result()
    np.testing.assert_array_equal(got, a.astype(np.float64) * 3.0 + b)
    np.testing.assert_array_equal(got, single(K.weighted_zip, a, b, np.empty(N), p))


def test_map_indexed_sees_global_indices(client):
    x = rng().integers(-100, 100, N).astype(np.int64)
    p = K.Stride(k=3)
    got = client.compute(gd.map_blocks(K.indexed, chunked(x), p=p)).result()
    i = np.arange(N, dtype=np.int64)
    np.testing.assert_array_equal(got, x * 3 + i * i)
    np.testing.assert_array_equal(got, single(K.indexed, x.copy(), p))
    # a second spec with the same params class, and one whose function ignores its p
    both = client.compute([gd.map_blocks(K.indexed_stride, chunked(x), p=p),
                           gd.map_blocks(K.indexed_unused_p, chunked(x))])
    stride, unused_p = (fut.result() for fut in both)
    np.testing.assert_array_equal(stride, x - i * 3)
    np.testing.assert_array_equal(unused_p, x + i)
    np.testing.assert_array_equal(unused_p, single(K.indexed_unused_p, x.copy()))


def test_map_indexed_without_params_on_2d_rows(client):
    x = rng().integers(0, 2**63, (25, 40), dtype=np.uint64)
    arr = da.from_array(x, chunks=((3, 0, 12, 10), (40,)))
    got = client.compute(gd.map_blocks(K.indexed_plain, arr)).result()
    flat = np.arange(x.size, dtype=np.uint64).reshape(x.shape)
    with np.errstate(over="ignore"):
        expected = x ^ (flat * np.uint64(2654435761))
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, single(K.indexed_plain, x.copy()))


def test_map_indexed_rejects_chunks_that_are_not_flat_ranges():
    arr = da.zeros((10, 10), dtype=np.uint64, chunks=(5, 5))
    with pytest.raises(g.InvalidArgument, match=r"axis 1 is split.*rechunk\(\{1: -1\}\)"):
        gd.map_blocks(K.indexed_plain, arr)


# ------------------------------------------------------------------ reduce
def test_sum_and_presets(client):
    r = rng()
    x = r.integers(-10**9, 10**9, N).astype(np.int64)
    f = r.integers(-1000, 1000, N).astype(np.float64)  # exact squares and sums
    s = r.standard_normal(N).astype(np.float32)
    got = client.compute([gd.reduce(K.total, chunked(x)), gd.reduce(K.squares, chunked(f)),
                          gd.reduce(K.smallest, chunked(s))]).__iter__()
    total, squares, smallest = (fut.result() for fut in got)
    assert total == x.sum() == single(K.total, x) and total.dtype == np.int64
    assert squares == (f * f).sum() == single(K.squares, f)
    assert smallest == s.min() == single(K.smallest, s)
    # presets take any chunking, also across axis 1
    grid = da.from_array(x.reshape(20, 50), chunks=((7, 13), (20, 0, 30)))
    assert client.compute(gd.reduce(K.total, grid)).result() == x.sum()


def test_custom_non_commutative_reduce_folds_in_order(client):
    x = rng().integers(1, 10**6, N).astype(np.int64)
    p = K.Modulus(m=7)
    multiples = np.flatnonzero(x % 7 == 0)
    assert len(multiples) > 20  # several chunks hold one: the order of partials matters
    expected = x[multiples[-1]]  # the Python oracle of "last non-zero wins"
    many = ((50,) * 6 + (0,) + (100,) * 7,)  # 14 chunks: a tree of combines
    for chunks in (CHUNKS, many):
        for split_every in (None, 2, 3):
            result = gd.reduce(K.last_multiple, chunked(x, chunks), p, backend="cpu",
                               split_every=split_every)
            got = client.compute(result).result()
            assert got == expected == single(K.last_multiple, x, p), (chunks, split_every)
            assert type(got) is np.int64


def test_reduce_of_empty_array_is_the_identity(client):
    empty = da.from_array(np.empty(0, np.int64), chunks=((0,),))
    assert client.compute(gd.reduce(K.last_multiple, empty, K.Modulus(m=3))).result() == 0
    assert client.compute(gd.reduce(K.total, empty)).result() == 0


def test_custom_reduce_rejects_chunks_that_are_not_flat_ranges():
    grid = da.zeros((10, 10), dtype=np.int64, chunks=(10, 5))
    with pytest.raises(g.InvalidArgument, match="custom combine of 'dask_last_multiple'"):
        gd.reduce(K.last_multiple, grid, K.Modulus(m=3))


# ------------------------------------------------------------------ map fused into a reduce
MANY = ((50,) * 6 + (0,) + (100,) * 7,)  # 14 chunks, one empty


def layers_named(array, spec):
    return [name for name in array.dask.layers if name.startswith(f"gompute-{spec.name}-")]


def test_map_then_reduce_is_one_task_per_chunk(client):
    x = rng().integers(-10**6, 10**6, N).astype(np.int64)
    source = chunked(x, MANY)
    y = gd.map_blocks(K.doubled, source, backend="cpu")
    fused = gd.reduce(K.total, y, backend="cpu")
    apart = gd.reduce(K.total, y, backend="cpu", fuse=False)
    # fused: the map's layer is gone, its function runs in the reduce's kernel
    assert layers_named(fused, K.doubled) == [] and layers_named(apart, K.doubled)
    loads = len(dask.optimize(source)[0].__dask_graph__())  # from_array's getters
    for work in (fused, apart):  # Dask fuses the blockwise steps: one task per chunk
        (optimized,) = dask.optimize(work)  # and every partial into one aggregate task
        assert len(optimized.__dask_graph__()) == loads + len(MANY[0]) + 1
    got_fused, got_apart = (fut.result() for fut in client.compute([fused, apart]))
    assert got_fused == got_apart == (x * 2).sum() == single(K.total, single(K.doubled,
                                                                              x.copy()))
    assert type(got_fused) is np.int64


def test_fused_custom_reduce_with_params_on_both_sides(client):
    x = rng().integers(1, 10**6, N).astype(np.int64)
    k, m = K.Stride(k=5), K.Modulus(m=7)
    y = x * 5 + 1
    multiples = np.flatnonzero(y % 7 == 0)
    assert len(multiples) > 20  # several chunks hold one: the order of partials matters
    for split_every in (None, 2, 3):
        s = gd.reduce(K.last_multiple, gd.map_blocks(K.strided, chunked(x, MANY), p=k), m,
                      split_every=split_every)
        assert layers_named(s, K.strided) == []
        got = client.compute(s).result()
        assert got == y[multiples[-1]] == single(K.last_multiple, single(K.strided,
                                                                         x.copy(), k), m)


def test_fused_map_without_params_into_sum_with_pre(client):
    f = rng().integers(-1000, 1000, N).astype(np.float64)  # exact squares and sums
    s = gd.reduce(K.squares, gd.map_blocks(K.shifted_down, chunked(f)))
    assert layers_named(s, K.shifted_down) == []
    assert client.compute(s).result() == ((f - 3) ** 2).sum()
    spec, Q = gd.fused_reduce_spec(K.shifted_down, K.squares)
    assert spec.name == "dask_shifted_down_into_dask_squares" and spec.preset == "sum"
    assert single(spec, f, Q()) == ((f - 3) ** 2).sum()


def test_no_fusion_across_targets_of_persisted_maps_or_after_the_map_is_gone():
    x = chunked(np.arange(N, dtype=np.int64))
    y = gd.map_blocks(K.doubled, x)  # backend None: AutoKernel, not the reduce's "cpu"
    s = gd.reduce(K.total, y, backend="cpu")
    assert layers_named(s, K.doubled)
    assert s.compute(scheduler="sync") == np.arange(N).sum() * 2
    # a persisted map is reduced as it is (its values, not the map run again)
    kept = gd.map_blocks(K.doubled, x, backend="cpu").persist(scheduler="sync")
    s = gd.reduce(K.total, kept, backend="cpu")
    assert layers_named(s, K.doubled)
    assert s.compute(scheduler="sync") == np.arange(N).sum() * 2
    key = id(gd._layer(y))
    assert key in gd._map_steps
    del y
    gc.collect()
    assert key not in gd._map_steps


def cuda_and_cupy():
    """CuPy, or a skip where CuPy or a CUDA device is missing."""
    from gompute_core.plugins import manager

    if not any(r.name == "cuda" for r in manager.backends()):
        pytest.skip("gompute-cuda not installed")
    available = manager.probe("cuda")
    if not available.available:
        pytest.skip(f"CUDA unavailable: {available.reason}")
    return pytest.importorskip("cupy")


def test_cupy_chunks_keep_partials_on_the_device(client):
    cp = cuda_and_cupy()
    x = rng().integers(-10**6, 10**6, N).astype(np.int64)
    # a preset's chunk step leaves a device array (launched without synchronizing)
    partial = gd._reduce_chunk(cp.asarray(x), None, True, spec=K.total, p=None,
                               backend="cuda", device=None, map_step=(K.doubled, None))
    assert isinstance(partial, cp.ndarray) and int(partial[0]) == (x * 2).sum()
    chunks = da.from_array(cp.asarray(x), chunks=MANY, asarray=False)
    fused = gd.reduce(K.total, gd.map_blocks(K.doubled, chunks, backend="cuda"),
                      backend="cuda", split_every=3)
    smallest = gd.reduce(K.smallest, gd.map_blocks(
        K.affine_map, da.from_array(cp.asarray(x.astype(np.float32)), chunks=MANY,
                                    asarray=False), p=K.Affine(scale=-1, shift=2),
        backend="cuda"), backend="cuda")
    custom = gd.reduce(K.last_multiple, gd.map_blocks(K.strided, chunks, p=K.Stride(k=5),
                                                      backend="cuda"),
                       K.Modulus(m=7), backend="cuda")
    y = x * 5 + 1
    expected = ((x * 2).sum(), (x.astype(np.float32) * -1 + 2).min(),
                y[np.flatnonzero(y % 7 == 0)[-1]])
    for got in (dask.compute(fused, smallest, custom, scheduler="sync"),
                [fut.result() for fut in client.compute([fused, smallest, custom])]):
        assert tuple(got) == expected
        assert [type(v) for v in got] == [np.int64, np.float32, np.int64]


# ------------------------------------------------------------------ gather
def test_gather_over_local_index_ranges(client):
    r = rng()
    src = r.standard_normal(N).astype(np.float32)
    idx = r.integers(-50, N + 50, 777).astype(np.int32)  # some out of range: skipped
    initial = np.full(777, -7, np.float32)
    got = client.compute(gd.gather(K.take, chunked(src), chunked(idx, ((300, 0, 477),)),
                                   chunked(initial, ((777,),)), backend="cpu")).result()
    inside = (idx >= 0) & (idx < N)
    expected = initial.copy()
    expected[inside] = src[idx[inside]]
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, single(K.take, src, idx, initial.copy()))
    # default out: zeros where the index is out of range
    zeros = client.compute(gd.gather(K.take, chunked(src), chunked(idx, 100))).result()
    np.testing.assert_array_equal(zeros, np.where(inside, expected, 0))


def test_gather_with_narrow_unsigned_indices():
    """u8 indices against source chunks that start beyond 255 (and straddle it)."""
    src = np.arange(300, dtype=np.float32)
    idx = np.arange(256, dtype=np.uint8)[::-1].copy()
    got = gd.gather(K.take_small, chunked(src, ((100, 150, 50),)), chunked(idx, 60)).compute(
        scheduler="sync")
    np.testing.assert_array_equal(got, src[idx])
    np.testing.assert_array_equal(got, single(K.take_small, src, idx, np.zeros(256, np.float32)))


# ------------------------------------------------------------------ arguments
def test_bad_arguments_are_named():
    x = chunked(np.zeros(N, np.float64))
    with pytest.raises(g.InvalidArgument, match=r"data: dtype float64 .* f32"):
        gd.map_blocks(K.affine_map, x, p=K.Affine(scale=1, shift=0))
    with pytest.raises(g.InvalidArgument, match="data: expected a dask.array.Array"):
        gd.map_blocks(K.affine_map, np.zeros(3, np.float32), p=K.Affine(scale=1, shift=0))
    with pytest.raises(g.InvalidArgument, match="takes a Affine instance, got nothing"):
        gd.map_blocks(K.affine_map, chunked(np.zeros(N, np.float32)))
    with pytest.raises(g.InvalidArgument, match="a zip takes 2 array"):
        gd.map_blocks(K.weighted_zip, chunked(np.zeros(N, np.float32)))
    with pytest.raises(g.InvalidArgument, match="use gompute_core.dask.reduce"):
        gd.map_blocks(K.total, chunked(np.zeros(N, np.int64)))
    with pytest.raises(g.InvalidArgument, match="device: choosing a device needs backend="):
        gd.reduce(K.total, chunked(np.zeros(N, np.int64)), device=1)


# ------------------------------------------------------------------ pickling and laziness
def test_specs_pickle_by_reference_and_params_by_value():
    for spec in (K.affine_map, K.last_multiple, K.take):
        assert pickle.loads(pickle.dumps(spec)) is spec
    p = K.Affine(scale=2.5, shift=-1)
    back = pickle.loads(pickle.dumps(p))
    assert back == p and type(back.scale) is np.float32
    with pytest.raises(g.InvalidArgument, match="not defined by importing 'dask_kernels'"):
        spec_by_reference("dask_kernels", "dask_made_in_a_function")


def test_spec_made_in_main_refuses_to_pickle():
    namespace = {"__name__": "__main__", "g": g}
    exec(compile("s = g.sum('dask_in_main', g.i32)", "<main script>", "exec"), namespace)
    with pytest.raises(g.InvalidArgument, match="'dask_in_main'.*importable module"):
        pickle.dumps(namespace["s"])


def test_import_gompute_core_does_not_import_dask():
    code = ("import sys, gompute_core as g; assert 'dask' not in sys.modules; "
            "g.dask; assert 'dask.array' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, env=os.environ.copy())

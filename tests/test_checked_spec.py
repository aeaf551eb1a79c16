"""Checked mode for spec kernels (``g.Kernel(spec, backend, checked=True)``,
``GOMPUTE_CHECKED=1``): an elementwise spec's element function and its helpers have every
params-array and local-array access checked, the report naming the kernel, the params
field, the index, the extent and the line. map, map_indexed, map_to and zip specs run
checked as their equivalent elementwise program, scan and reduce specs as their checked raw
kernels; gather and scatter (no function of the user's) refuse it. Real kernels on the CPU
backend; the oracle is NumPy or the function run as plain Python, and the unchecked
kernel's bits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import gompute_core as g
from gompute_core.errors import GomputeWarning, OutOfBounds, Unsupported
from gompute_core.testing._support import marked_line

HERE = Path(__file__).resolve()


def line_of(marker: str) -> str:
    """``file:line`` of the line of this file that ends with ``# <marker>``."""
    return marked_line(HERE, marker)


@g.params
class Weights:
    """Four weights and which one to use."""

    weights: g.Array[g.f32, 4]
    k: g.i64


def pick(p, k):
    return p.weights[k]  # helper weights read


def scale(x, p):
    return x * p.weights[p.k]  # weights read


def scale_via_helper(x, p):
    return x + pick(p, p.k)


SCALE = g.elementwise("ck_spec_scale", scale, [g.f32], g.f32, Weights)
VIA_HELPER = g.elementwise("ck_spec_helper", scale_via_helper, [g.f32], g.f32, Weights)
W = np.array([1, 2, 3, 4], np.float32)


def test_in_range_gives_numpys_answer() -> None:
    k = g.Kernel(SCALE, "cpu", checked=True)
    assert k.checked
    x = np.linspace(-2, 2, 37, dtype=np.float32)
    np.testing.assert_array_equal(k.run(x, p=Weights(weights=W, k=2)), x * W[2])
    strided = x[::3]  # the nd variant, checked too
    np.testing.assert_array_equal(k.run(strided, p=Weights(weights=W, k=1)), strided * W[1])


@pytest.mark.parametrize("index", [4, 9, -1, -5])
def test_out_of_range_index_raises_at_the_end_of_run(index: int) -> None:
    k = g.Kernel(SCALE, "cpu", checked=True)
    x = np.arange(1, 6, dtype=np.float32)
    out = np.full(5, -7, np.float32)
    with pytest.raises(OutOfBounds) as info:
        k.run(x, out=out, p=Weights(weights=W, k=index))
    err = info.value
    assert (err.kernel, err.array, err.access, err.index, err.extent, err.where) == \
        ("ck_spec_scale_flat", "p.weights", "read", index, 4, line_of("weights read"))
    message = str(err)
    for part in ("ck_spec_scale", "'p.weights'", f"index {index}", "extent 4",
                 line_of("weights read")):
        assert part in message
    np.testing.assert_array_equal(out, np.zeros(5, np.float32))  # the read gave 0
    np.testing.assert_array_equal(x, np.arange(1, 6, dtype=np.float32))  # input untouched


def test_a_helpers_access_names_the_helpers_line() -> None:
    k = g.Kernel(VIA_HELPER, "cpu", checked=True)
    x = np.arange(3, dtype=np.float32)
    with pytest.raises(OutOfBounds) as info:
        k.run(x, p=Weights(weights=W, k=4))
    assert (info.value.array, info.value.index, info.value.where) == \
        ("p.weights", 4, line_of("helper weights read"))
    np.testing.assert_array_equal(k.run(x, p=Weights(weights=W, k=3)), x + W[3])


def test_launch_then_synchronize_raises() -> None:
    k = g.Kernel(SCALE, "cpu", checked=True)
    x, out = k.alloc(4, "x"), k.alloc(4)
    x.upload(np.ones(4, np.float32))
    k.launch(x, out=out, p=Weights(weights=W, k=5))
    with pytest.raises(OutOfBounds, match="index 5"):
        k.synchronize()
    k.launch(x, out=out, p=Weights(weights=W, k=0))
    k.synchronize()  # the record was cleared when it was raised
    host = np.empty(4, np.float32)
    out.download(host)
    np.testing.assert_array_equal(host, np.ones(4, np.float32))


def test_unchecked_runs_the_plain_kernel_and_is_another_cache_entry() -> None:
    plain = g.Kernel(SCALE, "cpu", checked=False)
    checked = g.Kernel(SCALE, "cpu", checked=True)
    assert not plain.checked
    assert "ck_fault" not in plain.artifact.source and "ck_fault" in checked.artifact.source
    assert plain.artifact.digest != checked.artifact.digest
    from gompute_cpu.plugin import CpuCompiler

    from gompute_core.kinds.elementwise_source import make_variant

    kir = make_variant(SCALE, None).lower()  # what an unchecked kernel always compiled
    assert plain.program.flat.kernel_ir.digest() == kir.digest()
    assert plain.artifact.source == CpuCompiler().render(kir, plain.artifact.target)


def test_environment_turns_it_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOMPUTE_CHECKED", "1")
    k = g.Kernel(SCALE, "cpu")
    assert k.checked and not g.Kernel(SCALE, "cpu", checked=False).checked
    assert g.AutoKernel(SCALE).checked
    with pytest.raises(OutOfBounds):
        k.run(np.ones(2, np.float32), p=Weights(weights=W, k=4))


def picked(x, p):
    return x * p.weights[p.k]  # map weights read


def picked_index(x, i, p):
    return x + g.f32(i) * p.weights[p.k]  # map_indexed weights read


def picked_f64(x, p):
    return g.f64(x) * g.f64(p.weights[p.k])  # map_to weights read


def picked_pair(a, b, p):
    return a * p.weights[p.k] - b  # zip weights read


def scan_pre(x, p):
    return x * p.weights[p.k]  # scan weights read


def reduce_pre(x, p):
    return x * p.weights[p.k]  # reduce weights read


MAP = g.map("ck_spec_map", g.f32, Weights, picked)
MAP_INDEXED = g.map_indexed("ck_spec_map_indexed", g.f32, Weights, picked_index)
MAP_TO = g.map_to("ck_spec_map_to", g.f32, g.f64, Weights, picked_f64)
ZIP = g.zip("ck_spec_zip", g.f32, g.f32, g.f32, Weights, picked_pair)
SCAN = g.scan("ck_spec_scan", g.f32, Weights, lambda a, b: a + b, 0.0, pre=scan_pre)
REDUCE = g.sum("ck_spec_reduce", g.f32, Weights, pre=reduce_pre)
N = 3001  # more than one block, and more than one scan chunk (three levels of them)


def inputs(spec: g.Spec) -> list[np.ndarray]:
    """Fresh arguments of ``spec``'s ``run`` (before ``p``)."""
    x = np.linspace(-3, 3, N, dtype=np.float32)
    y = np.linspace(5, -1, N, dtype=np.float32)
    return {"map": [x], "map_indexed": [x], "scan": [x], "reduce": [x],
            "map_to": [x, np.empty(N)],
            "zip": [x, y, np.empty(N, np.float32)]}[spec.kind]


def numpy_oracle(spec: g.Spec, k: int) -> np.ndarray:
    """What ``spec`` computes with weight ``k``, in NumPy."""
    x = np.linspace(-3, 3, N, dtype=np.float32)
    y = np.linspace(5, -1, N, dtype=np.float32)
    return {"map": lambda: x * W[k],
            "map_indexed": lambda: x + np.arange(N, dtype=np.float32) * W[k],
            "map_to": lambda: x.astype(np.float64) * np.float64(W[k]),
            "zip": lambda: x * W[k] - y,
            "scan": lambda: np.cumsum(x * W[k], dtype=np.float32)}[spec.kind]()


KINDS = [pytest.param(MAP, "map", id="map"),
         pytest.param(MAP_INDEXED, "map_indexed", id="map_indexed"),
         pytest.param(MAP_TO, "map_to", id="map_to"),
         pytest.param(ZIP, "zip", id="zip"),
         pytest.param(SCAN, "scan", id="scan")]
CHECKABLE = [*KINDS, pytest.param(REDUCE, "reduce", id="reduce")]


@pytest.mark.parametrize(("spec", "marker"), KINDS)
def test_kind_in_range_gives_the_unchecked_bits(spec: g.Spec, marker: str) -> None:
    checked = g.Kernel(spec, "cpu", checked=True)
    assert checked.checked
    for k in range(4):
        p = Weights(weights=W, k=k)
        got = checked.run(*inputs(spec), p)
        plain = g.Kernel(spec, "cpu").run(*inputs(spec), p)
        assert got.tobytes() == plain.tobytes()
        if spec.kind == "scan":  # a different association than NumPy's cumsum
            np.testing.assert_allclose(got, numpy_oracle(spec, k), rtol=1e-5, atol=1e-3)
        else:
            np.testing.assert_array_equal(got, numpy_oracle(spec, k))


@pytest.mark.parametrize(("spec", "marker"), CHECKABLE)
@pytest.mark.parametrize("index", [4, -1])
def test_kind_out_of_range_index_raises_naming_the_access(spec: g.Spec, marker: str,
                                                          index: int) -> None:
    k = g.Kernel(spec, "cpu", checked=True)
    with pytest.raises(OutOfBounds) as info:
        k.run(*inputs(spec), Weights(weights=W, k=index))
    err = info.value
    assert err.kernel.startswith(spec.name)
    assert (err.array, err.access, err.index, err.extent, err.where) == \
        ("p.weights", "read", index, 4, line_of(f"{marker} weights read"))
    k.run(*inputs(spec), Weights(weights=W, k=0))  # the record was cleared


@pytest.mark.parametrize(("spec", "marker"), KINDS[:4])
def test_kind_launch_then_synchronize_raises(spec: g.Spec, marker: str) -> None:
    k = g.Kernel(spec, "cpu", checked=True)
    roles = [role for role, _ in spec.kind_object.arrays]
    host = inputs(spec)
    bufs = [k.alloc(N, role) for role in roles]
    for buf, arr in zip(bufs, host, strict=True):
        buf.upload(arr)
    k.launch(*bufs, N, Weights(weights=W, k=6))
    with pytest.raises(OutOfBounds, match="index 6"):
        k.synchronize()
    bufs[0].upload(host[0])  # a map wrote its data with the 0 the faulty read gave
    k.launch(*bufs, N, Weights(weights=W, k=3))
    k.synchronize()
    out = np.empty_like(host[-1])
    bufs[-1].download(out)
    np.testing.assert_array_equal(out, numpy_oracle(spec, 3))


def test_scan_launch_then_synchronize_raises() -> None:
    k = g.Kernel(SCAN, "cpu", checked=True)
    buf = k.alloc(N)
    buf.upload(inputs(SCAN)[0])
    k.launch(buf, N, Weights(weights=W, k=9))
    with pytest.raises(OutOfBounds, match="index 9"):
        k.synchronize()


def test_a_checked_map_is_its_elementwise_equivalent_and_the_unchecked_one_is_not() -> None:
    plain, checked = g.Kernel(MAP, "cpu"), g.Kernel(MAP, "cpu", checked=True)
    assert not plain.checked and "ck_fault" not in plain.artifact.source
    assert plain.kernel_ir.digest() == MAP.lower().digest()  # the backend's entry, as ever
    assert type(plain.program).__name__ == "KernelProgram"
    assert "ck_fault" in checked.artifact.source
    assert checked.program.program.variants() == ("ck_spec_map_flat",)


def test_checked_map_refuses_what_the_unchecked_one_refuses() -> None:
    k = g.Kernel(MAP_TO, "cpu", checked=True)
    x = np.arange(8, dtype=np.float32)
    with pytest.raises(g.InvalidArgument, match="dtype"):
        k.run(x, np.empty(8, np.float32), Weights(weights=W, k=0))
    with pytest.raises(g.InvalidArgument, match="shape"):
        k.run(x, np.empty(7), Weights(weights=W, k=0))


@pytest.mark.parametrize(("spec", "marker"), CHECKABLE)
def test_environment_turns_it_on_for_every_checkable_kind(
        monkeypatch: pytest.MonkeyPatch, spec: g.Spec, marker: str) -> None:
    monkeypatch.setenv("GOMPUTE_CHECKED", "1")
    k = g.Kernel(spec, "cpu")
    assert k.checked and not g.Kernel(spec, "cpu", checked=False).checked
    with pytest.raises(OutOfBounds):
        k.run(*inputs(spec), Weights(weights=W, k=4))


def test_gather_refuses_it(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = g.gather("ck_spec_gather", g.f32, g.i32)
    with pytest.raises(Unsupported, match="gather spec, whose entry each backend renders"):
        g.Kernel(spec, "cpu", checked=True)
    monkeypatch.setenv("GOMPUTE_CHECKED", "1")
    with pytest.warns(GomputeWarning, match="runs unchecked"):
        k = g.Kernel(spec, "cpu")
    assert not k.checked
    src = np.arange(4, dtype=np.float32)
    out = k.run(src, np.array([3, 0], np.int32), np.empty(2, np.float32))
    np.testing.assert_array_equal(out, [3, 0])


def kept_in_a_local(x, p):
    acc = g.local_array(g.f32, 4)
    acc[0] = x
    return acc[p.k] + acc[0]  # map local read


def test_a_local_array_access_names_its_own_line() -> None:
    spec = g.map("ck_spec_map_local", g.f32, Weights, kept_in_a_local)
    k = g.Kernel(spec, "cpu", checked=True)
    x = np.linspace(-1, 1, 9, dtype=np.float32)
    with pytest.raises(OutOfBounds) as info:
        k.run(x.copy(), Weights(weights=W, k=4))
    assert (info.value.array, info.value.index, info.value.extent, info.value.where) == \
        ("acc", 4, 4, line_of("map local read"))
    np.testing.assert_array_equal(k.run(x.copy(), Weights(weights=W, k=0)), x + x)


# ---------------------------------------------------------------- reduce
@g.params
class IntWeights:
    """Four integer weights and which one to use."""

    weights: g.Array[g.i64, 4]
    k: g.i64


IW = np.array([1, -2, 3, 5], np.int64)


def int_pre(x, p):
    return x * p.weights[p.k]


def last_nonzero(a, b):
    return b if b != 0 else a  # associative, not commutative: a wrong order shows


def add_through_a_local(a, b):
    lanes = g.local_array(g.i64, 4)
    lanes[b & 3] = b
    return a + lanes[b]  # reduce local read


INT_SPECS = [g.sum("ck_spec_isum", g.i64, IntWeights, int_pre),
             g.min("ck_spec_imin", g.i64, IntWeights, int_pre),
             g.max("ck_spec_imax", g.i64, IntWeights, int_pre),
             g.reduce("ck_spec_ilast", g.i64, IntWeights, last_nonzero, 0, int_pre)]


def int_oracle(spec: g.Spec, y: np.ndarray) -> np.int64:
    """What ``spec`` computes of the ``pre``-mapped data ``y``, in NumPy."""
    if spec.name == "ck_spec_ilast":
        nonzero = y[y != 0]
        return nonzero[-1] if nonzero.size else np.int64(0)
    return {"sum": np.sum, "min": np.min, "max": np.max}[spec.preset](y)


@pytest.mark.parametrize("spec", INT_SPECS, ids=lambda s: s.name)
@pytest.mark.parametrize("n", [1, 31, 33, N, 70_001])  # 1 to 4 levels of chunks
def test_checked_integer_reduce_is_exact(spec: g.Spec, n: int) -> None:
    checked, plain = g.Kernel(spec, "cpu", checked=True), g.Kernel(spec, "cpu")
    x = np.random.default_rng(n).integers(-2**40, 2**40, n)  # sums wrap past 2**63
    x[::7] = 0
    for k in range(4):
        p = IntWeights(weights=IW, k=k)
        got = checked.run(x, p)
        assert type(got) is np.int64
        assert got == int_oracle(spec, x * IW[k]) == plain.run(x, p)


@pytest.mark.parametrize("n", [1, 33, N])
def test_checked_any_all_fold_even_a_lone_element_from_the_identity(n: int) -> None:
    any_, all_ = g.any("ck_spec_any", g.i32), g.all("ck_spec_all", g.i32)
    for x in (np.full(n, 2, np.int32), np.zeros(n, np.int32), np.arange(n, dtype=np.int32)):
        for spec, oracle in ((any_, np.any), (all_, np.all)):
            got = g.Kernel(spec, "cpu", checked=True).run(x)
            assert got == np.int32(oracle(x)) == g.Kernel(spec, "cpu").run(x)


def test_checked_float_sum_is_numpys_within_its_rounding() -> None:
    k, plain = g.Kernel(REDUCE, "cpu", checked=True), g.Kernel(REDUCE, "cpu")
    x = inputs(REDUCE)[0]
    for w in range(4):
        p = Weights(weights=W, k=w)
        y = x.astype(np.float64) * W[w]  # exact in f64; the kernel's f32 product rounds
        # the checked sum folds chunks of 32 from 0, then their 94 totals in chunks of 32,
        # then 3: each term takes one rounding of f32 (unit eps/2) in pre and at most
        # 32 + 31 + 2 in the fold, so the error is within 66 * eps/2 * sum(|y|) of the sum
        # (NumPy's f64 sum of y, whose own error is far below that)
        bound = 66 * np.finfo(np.float32).eps / 2 * np.abs(y).sum()
        got = k.run(x, p)
        assert type(got) is np.float32
        assert abs(float(got) - y.sum()) <= bound
        assert abs(float(plain.run(x, p)) - y.sum()) <= bound  # another order, same bound
        small = (np.arange(N) % 17).astype(np.float32)  # every partial sum exact in f32
        assert k.run(small, p) == plain.run(small, p) == np.float32((small * W[w]).sum())


def test_checked_reduce_out_of_range_names_the_access() -> None:
    k = g.Kernel(REDUCE, "cpu", checked=True)
    with pytest.raises(OutOfBounds) as info:
        k.run(inputs(REDUCE)[0], Weights(weights=W, k=7))
    err = info.value
    assert (err.kernel, err.array, err.access, err.index, err.extent, err.where) == \
        ("ck_spec_reduce_reduce_first", "p.weights", "read", 7, 4,
         line_of("reduce weights read"))
    for part in ("ck_spec_reduce_reduce_first", "'p.weights'", "index 7", "extent 4"):
        assert part in str(err)


def test_checked_reduce_combines_fault_names_its_local_array() -> None:
    spec = g.reduce("ck_spec_reduce_local", g.i64, None, add_through_a_local, 0)
    k = g.Kernel(spec, "cpu", checked=True)
    ok = np.array([1, 2, 3, 0, 2], np.int64)  # every combine's b in 0..3: one level
    assert k.run(ok) == ok.sum()
    with pytest.raises(OutOfBounds) as info:
        k.run(np.array([1, 2, 7, 0], np.int64))
    err = info.value
    assert (err.kernel, err.array, err.access, err.index, err.extent, err.where) == \
        ("ck_spec_reduce_local_reduce_first", "lanes", "read", 7, 4,
         line_of("reduce local read"))


def test_checked_reduce_launch_then_synchronize_raises() -> None:
    spec = INT_SPECS[0]
    k = g.Kernel(spec, "cpu", checked=True)
    x = np.arange(-5000, 5003, dtype=np.int64)
    data, partials = k.alloc(x.size), k.alloc(64)
    data.upload(x)
    blocks = k.reduce_blocks(x.size)
    assert 1 < blocks <= 64
    k.launch(data, x.size, partials, blocks, IntWeights(weights=IW, k=9))
    with pytest.raises(OutOfBounds, match="index 9"):
        k.synchronize()
    k.launch(data, x.size, partials, blocks, IntWeights(weights=IW, k=3))
    k.synchronize()
    got = np.empty(blocks, np.int64)
    partials.download(got)
    assert got[0] == (x * IW[3]).sum() and not got[1:].any()  # the rest: the identity
    assert k.fold(got) == (x * IW[3]).sum()
    partials.upload(np.full(64, 99, np.int64))
    k.launch(data, 0, partials, 3, IntWeights(weights=IW, k=0))  # no data: identities
    k.synchronize()
    got = np.empty(64, np.int64)
    partials.download(got)
    np.testing.assert_array_equal(got, [0] * 3 + [99] * 61)
    with pytest.raises(g.InvalidArgument, match="blocks must be in 1..1024"):
        k.launch(data, x.size, partials, 0, IntWeights(weights=IW, k=0))


def test_checked_reduce_environment_and_auto_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOMPUTE_CHECKED", "1")
    auto = g.AutoKernel(REDUCE)
    assert auto.checked
    with pytest.raises(OutOfBounds, match="p.weights"):
        auto.run(inputs(REDUCE)[0], Weights(weights=W, k=4))
    assert g.Kernel(REDUCE, "cpu").run(np.zeros(0, np.float32), Weights(weights=W, k=9)) == 0

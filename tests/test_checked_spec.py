"""Checked mode for spec kernels (``g.Kernel(spec, backend, checked=True)``,
``GOMPUTE_CHECKED=1``): an elementwise spec's element function and its helpers have every
params-array and local-array access checked, the report naming the kernel, the params
field, the index, the extent and the line; kinds whose entry a backend renders refuse it.
Real kernels on the CPU backend; the oracle is NumPy or the function run as plain Python."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import gompute_core as g
from gompute_core.errors import GomputeWarning, OutOfBounds, Unsupported

HERE = Path(__file__).resolve()


def line_of(marker: str) -> str:
    """``file:line`` of the line of this file that ends with ``# <marker>``."""
    for k, text in enumerate(HERE.read_text().splitlines(), 1):
        if text.rstrip().endswith(f"# {marker}"):
            return f"{HERE}:{k}"
    raise AssertionError(marker)


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


def test_kinds_whose_entry_a_backend_renders_refuse_it(monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    spec = g.map("ck_spec_map", g.f32, Weights, lambda x, p: x * p.weights[p.k])
    with pytest.raises(Unsupported, match="map spec, whose entry each backend renders"):
        g.Kernel(spec, "cpu", checked=True)
    monkeypatch.setenv("GOMPUTE_CHECKED", "1")
    with pytest.warns(GomputeWarning, match="runs unchecked"):
        k = g.Kernel(spec, "cpu")
    assert not k.checked
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(k.run(x.copy(), Weights(weights=W, k=1)), x * 2)

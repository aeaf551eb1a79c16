"""Real programs in one kernel (issue 20) on the CPU backend: the SGEMM port of CuPy's
example and our tuned SGEMM (``bench/sgemm.py``), and the Monte Carlo option pricing port
(``bench/montecarlo.py``), against oracles that run the same arithmetic in Python.

SGEMM's oracle is exact: each element of ``C`` is ``fma(A[i, k], B[k, j], acc)`` folded
over ``k`` ascending with ``g.math.fma`` run as Python (the exact product and sum in
``fractions.Fraction``, rounded once to f32), which is what every thread of both kernels
computes, so the kernels must match it bit for bit. The Monte Carlo oracle is the kernel's
own helper functions run on NumPy scalars (the kernel language is its own oracle); its
``exp``, ``sqrt`` and ``erfcinv`` (whose ``log``/``erfc`` steps) come from Python's libm
where the kernel calls numba's, which the language's contract allows to differ by a few
ulp, hence a 1e-12 relative tolerance there."""

from __future__ import annotations

import importlib.util
import os
import sys
from types import ModuleType

import numpy as np
import pytest

import gompute_core as g

pytest.importorskip("gompute_cpu")
pytest.importorskip("numba")

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")


def _bench(name: str) -> ModuleType:
    """``bench/<name>.py`` imported once per process (its kernels register their names)."""
    key = f"_bench_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, os.path.join(BENCH, f"{name}.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


def _fma_dot(a: np.ndarray, b: np.ndarray, i: int, j: int) -> np.float32:
    """``C[i, j]`` as the kernels compute it: fma over ``k`` ascending, from 0."""
    acc = np.float32(0)
    for k in range(a.shape[1]):
        acc = g.math.fma(a[i, k], b[k, j], acc)
    return acc


@pytest.mark.parametrize(("m", "n", "k"), [(70, 45, 13), (64, 64, 4), (33, 130, 2)],
                         ids=["ragged", "one_tile", "k_below_blk_k"])
def test_sgemm_port_equals_the_fma_oracle_bit_for_bit(m: int, n: int, k: int) -> None:
    sgemm = _bench("sgemm")
    a, b = sgemm.operands(m, n, k, seed=m + n + k)
    af, bf = np.asfortranarray(a), np.asfortranarray(b)
    c = np.full(m * n, np.nan, np.float32)
    kern = g.RawKernel(sgemm.sgemm_port, "cpu")
    grid, block = sgemm.port_launch(m, n)
    kern.launch(grid, block, [np.int32(m), np.int32(n), np.int32(k), af.ravel(order="F"),
                              bf.ravel(order="F"), c])
    kern.synchronize()
    got = c.reshape((m, n), order="F")
    want = np.array([[_fma_dot(a, b, i, j) for j in range(n)] for i in range(m)], np.float32)
    assert np.array_equal(got, want)


def test_sgemm_tuned_equals_the_fma_oracle_bit_for_bit() -> None:
    sgemm = _bench("sgemm")
    m, n, k = 128, 256, 24  # three steps of depth 8: both shared buffers, both twice
    a, b = sgemm.operands(m, n, k, seed=5)
    c = np.full(m * n, np.nan, np.float32)
    kern = g.RawKernel(sgemm.sgemm_tuned, "cpu")
    grid, block = sgemm.tuned_launch(m, n)
    kern.launch(grid, block, [np.int32(m), np.int32(n), np.int32(k), a.ravel(), b.ravel(), c])
    kern.synchronize()
    got = c.reshape(m, n)
    rng = np.random.default_rng(0)  # every element is checked against numpy; 300 exactly
    picks = [(int(i), int(j)) for i, j in zip(rng.integers(0, m, 300), rng.integers(0, n, 300),
                                              strict=True)]
    assert all(got[i, j] == _fma_dot(a, b, i, j) for i, j in picks)
    np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float64), atol=1e-5)


def test_sgemm_numba_reference_is_the_same_fma_loop() -> None:
    """The bench's numba peer (its bit-for-bit reference) against the Python oracle."""
    sgemm = _bench("sgemm")
    a, b = sgemm.operands(20, 17, 9, seed=3)
    c = np.empty((20, 17), np.float32)
    sgemm.fma_reference()(a, b, c)
    want = np.array([[_fma_dot(a, b, i, j) for j in range(17)] for i in range(20)], np.float32)
    assert np.array_equal(c, want)


def _monte_carlo_oracle(mc: ModuleType, s: np.ndarray, x: np.ndarray, t: np.ndarray,
                        n_threads: int, n_samples: int, seed: int) -> np.ndarray:
    """Every element of the output, the kernel's body run on NumPy scalars."""
    r, v = np.float64(mc.RISK_FREE), np.float64(mc.VOLATILITY)
    out = []
    with np.errstate(over="ignore"):  # the generator's u64 arithmetic wraps
        for i in range(len(s) * n_threads):
            o = i // n_threads
            state = g.local_array(g.u64, 2)
            mc.init_state(state, np.int64(i), np.int32(seed))
            v_by_sqrt_t = v * g.math.sqrt(t[o])
            mu_by_t = (r - v * v / 2) * t[o]
            total = np.float64(0)
            for _ in range(n_samples):
                p = mc.sample_normal(state)
                total += mc.get_call_value(s[o], x[o], p, mu_by_t, v_by_sqrt_t)
            out.append(g.math.exp(-r * t[o]) * total / np.int32(n_samples))
    return np.array(out)


def test_monte_carlo_port_equals_its_python_oracle() -> None:
    mc = _bench("montecarlo")
    s, x, t = mc.options(3)
    n_threads, n_samples = 5, 40
    n = 3 * n_threads
    call = np.full(n, np.nan)
    kern = g.RawKernel(mc.monte_carlo, "cpu")
    grid, block = mc.launch_shape(n, 8)
    kern.launch(grid, block, [s, x, t, mc.RISK_FREE, mc.VOLATILITY, np.int32(n_samples),
                              np.int32(7), call, n_threads, n])
    kern.synchronize()
    want = _monte_carlo_oracle(mc, s, x, t, n_threads, n_samples, 7)
    np.testing.assert_allclose(call, want, rtol=1e-12, atol=0)
    assert np.all(call >= 0)


def test_monte_carlo_numba_program_is_the_same_program() -> None:
    """The bench's numba peer gives the kernel's bits (same generator, fmas, erfcinv)."""
    mc = _bench("montecarlo")
    s, x, t = mc.options(4)
    n_threads, n_samples = 16, 30
    n = 4 * n_threads
    ours, peer = np.empty(n), np.empty(n)
    kern = g.RawKernel(mc.monte_carlo, "cpu")
    grid, block = mc.launch_shape(n)
    kern.launch(grid, block, [s, x, t, mc.RISK_FREE, mc.VOLATILITY, np.int32(n_samples),
                              np.int32(0), ours, n_threads, n])
    kern.synchronize()
    mc.numba_program()(s, x, t, mc.RISK_FREE, mc.VOLATILITY, n_samples, 0, peer, n_threads)
    assert np.array_equal(ours, peer)

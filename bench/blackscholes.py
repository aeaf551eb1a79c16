"""Black-Scholes with ``g.elementwise`` against its peers, in one run.

CuPy's example (``examples/finance/black_scholes.py``): three f64 arrays (stock price,
strike, years), two scalars (risk-free rate, volatility), two outputs (call, put), a
cumulative normal distribution helper. Outputs are preallocated for every contender.

* ``--backend cuda`` (a GPU with CuPy): ours, one ``launch`` on device buffers, against
  CuPy's ``ElementwiseKernel`` of the same program, both timed with CUDA events (median of
  20). Target: ratio <= 1.0.
* ``--backend cpu``: ours, ``run`` on NumPy arrays in place, against numba
  ``@njit(parallel=True)`` of the same function (no fast-math, as ours), both on
  ``--threads`` threads (default 2; best of 9 wall times).

Both check that the two agree (bit for bit on the CPU, within 1e-12 relative on the GPU,
where CuPy's NVRTC contracts multiply-adds and ours does not). Run:
``python bench/blackscholes.py --backend cuda [--log2n 24]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]

import gompute_core as g  # noqa: E402

RISK_FREE, VOLATILITY = 0.02, 0.3


def cnd(x):
    """The cumulative normal distribution (Abramowitz-Stegun, as CuPy's example)."""
    a1 = 0.31938153
    a2 = -0.356563782
    a3 = 1.781477937
    a4 = -1.821255978
    a5 = 1.330274429
    rsqrt2pi = 0.39894228040143267793994605993438
    w = 0.2316419
    k = 1.0 / (1.0 + w * abs(x))
    c = rsqrt2pi * g.math.exp(-x * x / 2.0) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))))
    return 1.0 - c if x > 0 else c


def black_scholes(s, x, t, r, v):
    """Call and put prices of one option."""
    sqrt_t = g.math.sqrt(t)
    d1 = (g.math.log(s / x) + (r + v * v / 2.0) * t) / (v * sqrt_t)
    d2 = d1 - v * sqrt_t
    cnd_d1 = cnd(d1)
    cnd_d2 = cnd(d2)
    exp_rt = g.math.exp(-r * t)
    call = s * cnd_d1 - x * exp_rt * cnd_d2
    put = x * exp_rt * (1.0 - cnd_d2) - s * (1.0 - cnd_d1)
    return call, put


BLACK_SCHOLES = g.elementwise("bench_black_scholes", black_scholes,
                              ins=(g.f64, g.f64, g.f64, g.Scalar[g.f64], g.Scalar[g.f64]),
                              outs=(g.f64, g.f64))

CUPY_PREAMBLE = """
__device__ inline T get_cumulative_normal_distribution(T x) {
    const T A1 = 0.31938153;
    const T A2 = -0.356563782;
    const T A3 = 1.781477937;
    const T A4 = -1.821255978;
    const T A5 = 1.330274429;
    const T RSQRT2PI = 0.39894228040143267793994605993438;
    const T W = 0.2316419;
    const T k = 1 / (1 + W * abs(x));
    T cnd = RSQRT2PI * exp(- x * x / 2) * (k * (A1 + k * (A2 + k * (A3 + k * (A4 + k * A5)))));
    if (x > 0) {
        cnd = 1 - cnd;
    }
    return cnd;
}
"""
CUPY_BODY = """
const T sqrt_t = sqrt(t);
const T d1 = (log(s / x) + (r + v * v / 2) * t) / (v * sqrt_t);
const T d2 = d1 - v * sqrt_t;
const T cnd_d1 = get_cumulative_normal_distribution(d1);
const T cnd_d2 = get_cumulative_normal_distribution(d2);
const T exp_rt = exp(- r * t);
call = s * cnd_d1 - x * exp_rt * cnd_d2;
put = x * exp_rt * (1 - cnd_d2) - s * (1 - cnd_d1);
"""


def options(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CuPy's example's inputs: price in [5, 30), strike in [1, 100), years in [0.25, 10)."""
    rng = np.random.default_rng(1)
    return (rng.uniform(5, 30, n), rng.uniform(1, 100, n), rng.uniform(0.25, 10, n))


def best(fn: Callable[[], Any], reps: int = 9) -> float:
    """Best wall time of ``fn()`` over ``reps`` runs after one warm-up."""
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def cpu(n: int, threads: int) -> None:
    import numba
    from numba import njit, prange

    numba.set_num_threads(threads)
    math_exp, math_log, math_sqrt = np.exp, np.log, np.sqrt

    @njit(inline="always")
    def cnd_nb(x):
        k = 1.0 / (1.0 + 0.2316419 * abs(x))
        c = 0.39894228040143267793994605993438 * math_exp(-x * x / 2.0) * (
            k * (0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (
                -1.821255978 + k * 1.330274429)))))
        return 1.0 - c if x > 0 else c

    @njit(parallel=True)
    def bs_numba(s, x, t, r, v, call, put):
        for i in prange(s.size):
            sqrt_t = math_sqrt(t[i])
            d1 = (math_log(s[i] / x[i]) + (r + v * v / 2.0) * t[i]) / (v * sqrt_t)
            d2 = d1 - v * sqrt_t
            cnd_d1, cnd_d2 = cnd_nb(d1), cnd_nb(d2)
            exp_rt = math_exp(-r * t[i])
            call[i] = s[i] * cnd_d1 - x[i] * exp_rt * cnd_d2
            put[i] = x[i] * exp_rt * (1.0 - cnd_d2) - s[i] * (1.0 - cnd_d1)

    s, x, t = options(n)
    call, put = np.empty(n), np.empty(n)
    call_nb, put_nb = np.empty(n), np.empty(n)
    with g.Kernel(BLACK_SCHOLES, "cpu") as k:
        t_ours = best(lambda: k.run(s, x, t, RISK_FREE, VOLATILITY, out=(call, put)))
        t_nb = best(lambda: bs_numba(s, x, t, RISK_FREE, VOLATILITY, call_nb, put_nb))
    same = np.array_equal(call, call_nb) and np.array_equal(put, put_nb)
    print(f"cpu, {threads} threads, n = {n}: ours {t_ours * 1e3:.2f} ms, numba "
          f"{t_nb * 1e3:.2f} ms, ratio {t_ours / t_nb:.3f} (target <= 1.1); bit-identical: "
          f"{same}")


def cuda(n: int) -> None:
    import cupy as cp

    sys.path.insert(0, HERE)
    from benchkit import cupy_events_median

    kernel = cp.ElementwiseKernel("T s, T x, T t, T r, T v", "T call, T put", CUPY_BODY,
                                  "black_scholes_kernel", preamble=CUPY_PREAMBLE)
    s, x, t = (cp.asarray(a) for a in options(n))
    call, put = cp.empty(n), cp.empty(n)
    call_cp, put_cp = cp.empty(n), cp.empty(n)
    with g.Kernel(BLACK_SCHOLES, "cuda") as k:
        bufs = [g.as_buffer(a, "cuda") for a in (s, x, t, call, put)]
        t_ours = cupy_events_median(cp, lambda: k.launch(*bufs[:3], RISK_FREE, VOLATILITY,
                                                         out=tuple(bufs[3:])), reps=20)
        t_arrays = cupy_events_median(cp, lambda: k.launch(s, x, t, RISK_FREE, VOLATILITY,
                                                           out=(call, put)), reps=20)
        t_cp = cupy_events_median(cp, lambda: kernel(s, x, t, RISK_FREE, VOLATILITY, call_cp,
                                                     put_cp), reps=20)
        k.context.synchronize()
    err = max(float(cp.max(cp.abs(call - call_cp) / cp.maximum(cp.abs(call_cp), 1e-300))),
              float(cp.max(cp.abs(put - put_cp) / cp.maximum(cp.abs(put_cp), 1e-300))))
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"cuda ({dev}), n = {n}: ours (buffers) {t_ours * 1e3:.3f} ms, ours (CuPy arrays) "
          f"{t_arrays * 1e3:.3f} ms, CuPy ElementwiseKernel {t_cp * 1e3:.3f} ms; ratio "
          f"{t_ours / t_cp:.3f} (target <= 1.0), on CuPy arrays {t_arrays / t_cp:.3f}; max "
          f"relative difference {err:.2e}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--log2n", type=int, default=24)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    n = 1 << args.log2n
    if args.backend == "cuda":
        cuda(n)
    else:
        cpu(n, args.threads)


if __name__ == "__main__":
    main()

"""Monte Carlo option pricing (CuPy's ``examples/finance/monte_carlo.py``) as a Gompute raw
kernel against the original, in one run.

The original is a ``cupy.ElementwiseKernel`` over the ``(n_options, n_threads_per_option)``
output, its inputs broadcast from ``(n_options, 1)``: each element seeds a xorshift128+
generator with its flat index ``i`` and the seed, draws ``n_samples`` standard normal
samples (a uniform sample folded to ``[0.5, 1]`` and ``-sqrt(2) * erfcinv(2 p)``, signed),
and averages the discounted call values. The port is a raw kernel (the elementwise kind
does not give a function its element's index, which seeds the generator): ``i =
global_id(0)``, the option ``i // n_threads_per_option`` (the broadcast), the generator's
two words in a ``g.local_array(g.u64, 2)`` that the helpers ``init_state``,
``xorshift128plus`` and ``sample_normal`` read and write as the original's do through a
pointer, ``g.math.erfcinv`` for CUDA's ``erfcinv`` and ``g.math.fma`` where NVRTC
contracts the original's multiply-adds (``mu_by_t + v_by_sqrt_t * p`` and ``s * exp(...) -
x``). The sizes are the example's: 1,000 options, 100,000 threads per option, 1,000
samples per thread (``--n-options`` etc. to change them).

* ``--backend cuda`` (a GPU with CuPy, imported only there): ours, one launch on device
  buffers, against the original kernel (its text verbatim) on the same CuPy arrays, both
  writing preallocated ``(n_options, n_threads)`` outputs, CUDA events, median of
  ``--reps`` (3); then both prices (the mean over each option's threads, outside the
  timing) against each other and the Black-Scholes price, as the example reports. The
  results differ by the ulps CUDA's ``erfcinv`` and ours differ by. Target: ratio <= 1.0.
* ``--backend cpu``: ours on the CPU (one flat parallel loop) against a numba
  ``@njit(parallel=True)`` loop of the same program: the same generator, the same fmas
  (the CPU backend's ``llvm.fma`` intrinsic) and the same ``erfcinv`` algorithm (the kernel
  language's, ``gompute_core/frontend/special.py``, compiled by numba with Python's
  ``math`` for ``g.math``), so the two must agree bit for bit; best of ``--reps`` (5),
  interleaved, on ``--threads`` (2). Smaller default sizes (100 options x 200 threads x 200
  samples).

Run: ``python bench/montecarlo.py --backend cuda`` or ``python bench/montecarlo.py``.
"""

from __future__ import annotations

import argparse
import inspect
import math
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]

import gompute_core as g  # noqa: E402

gb = g.builtins
RISK_FREE, VOLATILITY, SEED = 0.02, 0.3, 0


def get_call_value(s, x, p, mu_by_t, v_by_sqrt_t):
    """The call's value at expiry for the normal sample ``p``."""
    call_value = g.math.fma(s, g.math.exp(g.math.fma(v_by_sqrt_t, p, mu_by_t)), -x)
    return call_value if call_value > 0 else 0


def init_state(a, i, seed):
    """The generator's state for element ``i`` (a helper returns a value: 0)."""
    a[0] = g.u64(g.i32(i) + 1)
    a[1] = g.u64(g.i64(0x5C721FD808F616B6) + seed)
    return 0


def xorshift128plus(x):
    """One step of xorshift128+: the next 64 random bits; advances ``x``."""
    s1 = x[0]
    s0 = x[1]
    x[0] = s0
    s1 = s1 ^ (s1 << 23)
    s1 = s1 ^ (s1 >> 17)
    s1 = s1 ^ s0
    s1 = s1 ^ (s0 >> 26)
    x[1] = s1
    return s0 + s1


def sample_uniform(state):
    """A uniform sample in [0, 1]."""
    return g.f64(xorshift128plus(state)) / g.f64(18446744073709551615)  # 2**64 - 1


def sample_normal(state):
    """A sample of N(0, 1)."""
    x = sample_uniform(state)
    s = -1.4142135623730950488016887242097  # -sqrt(2)
    if x > 0.5:
        x = 1 - x
        s = -s
    p = x + 0.5
    return s * g.math.erfcinv(2 * p)


@g.raw_kernel(bounds={"call": "n"})
def monte_carlo(s: g.GlobalPtr[g.f64], x: g.GlobalPtr[g.f64], t: g.GlobalPtr[g.f64],
                r: g.f64, v: g.f64, n_samples: g.i32, seed: g.i32,
                call: g.GlobalPtr[g.f64], n_threads: g.i64, n: g.i64):
    """Element ``i`` of the ``(options, n_threads)`` output: option ``i // n_threads``."""
    rand_state = gb.local_array(g.u64, 2)
    i = gb.global_id(0)
    if i < n:
        o = i // n_threads
        so = s[o]
        xo = x[o]
        to = t[o]
        init_state(rand_state, i, seed)
        call_sum = g.f64(0)
        v_by_sqrt_t = v * g.math.sqrt(to)
        mu_by_t = (r - v * v / 2) * to
        for _ in range(n_samples):
            p = sample_normal(rand_state)
            call_sum += get_call_value(so, xo, p, mu_by_t, v_by_sqrt_t)
        discount_factor = g.math.exp(-r * to)
        call[i] = discount_factor * call_sum / n_samples


CUPY_PREAMBLE = """
typedef unsigned long long uint64_t;

__device__
inline T get_call_value(T s, T x, T p, T mu_by_t, T v_by_sqrt_t) {
    const T call_value = s * exp(mu_by_t + v_by_sqrt_t * p) - x;
    return (call_value > 0) ? call_value : 0;
}

// Initialize state
__device__ inline void init_state(uint64_t* a, int i, int seed) {
    a[0] = i + 1;
    a[1] = 0x5c721fd808f616b6 + seed;
}

__device__ inline uint64_t xorshift128plus(uint64_t* x) {
    uint64_t s1 = x[0];
    uint64_t s0 = x[1];
    x[0] = s0;
    s1 = s1 ^ (s1 << 23);
    s1 = s1 ^ (s1 >> 17);
    s1 = s1 ^ s0;
    s1 = s1 ^ (s0 >> 26);
    x[1] = s1;
    return s0 + s1;
}

// Draw a sample from an uniform distribution in a range of [0, 1]
__device__ inline T sample_uniform(uint64_t* state) {
    const uint64_t x = xorshift128plus(state);
    // 18446744073709551615 = 2^64 - 1
    return T(x) / T(18446744073709551615);
}

// Draw a sample from a normal distribution with N(0, 1)
__device__ inline T sample_normal(uint64_t* state) {
    T x = sample_uniform(state);
    T s = T(-1.4142135623730950488016887242097);  // = -sqrt(2)
    if (x > 0.5) {
        x = 1 - x;
        s = -s;
    }
    T p = x + T(0.5);
    return s * erfcinv(2 * p);
}
"""
CUPY_BODY = """
// We can use special variables i and _ind to get the index of the thread.
// In this case, we used an index as a seed of random sequence.
uint64_t rand_state[2];
init_state(rand_state, i, seed);

T call_sum = 0;
const T v_by_sqrt_t = v * sqrt(t);
const T mu_by_t = (r - v * v / 2) * t;

// compute the price of the call option with Monte Carlo method
for (int i = 0; i < n_samples; ++i) {
    const T p = sample_normal(rand_state);
    call_sum += get_call_value(s, x, p, mu_by_t, v_by_sqrt_t);
}
// convert the future value of the call option to the present value
const T discount_factor = exp(- r * t);
call = discount_factor * call_sum / n_samples;
"""
"""The example's kernel (``monte_carlo_kernel``), verbatim."""


def options(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The example's inputs: price in [5, 30), strike in [1, 100), years in [0.25, 10)."""
    rng = np.random.default_rng(1)
    return rng.uniform(5, 30, n), rng.uniform(1, 100, n), rng.uniform(0.25, 10, n)


def black_scholes_call(s: np.ndarray, x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The exact (Black-Scholes) call price, which the Monte Carlo prices approach."""
    erf = np.vectorize(math.erf)
    d1 = (np.log(s / x) + (RISK_FREE + VOLATILITY ** 2 / 2) * t) / (VOLATILITY * np.sqrt(t))
    d2 = d1 - VOLATILITY * np.sqrt(t)

    def cnd(d: np.ndarray) -> np.ndarray:
        return 0.5 * (1 + erf(d / math.sqrt(2)))

    return s * cnd(d1) - x * np.exp(-RISK_FREE * t) * cnd(d2)


def launch_shape(n: int, block: int = 256) -> tuple[int, int]:
    """Grid and block of a launch over ``n`` elements."""
    return -(-n // block), block


def numba_program() -> Callable[..., None]:
    """The same program as a numba ``prange`` loop: ``run(s, x, t, r, v, n_samples, seed,
    call, n_threads)``. Its ``erfcinv`` is the kernel language's own code
    (``gompute_core.frontend.special``) compiled by numba, ``g.math`` read as Python's
    ``math``: the same algorithm on the same libm."""
    import numba
    from gompute_cpu.fma import fma_f64
    from numba import njit, prange

    from gompute_core.frontend import special

    source = inspect.getsource(special).replace("gm.math.", "math.").replace(
        "from . import kmath as gm\n", "")
    space: dict[str, Any] = {"math": math, "__name__": "numba_special"}
    exec(compile(source, special.__file__, "exec"), space)  # noqa: S102
    for name, value in list(space.items()):
        if inspect.isfunction(value) and value.__module__ == "numba_special":
            space[name] = njit(inline="always", error_model="numpy")(value)
    erfcinv = space["erfcinv_f64"]
    u64 = np.uint64

    @njit(inline="always", error_model="numpy")
    def sample_normal_nb(a0: np.uint64, a1: np.uint64) -> tuple[float, np.uint64, np.uint64]:
        s1, s0 = a0, a1
        s1 = s1 ^ (s1 << u64(23))
        s1 = s1 ^ (s1 >> u64(17))
        s1 = s1 ^ s0
        s1 = s1 ^ (s0 >> u64(26))
        x = np.float64(s0 + s1) / np.float64(18446744073709551615)
        s = -1.4142135623730950488016887242097
        if x > 0.5:
            x = 1 - x
            s = -s
        p = x + 0.5
        return s * erfcinv(2 * p), s0, s1

    @njit(parallel=True, error_model="numpy", boundscheck=False)
    def run(s: np.ndarray, x: np.ndarray, t: np.ndarray, r: float, v: float, n_samples: int,
            seed: int, call: np.ndarray, n_threads: int) -> None:
        for i in prange(call.size):
            o = i // n_threads
            so, xo, to = s[o], x[o], t[o]
            a0 = u64(np.int32(i) + np.int32(1))
            a1 = u64(np.int64(0x5C721FD808F616B6) + seed)
            call_sum = 0.0
            v_by_sqrt_t = v * np.sqrt(to)
            mu_by_t = (r - v * v / 2) * to
            for _ in range(n_samples):
                p, a0, a1 = sample_normal_nb(a0, a1)
                value = fma_f64(so, np.exp(fma_f64(v_by_sqrt_t, p, mu_by_t)), -xo)
                call_sum += value if value > 0 else 0.0
            call[i] = np.exp(-r * to) * call_sum / n_samples

    del numba
    return run


def cpu(n_options: int, n_threads: int, n_samples: int, threads: int, reps: int) -> None:
    import numba

    sys.path.insert(0, HERE)
    from benchkit import interleaved_best

    numba.set_num_threads(threads)
    s, x, t = options(n_options)
    n = n_options * n_threads
    ours, peer = np.empty(n), np.empty(n)
    k = g.RawKernel(monte_carlo, "cpu")
    grid, block = launch_shape(n)
    args = [s, x, t, RISK_FREE, VOLATILITY, np.int32(n_samples), np.int32(SEED), ours,
            n_threads, n]
    run = numba_program()
    best = interleaved_best({
        "numba": lambda: run(s, x, t, RISK_FREE, VOLATILITY, n_samples, SEED, peer, n_threads),
        "ours": lambda: (k.launch(grid, block, args), k.synchronize())}, reps)
    same = np.array_equal(ours, peer)
    price = ours.reshape(n_options, n_threads).mean(axis=1)
    err = float(np.std(price - black_scholes_call(s, x, t)))
    print(f"cpu, {threads} numba threads, {n_options} options x {n_threads} threads x "
          f"{n_samples} samples, best of {reps} (interleaved): ours "
          f"{best['ours'] * 1e3:.1f} ms, numba {best['numba'] * 1e3:.1f} ms, ratio "
          f"{best['ours'] / best['numba']:.2f}; bit-identical: {same}; std of the error "
          f"against Black-Scholes {err:.4f}")
    if not same:
        raise SystemExit("the raw kernel and the numba program differ")


def cuda(n_options: int, n_threads: int, n_samples: int, reps: int) -> None:
    import cupy as cp

    sys.path.insert(0, HERE)
    from benchkit import cupy_events_median

    kernel = cp.ElementwiseKernel(
        "T s, T x, T t, T r, T v, int32 n_samples, int32 seed", "T call", CUPY_BODY,
        preamble=CUPY_PREAMBLE)
    s, x, t = (cp.asarray(a) for a in options(n_options))
    call_cp = cp.empty((n_options, n_threads), cp.float64)
    call_ours = cp.empty((n_options, n_threads), cp.float64)
    n = n_options * n_threads
    k = g.RawKernel(monte_carlo, "cuda")
    grid, block = launch_shape(n)
    args = [*(g.as_buffer(a, "cuda") for a in (s, x, t)), RISK_FREE, VOLATILITY,
            np.int32(n_samples), np.int32(SEED), g.as_buffer(call_ours.ravel(), "cuda"),
            n_threads, n]
    t_cp = cupy_events_median(cp, lambda: kernel(s[:, None], x[:, None], t[:, None],
                                                 RISK_FREE, VOLATILITY, n_samples, SEED,
                                                 call_cp), reps=reps)
    t_ours = cupy_events_median(cp, lambda: k.launch(grid, block, args), reps=reps)
    k.synchronize()
    price_cp = cp.asnumpy(call_cp.mean(axis=1))
    price_ours = cp.asnumpy(call_ours.mean(axis=1))
    exact = black_scholes_call(*(cp.asnumpy(a) for a in (s, x, t)))
    rel = float(cp.max(cp.abs(call_ours - call_cp) / cp.maximum(cp.abs(call_cp), 1e-300)))
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"cuda ({dev}), {n_options} options x {n_threads} threads x {n_samples} samples, "
          f"CUDA events, median of {reps}: ours {t_ours * 1e3:.1f} ms, CuPy "
          f"ElementwiseKernel {t_cp * 1e3:.1f} ms: ratio {t_ours / t_cp:.3f} (target <= 1.0)")
    print(f"  prices: max |ours - CuPy's| {np.max(np.abs(price_ours - price_cp)):.2e}, max "
          f"relative difference of the per-thread values {rel:.2e}; std of the error "
          f"against Black-Scholes: ours {np.std(price_ours - exact):.6f}, CuPy's "
          f"{np.std(price_cp - exact):.6f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--n-options", type=int, default=None, help="cpu 100, cuda 1000")
    ap.add_argument("--n-threads-per-option", type=int, default=None,
                    help="cpu 200, cuda 100000")
    ap.add_argument("--n-samples-per-thread", type=int, default=None, help="cpu 200, cuda 1000")
    ap.add_argument("--threads", type=int, default=2, help="cpu: numba threads")
    ap.add_argument("--reps", type=int, default=None, help="timed runs (cpu 5, cuda 3)")
    args = ap.parse_args()
    if args.backend == "cuda":
        cuda(args.n_options or 1000, args.n_threads_per_option or 100_000,
             args.n_samples_per_thread or 1000, args.reps or 3)
    else:
        cpu(args.n_options or 100, args.n_threads_per_option or 200,
            args.n_samples_per_thread or 200, args.threads, args.reps or 5)


if __name__ == "__main__":
    main()

"""``g.math.erfinv`` / ``g.math.erfcinv`` (and ``erfc``): the oracle against a 40-digit
reference computed here with :mod:`decimal` (series and continued fraction, Newton's
method), the lowering to the one kernel-language definition, the CPU kernels against the
oracle, and the GPU renderings through NVRTC and hiprtc."""

from __future__ import annotations

import decimal
from decimal import Decimal

import numpy as np
import pytest

import gompute_core as g
from gompute_core.frontend import lower
from gompute_core.ir.nodes import CallFunction, Cast
from gompute_core.testing._support import ulp_distance

F16, F32, F64 = np.float16, np.float32, np.float64
_CTX = decimal.Context(prec=45)
_PI = Decimal("3.14159265358979323846264338327950288419716939937510")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GOMPUTE_CACHE_DIR", str(tmp_path / "cache"))


def _erfc(x: Decimal) -> Decimal:
    """erfc(x) to about 40 digits: the Taylor series of erf below 3, the continued fraction
    of erfc above."""
    with decimal.localcontext(_CTX):
        if x < 3:
            term, total, n = x, x, 0
            x2 = x * x
            while abs(term) > Decimal(10) ** -60:
                n += 1
                term = -term * x2 / n
                total += term / (2 * n + 1)
            return 1 - 2 / _PI.sqrt() * total
        # erfc(x) = exp(-x^2)/sqrt(pi) * 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
        f = x
        for k in range(400, 0, -1):
            f = x + Decimal(k) / 2 / f
        return (-x * x).exp() / _PI.sqrt() / f


def _erfcinv_ref(z: float) -> Decimal:
    """The x with erfc(x) = z (0 < z < 2), by Newton's method in 45 digits from the
    oracle's value."""
    if z > 1:
        return -_erfcinv_ref(2.0 - z)  # 2 - z is exact
    return _newton(Decimal(z), Decimal(float(g.math.erfcinv(z))))


def _newton(zd: Decimal, x: Decimal) -> Decimal:
    with decimal.localcontext(_CTX):
        for _ in range(4):
            x = x + (_erfc(x) - zd) / (2 / _PI.sqrt() * (-x * x).exp())
        return x


def _ulps(got: float, want: Decimal, t: type) -> float:
    return float(ulp_distance(np.array([got], t), np.array([float(want)], t))[0])


TAIL_Z = [0.5, 0.3, 0.1, 1e-3, 1e-7, 1.1e-7, 9e-8, 1e-12, 1e-20, 1e-50, 1e-100, 1e-200,
          1e-300, 2.3e-308]
CENTRAL_Y = [1e-300, 1e-20, 1e-8, 0.001, 0.1, 0.25, 0.4999, 0.5, 0.6, 0.9, 0.99, 0.999999,
             1 - 2.0 ** -40, 1 - 2.0 ** -53]


@pytest.mark.parametrize("z", TAIL_Z + [1.0, 1.2, 1.9, 2 - 1e-10])
def test_erfcinv_oracle_is_within_three_ulps_of_the_reference(z: float) -> None:
    got = g.math.erfcinv(F64(z))
    assert type(got) is F64
    assert _ulps(got, _erfcinv_ref(z), F64) <= 3


def test_erfcinv_is_within_three_ulps_across_the_fit() -> None:
    """300 arguments spread over Giles' three polynomials and the tail below them (uniform
    in [0, 1], and log-uniform from 1e-20)."""
    rng = np.random.default_rng(20261205)
    zs = np.concatenate([rng.uniform(0, 1, 150), 10.0 ** rng.uniform(-20, 0, 150)])
    worst = max(_ulps(g.math.erfcinv(F64(z)), _erfcinv_ref(float(z)), F64) for z in zs if z)
    assert worst <= 3


@pytest.mark.parametrize("y", CENTRAL_Y + [-v for v in CENTRAL_Y[:6]])
def test_erfinv_oracle_is_within_three_ulps_of_the_reference(y: float) -> None:
    with decimal.localcontext(_CTX):
        z = 1 - Decimal(abs(y))  # exact: erfinv(y) = erfcinv(1 - y)
        ref = _newton(z, Decimal(float(g.math.erfinv(abs(y)))))
    got = g.math.erfinv(F64(y))
    assert _ulps(got, ref if y >= 0 else -ref, F64) <= 3


@pytest.mark.parametrize("t", [F32, F16])
def test_narrow_types_are_the_double_result_rounded(t: type) -> None:
    rng = np.random.default_rng(8)
    tiny = float(np.finfo(t).smallest_subnormal)
    zs = np.concatenate([rng.uniform(0, 2, 300), [tiny, 2 * tiny, 1e-30, 1e-7]]).astype(t)
    zs = zs[zs > 0]
    for z in zs:
        got = g.math.erfcinv(z)
        assert type(got) is t
        assert _ulps(got, _erfcinv_ref(float(z)), t) <= 1


def test_special_values() -> None:
    e, ec = g.math.erfinv, g.math.erfcinv
    assert e(F64(1)) == np.inf and e(F64(-1)) == -np.inf and ec(F64(0)) == np.inf
    assert ec(F64(2)) == -np.inf and ec(F64(1)) == 0.0 and e(F64(0)) == 0.0
    assert np.signbit(e(F64(-0.0)))
    for bad in (1.5, -1.0000001, np.nan):
        assert np.isnan(e(F64(bad)))
    for bad in (-1e-300, 2.5, np.nan):
        assert np.isnan(ec(F64(bad)))
    assert type(e(np.int32(0))) is F64 and type(ec(F32(1))) is F32


def test_erfc_oracle_is_pythons_in_double() -> None:
    import math

    assert g.math.erfc(F32(0.5)) == F32(math.erfc(0.5))
    assert g.math.erfc(F64(10.0)) == math.erfc(10.0)


# ---- lowering ----------------------------------------------------------------------
def test_erfinv_lowers_to_the_one_library_function_on_doubles() -> None:
    fns = lower(lambda x: g.math.erfinv(x), [F32], None, "k")
    main = fns[-1]
    (ret,) = main.body
    assert isinstance(ret.value, Cast) and ret.value.type is F32
    call = ret.value.value
    assert isinstance(call, CallFunction) and call.func == "k_erfinv_f64"
    assert isinstance(call.args[0], Cast) and call.args[0].type is F64
    assert main.ret is F32 and fns[-2].name == "k_erfinv_f64"
    (k64,) = [f for f in lower(lambda x: g.math.erfcinv(x), [F64], None, "k")
              if f.name == "k"]
    assert k64.ret is F64 and isinstance(k64.body[0].value, CallFunction)


# ---- kernels ------------------------------------------------------------------------
def erfinv_k(a, b):
    return g.math.erfinv(a) + g.math.erfcinv(b)


def _inputs(t: type) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(9)
    a = rng.uniform(-1, 1, 3000)
    b = rng.uniform(0, 2, 3000)
    b[:len(TAIL_Z)] = TAIL_Z
    a[:len(CENTRAL_Y)] = CENTRAL_Y
    a[-4:] = [1.0, -1.0, 0.0, np.nan]
    b[-4:] = [1.0, 1.0, 1.0, 2.0]
    return a.astype(t), b.astype(t)


@pytest.mark.parametrize("t", [F32, F64])
def test_cpu_kernel_equals_the_oracle(t: type) -> None:
    pytest.importorskip("gompute_cpu")
    spec = g.zip(f"tspecial_{np.dtype(t).name}", t, t, t, None, erfinv_k)
    a, b = _inputs(t)
    out = np.zeros_like(a)
    with g.Kernel(spec, "cpu") as k:
        k.run(a, b, out)
    with np.errstate(all="ignore"):
        want = np.array([erfinv_k(x, y) for x, y in zip(a, b, strict=True)], t)
    assert np.all(ulp_distance(out, want) <= 4)


def test_gpu_renderings_compile() -> None:
    spec = g.zip("tspecial_gpu", F32, F32, F32, None, erfinv_k)
    try:
        art = g.compile(spec, "cuda", arch="sm_90")
        assert "erfc(" in art.source and "_erfinv_f64(" in art.source
    except (ImportError, g.BackendUnavailable, g.UnsupportedBackend) as exc:
        pytest.skip(f"no CUDA compiler: {exc}")
    try:
        art = g.compile(spec, "hip", arch="gfx90a")
        assert "erfc(" in art.source
    except (ImportError, g.BackendUnavailable, g.UnsupportedBackend) as exc:
        pytest.skip(f"no HIP compiler: {exc}")

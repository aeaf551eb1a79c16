"""``g.math.fma`` (one rounding, the same bits everywhere) and the per-kernel opt-in to
contraction and compiler options (``contract=``, ``options=`` on ``g.Kernel``,
``g.compile`` and ``g.RawKernel``).

The oracle's rounding is checked against NumPy's own conversions and its fma against
Dekker's exact product (an independent exact algorithm); the CPU kernels against the
oracle bit for bit; the CUDA and HIP builds by their options and NVRTC's PTX.
"""

from __future__ import annotations

import ctypes
import json
import re
from fractions import Fraction

import numpy as np
import pytest

import gompute_core as g
from gompute_core.errors import GomputeWarning, InvalidArgument
from gompute_core.frontend import lower
from gompute_core.frontend.kmath import round_exact
from gompute_core.ir.nodes import CallIntrinsic
from gompute_core.ir.printer import format_kernel

F16, F32, F64 = np.float16, np.float32, np.float64


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GOMPUTE_CACHE_DIR", str(tmp_path / "cache"))


def _bits(x: np.ndarray | np.generic) -> np.ndarray:
    a = np.asarray(x)
    return a.view(f"u{a.dtype.itemsize}")


# ---- the oracle ----------------------------------------------------------------------
@pytest.mark.parametrize("t", [F16, F32])
def test_round_exact_is_numpys_single_rounding_of_a_double(t: type) -> None:
    """Rounding a double's exact value once equals NumPy's (correctly rounded) conversion,
    subnormals, ties and overflow included."""
    rng = np.random.default_rng(3)
    info = np.finfo(t)
    scale = 2.0 ** rng.integers(int(info.minexp) - int(info.nmant) - 3, int(info.maxexp) + 2,
                                4000)
    d = rng.uniform(-2, 2, 4000) * scale
    ties = (rng.integers(1, 2 ** 11, 200) * 2 + 1) * 2.0 ** -12  # halfway between f16s
    d = np.concatenate([d, ties, -ties, [float(info.max) * (1 + 2.0 ** -(info.nmant + 2))]])
    with np.errstate(over="ignore"):
        want = d.astype(t)
    got = np.array([round_exact(Fraction(float(x)), t) for x in d], t)
    assert np.array_equal(_bits(got), _bits(want))


def test_round_exact_f64_is_pythons_fraction_to_float() -> None:
    rng = np.random.default_rng(4)
    for _ in range(2000):
        q = Fraction(int(rng.integers(1, 2 ** 62)), int(rng.integers(1, 2 ** 62)))
        q *= Fraction(2) ** int(rng.integers(-1100, 1000))
        want = float(q) if q < Fraction(2) ** 1023 else None
        if want is not None:
            assert round_exact(q, F64) == want and round_exact(-q, F64) == -want


def _two_product_error(a: float, b: float) -> float:
    """Dekker's exact rounding error of ``a * b`` in double (Veltkamp splitting): equals
    ``fma(a, b, -(a * b))`` exactly when nothing overflows or underflows."""
    def split(x: float) -> tuple[float, float]:
        c = 134217729.0 * x  # 2**27 + 1
        hi = c - (c - x)
        return hi, x - hi

    p = a * b
    ah, al = split(a)
    bh, bl = split(b)
    return ((ah * bh - p) + ah * bl + al * bh) + al * bl


def test_fma_oracle_is_dekkers_exact_product_error() -> None:
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, 3000) * 2.0 ** rng.integers(-200, 200, 3000)
    b = rng.uniform(-1, 1, 3000) * 2.0 ** rng.integers(-200, 200, 3000)
    differs = 0
    for x, y in zip(a, b, strict=True):
        got = g.math.fma(F64(x), F64(y), -(F64(x) * F64(y)))
        assert got == _two_product_error(float(x), float(y))
        differs += got != 0.0
    assert differs > 2500  # a * b - a * b would be 0 everywhere


def test_fma_oracle_known_values() -> None:
    # one rounding where two roundings meet a tie: 1 + 2**-23 + (2**-24 - 2**-60) is just
    # below the midpoint 1 + 1.5 * 2**-23 (f32) and rounds down; through double it would
    # land on the midpoint and round to even, up
    a, b = F32(2.0 ** -6 * (1 + 2.0 ** -18)), F32(2.0 ** -18 * (1 - 2.0 ** -18))
    c = F32(1 + 2.0 ** -23)
    assert g.math.fma(a, b, c) == c
    assert F32(float(a) * float(b) + float(c)) != c
    x = F32(1 + 2.0 ** -12)
    assert g.math.fma(x, x, F32(-1)) == F32(2.0 ** -11 + 2.0 ** -24)
    assert x * x - F32(1) == F32(2.0 ** -11)
    big = F64(2.0 ** 512)  # the product overflows, the exact sum does not
    assert g.math.fma(big, big, -np.finfo(F64).max) == 2.0 ** 971
    assert np.isinf(g.math.fma(F32(3e38), F32(3), F32(-3e38)))
    assert g.math.fma(F64(1e-300), F64(1e-300), F64(0)) == 0.0
    assert np.signbit(g.math.fma(F64(-1e-300), F64(1e-300), F64(0)))  # -tiny rounds to -0
    assert np.signbit(g.math.fma(F16(-0.0), F16(1), F16(-0.0)))
    assert not np.signbit(g.math.fma(F16(-0.0), F16(1), F16(0.0)))
    assert not np.signbit(g.math.fma(F64(2), F64(3), F64(-6)))  # exact cancellation: +0
    assert np.isnan(g.math.fma(F64(np.inf), F64(0), F64(1)))
    assert g.math.fma(F64(1e300), F64(1e300), F64(-np.inf)) == -np.inf
    assert np.isnan(g.math.fma(F64(np.inf), F64(1), F64(-np.inf)))


def test_fma_promotes_like_the_other_math_functions() -> None:
    assert type(g.math.fma(F32(1), 2.0, 3)) is F32
    assert type(g.math.fma(F16(1), F16(2), F32(3))) is F32
    assert type(g.math.fma(1, 2, 3)) is F64
    assert type(g.math.fma(F32(1), np.int32(2), F32(3))) is F64


# ---- lowering -------------------------------------------------------------------------
def test_fma_lowers_to_one_intrinsic_of_the_promoted_type() -> None:
    (k,) = lower(lambda a, b: g.math.fma(a, b, 2.0), [F32, F32], None, "k")
    (call,) = [n for n in _walk(k.body) if isinstance(n, CallIntrinsic)]
    assert call.func == "fma" and call.type is F32 and len(call.args) == 3
    (k,) = lower(lambda a, b: g.math.fma(a, b, np.int32(1)), [F32, F32], None, "k")
    (call,) = [n for n in _walk(k.body) if isinstance(n, CallIntrinsic)]
    assert call.type is F64 and all(a.type is F64 for a in call.args)


def test_fma_takes_three_arguments() -> None:
    with pytest.raises(g.KernelSyntaxError, match="takes 3 arguments"):
        lower(lambda a, b: g.math.fma(a, b), [F32, F32], None, "k")


def _walk(obj: object) -> list[object]:
    out: list[object] = [obj]
    if isinstance(obj, tuple):
        for x in obj:
            out.extend(_walk(x))
    elif hasattr(obj, "__dataclass_fields__"):
        for f in obj.__dataclass_fields__:
            out.extend(_walk(getattr(obj, f)))
    return out


# ---- the CPU backend ------------------------------------------------------------------
def fma_error(a, b):
    return g.math.fma(a, b, -(a * b))


def fma_square(a, b):
    return g.math.fma(a, a, b)


def mad(a, b):
    return a * b + b


def _inputs(t: type, n: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(6)
    a = rng.uniform(-30, 30, n).astype(t)
    b = rng.uniform(-30, 30, n).astype(t)
    a[:6] = [np.inf, -np.inf, np.nan, 0.0, -0.0, np.finfo(t).max]
    b[:6] = [0.0, 2.0, 1.0, -0.0, -0.0, 2.0]
    return a, b


@pytest.mark.parametrize("t", [F32, F64])
@pytest.mark.parametrize("fn", [fma_error, fma_square])
def test_cpu_fma_equals_the_oracle_bit_for_bit(t: type, fn: object) -> None:
    pytest.importorskip("gompute_cpu")
    spec = g.zip(f"tfma_{fn.__name__}_{np.dtype(t).name}", t, t, t, None, fn)
    a, b = _inputs(t)
    out = np.zeros_like(a)
    with g.Kernel(spec, "cpu") as k:
        k.run(a, b, out)
    with np.errstate(all="ignore"):
        want = np.array([fn(x, y) for x, y in zip(a, b, strict=True)], t)
        twice = a * b - a * b if fn is fma_error else a * a + b
    same_nan = np.isnan(out) & np.isnan(want)
    assert np.array_equal(_bits(out)[~same_nan], _bits(want)[~same_nan])
    assert np.count_nonzero((out != twice) & np.isfinite(twice)) > 100


def test_contraction_is_opt_in_per_kernel() -> None:
    """By default ``a * b + b`` rounds twice, as the oracle; with ``contract=True`` each
    element is the unfused or the fused value (the CPU fuses where it has an FMA
    instruction), and the two kernels are distinct artifacts."""
    pytest.importorskip("gompute_cpu")
    spec = g.zip("tfma_mad_f32", F32, F32, F32, None, mad)
    a, b = _inputs(F32)
    a, b = a[6:], b[6:]
    plain = a * b + b
    fused = np.array([g.math.fma(x, y, y) for x, y in zip(a, b, strict=True)], F32)
    out = np.zeros_like(a)
    with g.Kernel(spec, "cpu") as k:
        k.run(a, b, out)
        default_source = k.artifact.source
    assert np.array_equal(out, plain)
    with g.Kernel(spec, "cpu", contract=True) as k:
        k.run(a, b, out)
        assert k.kernel_ir.contract and k.kernel_ir.digest() != spec.lower().digest()
        assert 'fastmath={"contract"}' in k.artifact.source
    assert 'fastmath={"contract"}' not in default_source
    assert np.all((out == plain) | (out == fused))
    assert "contract = True" in format_kernel(_contracted(spec))
    assert "contract" not in format_kernel(spec.lower())


def _host() -> str:
    from gompute_cpu.plugin import host_arch

    return host_arch()


def _contracted(spec: object) -> object:
    from gompute_core.runtime.compile import contracted

    return contracted(spec.lower(), True, "test")  # type: ignore[attr-defined]


def test_contract_and_options_are_checked() -> None:
    pytest.importorskip("gompute_cpu")
    spec = g.zip("tfma_checked", F32, F32, F32, None, mad)
    with pytest.raises(InvalidArgument, match="contract must be True or False"):
        g.Kernel(spec, "cpu", contract=1)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="not a string"):
        g.Kernel(spec, "cpu", options="--fmad=true")
    with pytest.raises(InvalidArgument, match="not a non-empty string"):
        g.compile(spec, "cpu", arch=_host(), options=[3])  # type: ignore[list-item]
    with pytest.raises(InvalidArgument, match="takes no compiler options"):
        g.Kernel(spec, "cpu", options=["-O3"])
    with pytest.raises(InvalidArgument, match="contract must be True or False"):
        g.RawKernel(raw_fma, "cpu", contract="yes")  # type: ignore[arg-type]


@g.raw_kernel(block=64)
def raw_fma(a: g.GlobalPtr[g.f64], b: g.GlobalPtr[g.f64], out: g.GlobalPtr[g.f64], n: g.u64):
    i = g.builtins.global_id(0)
    if i < n:
        out[i] = g.math.fma(a[i], b[i], -(a[i] * b[i]))


def test_raw_kernel_fma_and_contract_on_cpu() -> None:
    pytest.importorskip("gompute_cpu")
    a, b = _inputs(F64, 1000)
    with np.errstate(all="ignore"):
        want = np.array([fma_error(x, y) for x, y in zip(a, b, strict=True)], F64)
    for contract in (False, True):
        k = g.RawKernel(raw_fma, "cpu", contract=contract)
        assert k.kernel_ir.contract is contract
        bufs = [k.alloc(a.size, g.f64) for _ in range(3)]
        bufs[0].upload(a)
        bufs[1].upload(b)
        k.launch(g.Dim3.linear(a.size, 64), 64, [*bufs, np.uint64(a.size)])
        k.synchronize()
        out = np.empty_like(a)
        bufs[2].download(out)
        ok = np.isnan(out) & np.isnan(want)
        assert np.array_equal(_bits(out)[~ok], _bits(want)[~ok])  # fma never contracts away


# ---- GPU compilers (no device) --------------------------------------------------------
def _ptx(source: str, options: tuple[str, ...]) -> str:
    """``source`` compiled to compute_90 PTX with ``options`` (skipped without NVRTC)."""
    from gompute_cuda.nvrtc import load_nvrtc

    from gompute_core.errors import BackendUnavailable

    try:
        lib = load_nvrtc().lib
    except BackendUnavailable as exc:
        pytest.skip(f"no NVRTC: {exc}")
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"k.cu", 0, None,
                                  None) == 0
    try:
        opts = [b"--gpu-architecture=compute_90", *(o.encode() for o in options)]
        assert lib.nvrtcCompileProgram(prog, len(opts),
                                       (ctypes.c_char_p * len(opts))(*opts)) == 0
        size = ctypes.c_size_t()
        assert lib.nvrtcGetPTXSize(prog, ctypes.byref(size)) == 0
        ptx = ctypes.create_string_buffer(size.value)
        assert lib.nvrtcGetPTX(prog, ptx) == 0
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return ptx.value.decode()


@pytest.mark.parametrize("t", [F16, F32, F64])
def test_cuda_fma_is_one_fused_instruction_and_contraction_is_opt_in(t: type) -> None:
    pytest.importorskip("gompute_cuda")
    from gompute_cuda.compiler import base_options

    name = np.dtype(t).name
    ptx_type = {"float16": "f64", "float32": "f32", "float64": "f64"}[name]
    spec = g.zip(f"tfma_cuda_{name}", t, t, t, None, fma_square)
    art = g.compile(spec, "cuda", arch="sm_90")
    assert "--fmad=false" in dict(art.extra)["options"]
    assert re.search(rf"\bfma\.rn\.{ptx_type}\b", _ptx(art.source, base_options(spec.lower())))
    mad_spec = g.zip(f"tfma_cuda_mad_{name}", t, t, t, None, mad)
    plain = g.compile(mad_spec, "cuda", arch="sm_90")
    fused = g.compile(mad_spec, "cuda", arch="sm_90", contract=True)
    assert "--fmad=true" in dict(fused.extra)["options"] and plain.image != fused.image
    if t is F16:  # each f16 product is rounded to f16 before the sum: nothing to fuse
        return
    f = "f32" if t is F32 else "f64"
    assert not re.search(rf"\bfma\.rn\.{f}\b", _ptx(plain.source, base_options(mad_spec.lower())))
    assert re.search(rf"\bfma\.rn\.{f}\b",
                     _ptx(fused.source, base_options(_contracted(mad_spec))))  # type: ignore[arg-type]


def test_cuda_options_reach_nvrtc_and_the_cache_key() -> None:
    pytest.importorskip("gompute_cuda")
    spec = g.zip("tfma_cuda_opts", F32, F32, F32, None, mad)
    plain = g.compile(spec, "cuda", arch="sm_90")
    lined = g.compile(spec, "cuda", arch="sm_90", options=["--generate-line-info"])
    assert dict(lined.extra)["options"].endswith("--generate-line-info")
    assert "--generate-line-info" not in dict(plain.extra)["options"]
    assert lined.image != plain.image


def test_hip_contraction_and_options() -> None:
    pytest.importorskip("gompute_hip")
    from gompute_hip.libs import hiprtc

    from gompute_core.errors import BackendUnavailable

    try:
        hiprtc()
    except BackendUnavailable as exc:
        pytest.skip(f"hiprtc unavailable: {exc}")
    spec = g.zip("tfma_hip_mad", F32, F32, F32, None, mad)
    plain = g.compile(spec, "hip", arch="gfx90a")
    fused = g.compile(spec, "hip", arch="gfx90a", contract=True, options=["-O2"])
    assert "-ffp-contract=off" in dict(plain.extra)["options"]
    assert "-ffp-contract=fast" in dict(fused.extra)["options"]
    assert dict(fused.extra)["options"].endswith("-O2") and plain.image != fused.image
    art = g.compile(g.zip("tfma_hip_f16", F16, F16, F16, None, fma_square), "hip", arch="gfx90a")
    assert "gp_h2f(gp_d2h(fma((double)(" in art.source


def test_prebuilt_artifacts_record_options_and_contract(tmp_path) -> None:
    """A manifest says which options and contraction it was built with; a kernel asking
    for others compiles instead of loading it (with a warning)."""
    pytest.importorskip("gompute_cpu")
    from gompute_core.runtime.compile import contracted, find_prebuilt, write_artifact

    spec = g.zip("tfma_prebuilt", F32, F32, F32, None, mad)
    kir = contracted(spec.lower(), True, "test")
    art = g.compile(spec, "cpu", arch=_host(), contract=True)
    manifest = write_artifact(tmp_path, art, kir)
    assert json.loads(manifest.read_text())["contract"] is True
    assert find_prebuilt(kir, "cpu", _host(), tmp_path) is not None
    with pytest.warns(GomputeWarning, match="built with options"):
        assert find_prebuilt(kir, "cpu", _host(), tmp_path, ("-O2",)) is None
    with pytest.warns(GomputeWarning, match="IR digest differs"):
        assert find_prebuilt(spec.lower(), "cpu", _host(), tmp_path) is None


def test_contract_reaches_a_reduce_presets_reassociated_functions() -> None:
    pytest.importorskip("gompute_cpu")
    spec = g.sum("tfma_sum", F32, None)
    x = np.arange(1000, dtype=F32)
    with g.Kernel(spec, "cpu", contract=True) as k:
        assert k.run(x) == F32(499500)
        assert 'fastmath={"reassoc", "contract"}' in k.artifact.source

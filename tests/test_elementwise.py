"""The elementwise kind (``g.elementwise``) against NumPy: several inputs and outputs,
scalars, broadcasting, strided views (negative strides, transposes, column slices) read
and written in place, 0-d and empty arrays, output allocation, every scalar type, launch
on buffers, and the refusals. CPU always; OpenCL (PoCL), CUDA and HIP where they run."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gompute_core as g
from gompute_core.errors import BackendUnavailable, UnsupportedBackend
from gompute_core.plugins import manager

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "gompute-opencl"
BACKENDS = ("cpu", "opencl", "cuda", "hip")  # opencl items run in a process of their own
_ids = itertools.count()


def uname(base: str = "ew") -> str:
    return f"{base}_{next(_ids)}"


@pytest.fixture(scope="module", autouse=True)
def registry() -> Iterator[None]:
    """The installed backends plus the OpenCL example where it imports."""
    with manager.isolated(discover=True):
        if "opencl" not in {r.name for r in manager.backends()}:
            sys.path.insert(0, str(EXAMPLE))
            try:
                from gompute_opencl import plugin
            except ImportError:
                plugin = None
            finally:
                sys.path.remove(str(EXAMPLE))
            if plugin is not None:
                manager.register(plugin, "opencl")
        yield


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name = request.param
    try:
        avail = manager.probe(name)
    except (UnsupportedBackend, BackendUnavailable) as exc:
        pytest.skip(f"{name}: {exc}")
    if not avail.available:
        pytest.skip(f"{name} unavailable: {avail.reason}")
    return name


def fma3(a, b, c):
    return a * b + c


def sum_diff(a, b):
    return a + b, a - b


def axpb(a, x, b):
    return a * x + b


AXPB = g.elementwise("ew_axpb", axpb, ins=(g.Scalar[g.f32], g.f32, g.f32), outs=g.f32)


def oracle(fn: Any, ins: list[Any], out_types: list[Any]) -> list[np.ndarray]:
    """``fn`` run as plain Python on NumPy scalars of the broadcast inputs."""
    arrays = [np.asarray(a) for a in ins]
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    outs = [np.empty(shape, t) for t in out_types]
    wide = [np.broadcast_to(a, shape) for a in arrays]
    for idx in np.ndindex(*shape):
        r = fn(*(w[idx] for w in wide))
        r = r if isinstance(r, tuple) else (r,)
        for o, v in zip(outs, r, strict=True):
            o[idx] = v
    return outs


def rand(shape: Any, dtype: Any, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype) == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True
                            ).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


# ---- layouts ------------------------------------------------------------------------------
def _views() -> list[tuple[str, Any]]:
    """(label, make(x_base) -> view) of a (6, 8) f32 array."""
    return [("contiguous", lambda a: a),
            ("transpose", lambda a: a.T),
            ("negative", lambda a: a[::-1, ::-2]),
            ("column", lambda a: a[:, 3]),
            ("row_step", lambda a: a[1::2]),
            ("zero_d", lambda a: a[2, 5, ...])]


@pytest.mark.parametrize("label,view", _views(), ids=[v[0] for v in _views()])
def test_strided_views_read_in_place(backend: str, label: str, view: Any) -> None:
    x = view(rand((6, 8), np.float32, 1))
    b = view(rand((6, 8), np.float32, 2))
    with g.Kernel(AXPB, backend) as k:
        got = k.run(np.float32(1.5), x, b)
    want = oracle(lambda x_, b_: fma3(np.float32(1.5), x_, b_), [x, b], [np.float32])[0]
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_array_equal(got, want)


def test_written_in_place_into_views(backend: str) -> None:
    with g.Kernel(AXPB, backend) as k:
        for label, view in _views():
            base = rand((6, 8), np.float32, 3)
            before = base.copy()
            x = view(rand((6, 8), np.float32, 4))
            out = view(base)
            result = k.run(np.float32(2), x, x, out=out)
            assert result is out, label
            want = before.copy()
            view(want)[...] = oracle(lambda a, c: fma3(np.float32(2), a, c), [x, x],
                                     [np.float32])[0]
            np.testing.assert_array_equal(base, want, err_msg=label)  # only the view changed


def test_in_place_update_of_an_input(backend: str) -> None:
    base = rand((5, 7), np.float32, 5)
    want = base.copy()
    col = base[:, 2]
    want[:, 2] = 3 * col + col
    with g.Kernel(AXPB, backend) as k:
        k.run(np.float32(3), col, col, out=col)
    np.testing.assert_array_equal(base, want)


def test_broadcasting_1x3_with_10x1(backend: str) -> None:
    a = rand((1, 3), np.float32, 6)
    b = rand((10, 1), np.float32, 7)
    with g.Kernel(AXPB, backend) as k:
        got = k.run(np.float32(-0.5), a, b)
        got3 = k.run(np.float32(1), rand((4, 1, 3), np.float32, 8)[:, :, ::-1], b)
    assert got.shape == (10, 3)
    np.testing.assert_array_equal(got, -0.5 * a + b)
    assert got3.shape == (4, 10, 3)
    np.testing.assert_array_equal(got3, rand((4, 1, 3), np.float32, 8)[:, :, ::-1] + b)


def _tuples_supported() -> bool:
    """Whether the kernel language lowers a function returning a tuple."""
    spec = g.elementwise(uname(), sum_diff, ins=(g.i32, g.i32), outs=(g.i32, g.i32))
    try:
        spec.lower()
    except g.KernelSyntaxError:
        return False
    return True


TUPLES = _tuples_supported()


@pytest.mark.skipif(not TUPLES, reason="the kernel language returns no tuples yet")
def test_several_outputs(backend: str) -> None:
    spec = g.elementwise(uname(), sum_diff, ins=(g.i32, g.i32), outs=(g.i32, g.i32))
    a, b = rand((9, 4), np.int32, 9), rand((4,), np.int32, 10)
    with g.Kernel(spec, backend) as k:
        s, d = k.run(a, b)
        np.testing.assert_array_equal(s, a + b)
        np.testing.assert_array_equal(d, a - b)
        o1 = np.zeros((9, 4), np.int32)
        s2, d2 = k.run(a.T[::-1].T, b, out=(o1, None))  # strided: the nd variant
        assert s2 is o1 and d2.shape == (9, 4)
        np.testing.assert_array_equal(o1, a.T[::-1].T + b)
        np.testing.assert_array_equal(d2, a.T[::-1].T - b)
        z1, z2 = k.run(np.array(5, np.int32), np.array(3, np.int32))
        assert z1.shape == () and int(z1) == 8 and int(z2) == 2
        with pytest.raises(g.InvalidArgument, match="overlaps another output"):
            k.run(a, b, out=(o1, o1))


def test_empty_and_zero_d(backend: str) -> None:
    with g.Kernel(AXPB, backend) as k:
        e = k.run(np.float32(2), np.zeros((0, 3), np.float32), np.zeros(3, np.float32))
        assert e.shape == (0, 3) and e.dtype == np.float32
        z = k.run(np.float32(2), np.array(5, np.float32), np.array(3, np.float32))
        assert z.shape == () and float(z) == 13.0
        out = np.zeros(4, np.float32)
        k.run(np.float32(2), np.array(1, np.float32), np.arange(4, dtype=np.float32), out=out)
        np.testing.assert_array_equal(out, 2 + np.arange(4, dtype=np.float32))


@pytest.mark.parametrize("t", [g.i8, g.i16, g.i32, g.i64, g.u8, g.u16, g.u32, g.u64, g.f32,
                               g.f64, bool], ids=lambda t: np.dtype(t).name)
def test_every_scalar_type(t: Any) -> None:
    if t is bool:
        def fn(a, s):
            return a != s
        ins, out = (bool, g.Scalar[bool]), bool
    else:
        def fn(a, s):
            return a * s + a
        ins, out = (t, g.Scalar[t]), t
    spec = g.elementwise(uname(), fn, ins=ins, outs=out)
    dt = np.dtype(t)
    a = rand((33, 5), dt, 11)[:, ::-2]
    s = dt.type(1) if dt != np.bool_ else np.bool_(True)
    with g.Kernel(spec, "cpu") as k:
        got = k.run(a, s)
    with np.errstate(over="ignore"):
        want = oracle(lambda x: fn(x, s), [a], [dt])[0]
    np.testing.assert_array_equal(got, want)


@g.params
class Shift:
    by: g.f64


def shifted(a, p):
    return a + p.by


def test_params_in_flat_and_strided_variants() -> None:
    spec = g.elementwise(uname(), shifted, ins=(g.f64,), outs=g.f64, P=Shift)
    a = rand((4, 6), np.float64, 12)
    with g.Kernel(spec, "cpu") as k:
        np.testing.assert_array_equal(k.run(a, p=Shift(by=2.5)), a + 2.5)
        np.testing.assert_array_equal(k.run(a.T, p=Shift(by=-1)), a.T - 1)
        with pytest.raises(g.InvalidArgument, match="takes a Shift"):
            k.run(a)


def test_launch_on_buffers(backend: str) -> None:
    n = 1000
    x, b = rand(n, np.float32, 13), rand(n, np.float32, 14)
    with g.Kernel(AXPB, backend) as k:
        bx, bb, bo = k.alloc(n, "x"), k.alloc(n, "b"), k.alloc(n)
        bx.upload(x)
        bb.upload(b)
        k.launch(np.float32(2), bx, bb, out=bo)
        k.context.synchronize()
        got = np.empty(n, np.float32)
        bo.download(got)
        np.testing.assert_array_equal(got, 2 * x + b)
        k.launch(np.float32(1), bx, bb, out=bo, n=10)  # the first 10 only
        k.context.synchronize()
        bo.download(got)
        np.testing.assert_array_equal(got[:10], x[:10] + b[:10])
        np.testing.assert_array_equal(got[10:], 2 * x[10:] + b[10:])
        with pytest.raises(g.InvalidArgument, match="needs every output"):
            k.launch(np.float32(1), bx, bb)
        for buf in (bx, bb, bo):
            buf.free()


def test_bad_input_is_refused_and_data_untouched() -> None:
    x = rand((10, 1), np.float32, 15)
    keep = x.copy()
    with g.Kernel(AXPB, "cpu") as k:
        with pytest.raises(g.InvalidArgument, match=r"x \(10, 1\), b \(4, 3\)"):
            k.run(np.float32(1), x, np.ones((4, 3), np.float32))
        with pytest.raises(g.InvalidArgument, match="dtype float64"):
            k.run(np.float32(1), x.astype(np.float64), x)
        with pytest.raises(g.InvalidArgument, match="float64 where f32"):
            k.run(np.float64(1), x, x)
        ro = np.ones((10, 1), np.float32)
        ro.flags.writeable = False
        with pytest.raises(g.InvalidArgument, match="read-only"):
            k.run(np.float32(1), x, x, out=ro)
        with pytest.raises(g.InvalidArgument, match="never broadcast"):
            k.run(np.float32(1), x, x, out=np.ones(1, np.float32))
        base = np.ones(11, np.float32)
        with pytest.raises(g.InvalidArgument, match="overlaps x"):
            k.run(np.float32(1), base[:10], base[:10], out=base[1:])
        with pytest.raises(g.InvalidArgument, match="takes 3 inputs"):
            k.run(x, x)
        with pytest.raises(g.InvalidArgument, match="expected an array"):
            k.run(np.float32(1), [1.0], x)
    np.testing.assert_array_equal(x, keep)


def test_constructor_refusals() -> None:
    with pytest.raises(g.InvalidArgument, match="expected 2"):
        g.elementwise(uname(), fma3, ins=(g.f32, g.f32), outs=g.f32)
    with pytest.raises(g.InvalidArgument, match="outputs are arrays"):
        g.elementwise(uname(), fma3, ins=(g.f32, g.f32, g.f32), outs=(g.Scalar[g.f32],))
    with pytest.raises(g.InvalidArgument, match="every input is a g.Scalar"):
        g.elementwise(uname(), fma3, ins=(g.Scalar[g.f32],) * 3, outs=g.f32)
    with pytest.raises(g.InvalidArgument, match="scalar type"):
        g.elementwise(uname(), fma3, ins=(g.f32, float, g.f32), outs=g.f32)


def test_dimensions_are_collapsed() -> None:
    """A contiguous or Fortran-order problem runs the flat entry; a column slice of a 3-D
    array needs two dimensions, not three."""
    spec = g.elementwise(uname(), lambda a: a + 1, ins=(g.i64,), outs=g.i64)
    a = np.arange(2 * 3 * 4, dtype=np.int64).reshape(2, 3, 4)
    with g.Kernel(spec, "cpu") as k:
        k.run(a)
        k.run(np.asfortranarray(a), out=np.empty((2, 3, 4), np.int64, order="F"))
        assert k.program.variants() == (f"{spec.name}_flat",)
        got = k.run(a[:, :, 1])
        np.testing.assert_array_equal(got, a[:, :, 1] + 1)
        assert k.program.variants()[1:] == (f"{spec.name}_nd1",)
        got = k.run(a[:, ::2, ::-3])
        np.testing.assert_array_equal(got, a[:, ::2, ::-3] + 1)
        assert k.program.variants()[2:] == (f"{spec.name}_nd3",)


def test_launch_in_place_and_broadcast_buffers(backend: str) -> None:
    n = 300
    x = rand(n, np.float32, 16)
    with g.Kernel(AXPB, backend) as k:
        bx, one = k.alloc(n, "x"), k.alloc(1, "b")
        bx.upload(x)
        one.upload(np.array([0.25], np.float32))
        k.launch(np.float32(3), bx, one, out=bx)  # in place; b broadcast from one element
        k.context.synchronize()
        got = np.empty(n, np.float32)
        bx.download(got)
        np.testing.assert_array_equal(got, 3 * x + np.float32(0.25))
        with pytest.raises(g.InvalidArgument, match="buffer of"):
            k.launch(np.float32(3), bx, k.device.alloc(4 * n), out=bx)  # untyped bytes
        bx.free()
        one.free()


class _Interface:
    """A foreign host array (NumPy's array interface only), strides included."""

    def __init__(self, arr: np.ndarray) -> None:
        self.arr = arr
        self.__array_interface__ = arr.__array_interface__


def test_foreign_host_arrays_with_strides() -> None:
    base = rand((8, 6), np.float32, 17)
    view = base[::-2, 1::2]
    want = 2 * view + view
    with g.Kernel(AXPB, "cpu") as k:
        got = k.run(np.float32(2), _Interface(view), view)
        np.testing.assert_array_equal(got, want)
        k.run(np.float32(2), view, view, out=_Interface(view))
    np.testing.assert_array_equal(base[::-2, 1::2], want)


def test_cupy_strided_views_in_place() -> None:
    cp = pytest.importorskip("cupy", reason="CuPy (a CUDA GPU) is needed")
    try:
        avail = manager.probe("cuda")
    except (UnsupportedBackend, BackendUnavailable) as exc:
        pytest.skip(f"cuda: {exc}")
    if not avail.available:
        pytest.skip(f"cuda unavailable: {avail.reason}")
    host = rand((64, 48), np.float32, 18)
    x = cp.asarray(host)
    with g.Kernel(AXPB, "cuda") as k:
        got = k.run(np.float32(2), x[:, 3], x[::-1, 5])  # column slices, negative stride
        np.testing.assert_array_equal(cp.asnumpy(cp.asarray(got)),
                                      2 * host[:, 3] + host[::-1, 5])
        k.run(np.float32(1), x.T, x.T, out=x.T)  # a transpose, in place
        np.testing.assert_array_equal(cp.asnumpy(x), host + host)
        y = cp.zeros((64, 48), cp.float32)
        k.launch(np.float32(3), x[:, ::2], x[:1, ::2], out=y[:, ::2])
        k.context.synchronize()
        want = np.zeros((64, 48), np.float32)
        want[:, ::2] = 3 * (host + host)[:, ::2] + (host + host)[:1, ::2]
        np.testing.assert_array_equal(cp.asnumpy(y), want)


def test_threads_share_one_handle(backend: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    inputs = [(rand((40, 30), np.float32, 30 + j)[:, ::3], rand(10, np.float32, 60 + j))
              for j in range(16)]
    with g.Kernel(AXPB, backend) as k:
        with ThreadPoolExecutor(4) as pool:
            got = list(pool.map(lambda xb: k.run(np.float32(2), *xb), inputs))
    for (x, b), r in zip(inputs, got, strict=True):
        np.testing.assert_array_equal(r, 2 * x + b)


def test_dlpack_tensors_keep_their_strides() -> None:
    """What a strided device tensor (torch's, through DLPack) is read as: its element
    strides, not a refusal (a C-contiguous consumer still refuses it)."""
    from gompute_core import dlpack

    x = rand((6, 10), np.float32, 19)[::-1, ::3]
    t = dlpack.consume(x.__dlpack__(), "x", strided=True)
    assert t.shape == x.shape
    assert t.addr == x.ctypes.data
    assert t.strides == tuple(s // 4 for s in x.strides)
    with pytest.raises(g.InvalidArgument, match="not C-contiguous"):
        dlpack.consume(x.__dlpack__(), "x")


@pytest.mark.skipif(not TUPLES, reason="the kernel language returns no tuples yet")
def test_black_scholes_of_the_docs(backend: str) -> None:
    """docs/elementwise.md's example (bench/blackscholes.py's kernel) against its own
    function run as plain Python: 3 arrays, 2 scalars, 2 outputs. exp and log are within
    a few ulps of NumPy's, not bit-equal (docs/kernel-language.md), and the put's
    subtraction amplifies that: compared to 1e-10 relative."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    try:
        import blackscholes as bs
    finally:
        sys.path.pop(0)
    s, x, t = (a[:300] for a in bs.options(300))
    with g.Kernel(bs.BLACK_SCHOLES, backend) as k:
        call, put = k.run(s, x, t, 0.02, 0.3)
        call2, put2 = k.run(s[::-1], x[0], t[::-1], 0.02, 0.3)  # broadcast strike, strided
    r, v = np.float64(0.02), np.float64(0.3)
    want = oracle(lambda a, b, c: bs.black_scholes(a, b, c, r, v), [s, x, t],
                  [np.float64, np.float64])
    close = {"rtol": 1e-10, "atol": 1e-12}
    np.testing.assert_allclose(call, want[0], **close)
    np.testing.assert_allclose(put, want[1], **close)
    want2 = oracle(lambda a, b, c: bs.black_scholes(a, b, c, r, v), [s[::-1], x[0], t[::-1]],
                   [np.float64, np.float64])
    np.testing.assert_allclose(call2, want2[0], **close)
    np.testing.assert_allclose(put2, want2[1], **close)


def test_gompute_build_skips_elementwise_specs(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A module defining an elementwise spec still builds: the spec is skipped, named."""
    from gompute_core.cli import main

    kernels = tmp_path / "ew_kernels.py"
    kernels.write_text("import gompute_core as g\n"
                       "def add(a, b):\n    return a + b\n"
                       f"k = g.elementwise({uname()!r}, add, ins=(g.f32, g.f32), outs=g.f32)\n")
    assert main(["build", str(kernels), "--backend", "cpu", "-o", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "skipped (elementwise: its raw kernels compile on first use)" in out
    assert "wrote 0 artifact(s)" in out
    with pytest.raises(g.Unsupported, match="whose device program is raw kernels"):
        g.compile(AXPB, "cpu")


class _OnADevice:
    """What a GPU array (CuPy's, torch's) shows a kernel on another device."""

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 0)  # kDLCUDA

    def __dlpack__(self, **kwargs: Any) -> Any:
        raise AssertionError("a CPU kernel must not consume a CUDA tensor")


def test_an_array_on_another_device_is_named() -> None:
    with g.Kernel(AXPB, "cpu") as k:
        with pytest.raises(g.InvalidArgument, match="x: the array is on cuda"):
            k.run(np.float32(1), _OnADevice(), np.ones(3, np.float32))


def test_compile_options_are_refused_not_ignored() -> None:
    with pytest.raises(g.Unsupported, match="contract= do not reach"):
        g.Kernel(AXPB, "cpu", contract=True)


def test_launches_larger_than_the_grid_cap(backend: str) -> None:
    """More blocks than the device's grid cap: the grid-stride form of the variant (on
    OpenCL's few blocks per compute unit, say); else one element per thread."""
    n = 300_000
    x = rand((n // 100, 100), np.float32, 21)
    with g.Kernel(AXPB, backend) as k:
        np.testing.assert_array_equal(k.run(np.float32(2), x, x), 3 * x)
        np.testing.assert_array_equal(k.run(np.float32(2), x[:, ::-1], x[:1]), 2 * x[:, ::-1] +
                                      x[:1])
        capped = -(-n // AXPB.block_size) > k.device.max_grid_blocks(AXPB.block_size)
        names = k.program.variants()
    assert any(v.endswith("_gs") for v in names) == capped, names

"""Interop on a real GPU: CuPy, torch, numba-cuda and JAX arrays in and out of ``run`` and
``launch`` with no copy (pointer identity), stream order with a long producer kernel on
another stream, and two GPUs in one process. Skipped where no NVIDIA device is present;
each library's cases are skipped where it cannot be imported."""

from __future__ import annotations

import itertools
import threading

import numpy as np
import pytest

import gompute_core as g
from gompute_core.errors import InvalidArgument
from gompute_core.plugins import manager

_avail = manager.probe("cuda") if any(r.name == "cuda" for r in manager.backends()) else None
pytestmark = pytest.mark.skipif(
    _avail is None or not _avail.available,
    reason=f"CUDA unavailable: {_avail.reason if _avail else 'gompute-cuda not installed'}")
GPUS = len(_avail.devices) if _avail is not None and _avail.available else 0

_ids = itertools.count()


def uname(base: str = "cuiop") -> str:
    return f"{base}_{next(_ids)}"


def inc(x):
    return x + 1


def twice(x):
    return x * 2


def axpy(a, b):
    return a * 3 + b


@pytest.fixture(scope="module")
def k_inc() -> g.Kernel:
    with g.Kernel(g.map(uname(), g.f32, None, inc), "cuda") as k:
        yield k


@pytest.fixture(scope="module")
def k_zip() -> g.Kernel:
    with g.Kernel(g.zip(uname(), g.f32, g.f32, g.f32, None, axpy), "cuda") as k:
        yield k


# ---------------------------------------------------------------------------- CuPy
def test_cupy_views_our_buffer(k_inc: g.Kernel) -> None:
    cp = pytest.importorskip("cupy")
    buf = k_inc.alloc(1000)
    buf.fill(0)
    x = cp.asarray(buf)
    assert x.data.ptr == buf.addr and x.dtype == cp.float32 and x.shape == (1000,)
    k_inc.launch(buf, 1000)
    assert float(x.sum()) == 1000.0  # CuPy ordered after our stream (CAI stream field)
    y = cp.asarray(buf.typed(np.float32, (10, 100)))
    assert y.shape == (10, 100) and y.data.ptr == buf.addr
    z = cp.from_dlpack(buf)
    assert z.data.ptr == buf.addr


def test_cupy_arrays_in_launch_and_run(k_inc: g.Kernel, k_zip: g.Kernel) -> None:
    cp = pytest.importorskip("cupy")
    x = cp.arange(4096, dtype=cp.float32)
    ptr = x.data.ptr
    k_inc.launch(x, 4096)
    k_inc.context.synchronize()
    assert x.data.ptr == ptr
    np.testing.assert_array_equal(cp.asnumpy(x), np.arange(4096, dtype=np.float32) + 1)
    assert k_inc.run(x) is x
    np.testing.assert_array_equal(cp.asnumpy(x), np.arange(4096, dtype=np.float32) + 2)
    a, b, out = cp.ones(300, cp.float32), cp.arange(300, dtype=cp.float32), cp.zeros(300,
                                                                                     cp.float32)
    k_zip.run(a, b, out)
    np.testing.assert_array_equal(cp.asnumpy(out), 3 + np.arange(300, dtype=np.float32))
    k_zip.launch(b, a, out, 300)
    k_zip.context.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(out), 3 * np.arange(300, dtype=np.float32) + 1)
    with g.Kernel(g.sum(uname(), g.i64), "cuda") as ks:
        assert ks.run(cp.arange(10**6, dtype=cp.int64)) == (10**6 - 1) * 10**6 // 2
    with g.Kernel(g.gather(uname(), g.f32, g.i32), "cuda") as kg:
        src, out = cp.arange(10, dtype=cp.float32), cp.zeros(3, cp.float32)
        kg.run(src, cp.asarray([9, 0, 4], dtype=cp.int32), out)
        assert cp.asnumpy(out).tolist() == [9, 0, 4]


def test_cupy_checks(k_inc: g.Kernel, k_zip: g.Kernel) -> None:
    cp = pytest.importorskip("cupy")
    with pytest.raises(InvalidArgument, match="dtype float64 does not match"):
        k_inc.launch(cp.zeros(8), 8)
    with pytest.raises(InvalidArgument, match="not C-contiguous"):
        k_inc.run(cp.zeros((4, 4), cp.float32).T)
    with pytest.raises(InvalidArgument, match="holds 8 elements, the launch needs 9"):
        k_inc.launch(cp.zeros(8, cp.float32), 9)
    with pytest.raises(InvalidArgument, match="partly on the host"):
        k_zip.run(cp.zeros(4, cp.float32), np.zeros(4, np.float32), cp.zeros(4, cp.float32))
    x = cp.zeros(8, cp.float32)
    with pytest.raises(InvalidArgument, match="overlaps a without being the same"):
        k_zip.run(x[:4], x[:4], x[2:6])


def test_borrowed_cupy_buffer_never_frees() -> None:
    cp = pytest.importorskip("cupy")
    x = cp.arange(16, dtype=cp.float32)
    buf = g.as_buffer(x)
    assert not buf.owned and buf.addr == x.data.ptr and buf.device.ordinal == 0
    out = np.empty(16, np.float32)
    buf.download(out)
    np.testing.assert_array_equal(out, np.arange(16, dtype=np.float32))
    buf.free()
    assert float(x.sum()) == 120.0  # still CuPy's, alive and intact


# ---------------------------------------------------------------------------- torch
def test_torch_in_and_out(k_inc: g.Kernel) -> None:
    torch = pytest.importorskip("torch")
    buf = k_inc.alloc(64)
    t = torch.from_dlpack(buf)
    assert t.is_cuda and t.data_ptr() == buf.addr and t.dtype == torch.float32
    x = torch.zeros(64, device="cuda")
    ptr = x.data_ptr()
    k_inc.run(x)
    k_inc.launch(x, 64)
    k_inc.context.synchronize()
    assert x.data_ptr() == ptr and x.sum().item() == 128.0
    b = g.from_dlpack(x, "cuda")
    assert b.addr == ptr and not b.owned
    with pytest.raises(InvalidArgument, match="host memory; this kernel runs on"):
        k_inc.launch(torch.zeros(4), 4)
    cpu = torch.zeros(4)
    k_inc.run(cpu)  # run takes host arrays on any device
    assert cpu.tolist() == [1, 1, 1, 1]


# ---------------------------------------------------------------------------- numba
def test_torch_bfloat16_is_a_typed_refusal(k_inc: g.Kernel) -> None:
    """A bfloat16 tensor, on the GPU or the host, is an ``InvalidArgument`` naming the
    argument and the type (torch's own interface raises for it: never that error raw); the
    tensor is untouched."""
    torch = pytest.importorskip("torch")
    for device in ("cuda", "cpu"):
        x = torch.arange(8, device=device).to(torch.bfloat16)
        before = x.clone()
        with pytest.raises(InvalidArgument, match="^data: .*bfloat16"):
            k_inc.run(x)
        if device == "cuda":
            with pytest.raises(InvalidArgument, match="^launch: buf: .*bfloat16"):
                k_inc.launch(x, 8)
        assert torch.equal(x, before)


def test_numba_in_and_out(k_inc: g.Kernel) -> None:
    pytest.importorskip("numba")
    from numba import cuda as ncuda

    if not ncuda.is_available():
        pytest.skip("numba-cuda sees no GPU")
    buf = k_inc.alloc(32)
    v = ncuda.as_cuda_array(buf)
    assert v.__cuda_array_interface__["data"][0] == buf.addr and v.shape == (32,)
    d = ncuda.to_device(np.zeros(32, np.float32))
    k_inc.run(d)
    k_inc.launch(d, 32)
    k_inc.context.synchronize()
    np.testing.assert_array_equal(d.copy_to_host(), np.full(32, 2, np.float32))


# ---------------------------------------------------------------------------- JAX
def test_jax_in_and_out() -> None:
    jax = pytest.importorskip("jax")
    cp = pytest.importorskip("cupy")
    try:
        gpu = jax.devices("gpu")[0]
    except RuntimeError:
        pytest.skip("JAX sees no GPU")
    with g.Kernel(g.map_to(uname(), g.f32, g.f32, None, twice), "cuda") as k:
        x = jax.device_put(jax.numpy.arange(100, dtype=jax.numpy.float32), gpu)
        x.block_until_ready()
        out = cp.zeros(100, cp.float32)
        k.run(x, out)
        np.testing.assert_array_equal(cp.asnumpy(out), 2 * np.arange(100, dtype=np.float32))
        buf = k.alloc(100)
        buf.upload(np.arange(100, dtype=np.float32))
        y = jax.dlpack.from_dlpack(buf)
        np.testing.assert_array_equal(np.asarray(y), np.arange(100, dtype=np.float32))


def test_a_context_another_library_left_current_is_taken_back() -> None:
    """XLA makes its own context current with cuCtxSetCurrent and leaves it there (on a
    machine with several GPUs, another device's); a kernel loaded and run afterwards must
    still be loaded into, and run in, our context (it failed with CUresult 400)."""
    import ctypes

    from gompute_cuda.driver import driver

    lib = driver().lib
    dev = manager.open_device("cuda", 0)
    dev.synchronize()  # our context is the main thread's current one
    other, create = ctypes.c_void_p(), getattr(lib, "cuCtxCreate_v2", None)
    if create is None or create(ctypes.byref(other), 0, 0) != 0:
        pytest.skip("cuCtxCreate_v2 unavailable")
    try:
        popped = ctypes.c_void_p()
        assert lib.cuCtxPopCurrent_v2(ctypes.byref(popped)) == 0  # ours is current again
        assert lib.cuCtxSetCurrent(other) == 0  # and replaced, as XLA does
        with g.Kernel(g.map(uname(), g.f32, None, inc), "cuda") as k:  # a new module
            x = np.zeros(5000, np.float32)
            k.run(x)
            buf = k.alloc(5000)
            buf.fill(0)
            assert lib.cuCtxSetCurrent(other) == 0
            k.launch(buf, 5000)
            k.context.synchronize()
            out = np.empty(5000, np.float32)
            buf.download(out)
        assert x.min() == 1 and out.min() == 1
    finally:
        lib.cuCtxSetCurrent(dev.native_context)
        lib.cuCtxDestroy_v2(other)


# ---------------------------------------------------------------------------- stream order
_SPIN = r"""
extern "C" __global__ void spin_then_fill(float* x, int n, long long cycles, float v) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
    for (int i = threadIdx.x + blockIdx.x * blockDim.x; i < n; i += blockDim.x * gridDim.x)
        x[i] = v;
}
"""


def test_launch_is_ordered_after_a_long_producer_on_another_stream(k_inc: g.Kernel) -> None:
    cp = pytest.importorskip("cupy")
    spin = cp.RawKernel(_SPIN, "spin_then_fill")
    n = 1 << 20
    x = cp.zeros(n, cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    with s:  # CuPy reports its current stream in the CUDA Array Interface
        spin((256,), (256,), (x, np.int32(n), np.int64(200_000_000), np.float32(41)))
        k_inc.launch(x, n)  # must wait for the spin (~0.1 s) on s
        y = x * 2  # and CuPy on s must see our increment
    s.synchronize()
    assert float(y.min()) == 84.0 and float(y.max()) == 84.0
    with s:
        spin((256,), (256,), (x, np.int32(n), np.int64(200_000_000), np.float32(9)))
        k_inc.run(x)
        z = x + 0
    s.synchronize()
    assert float(z.min()) == 10.0 and float(z.max()) == 10.0


def test_dlpack_consumer_stream_waits_for_ours(k_inc: g.Kernel) -> None:
    torch = pytest.importorskip("torch")
    big = k_inc.alloc(1 << 28)
    buf = k_inc.alloc(1 << 20)
    buf.fill(0)
    for _ in range(20):  # ~10 ms of work on our stream before the one that matters
        k_inc.launch(big, 1 << 28)
    k_inc.launch(buf, 1 << 20)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        t = torch.from_dlpack(buf)  # torch passes `side`: it must wait for our stream
        total = t.sum()
    side.synchronize()
    assert total.item() == float(1 << 20)
    big.free()


# ---------------------------------------------------------------------------- two GPUs
two_gpus = pytest.mark.skipif(GPUS < 2, reason="needs two GPUs")


@two_gpus
def test_kernels_on_two_gpus_in_one_process() -> None:
    spec = g.map(uname(), g.f32, None, inc)
    with g.Kernel(spec, "cuda", device=0) as k0, g.Kernel(spec, "cuda", device=1) as k1:
        assert k1.context.ordinal == 1
        x0, x1 = np.zeros(1 << 16, np.float32), np.zeros(1 << 16, np.float32)
        for _ in range(3):  # alternate on the main thread: each call in its device's context
            k0.run(x0)
            k1.run(x1)
        assert x0.max() == 3 and x1.min() == 3
        b0, b1 = k0.alloc(1024), k1.alloc(1024)
        b0.upload(np.arange(1024, dtype=np.float32))
        b1.copy_from(b0)  # a peer copy
        k1.launch(b1, 1024)
        k1.context.synchronize()
        out = np.empty(1024, np.float32)
        b1.download(out)
        np.testing.assert_array_equal(out, np.arange(1024, dtype=np.float32) + 1)
        with pytest.raises(InvalidArgument, match="is a buffer of <CudaDevice 0"):
            k1.launch(b0, 1024)
        errors: list[BaseException] = []

        def work(k: g.Kernel, x: np.ndarray) -> None:
            try:
                for _ in range(10):
                    k.run(x)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        y0, y1 = np.zeros(4096, np.float32), np.zeros(4096, np.float32)
        threads = [threading.Thread(target=work, args=a) for a in ((k0, y0), (k1, y1))]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not errors and y0.min() == 10 and y1.min() == 10


@two_gpus
def test_foreign_array_on_the_other_gpu_is_refused(k_inc: g.Kernel) -> None:
    cp = pytest.importorskip("cupy")
    with cp.cuda.Device(1):
        x1 = cp.zeros(16, cp.float32)
    with pytest.raises(InvalidArgument, match="the array is on cuda:1; this kernel runs on "
                                              "cuda:0"):
        k_inc.launch(x1, 16)
    with pytest.raises(InvalidArgument, match="data: the array is on cuda:1"):
        k_inc.run(x1)
    with g.Kernel(g.map(uname(), g.f32, None, inc), "cuda", device=1) as k1:
        k1.run(x1)
        with cp.cuda.Device(1):
            assert float(x1.sum()) == 16.0

"""Interop on the CPU: buffers as NumPy/torch arrays (DLPack, array interface) with no copy,
NumPy and torch CPU arrays into ``launch`` and ``run`` in place, borrowed buffers that never
free, and the checks (dtype, contiguity, writability, length, device)."""

from __future__ import annotations

import ctypes
import gc
import itertools
import weakref

import numpy as np
import pytest

import gompute_core as g
from gompute_core import dlpack
from gompute_core.errors import InvalidArgument

_ids = itertools.count()


def uname(base: str = "iop") -> str:
    return f"{base}_{next(_ids)}"


def inc(x):
    return x + 1


def add(a, b):
    return a * 2 + b


def neg(x):
    return -x


@pytest.fixture(scope="module")
def k_inc() -> g.Kernel:
    with g.Kernel(g.map(uname(), g.f32, None, inc), "cpu") as k:
        yield k


@pytest.fixture(scope="module")
def k_zip() -> g.Kernel:
    with g.Kernel(g.zip(uname(), g.f32, g.f32, g.f32, None, add), "cpu") as k:
        yield k


# ---------------------------------------------------------------- our buffers, their arrays
def test_numpy_views_a_buffer_without_a_copy(k_inc: g.Kernel) -> None:
    buf = k_inc.alloc(6)
    a = np.from_dlpack(buf)
    assert a.dtype == np.float32 and a.shape == (6,) and a.ctypes.data == buf.addr
    b = np.asarray(buf)
    assert b.ctypes.data == buf.addr and b.dtype == np.float32
    buf.upload(np.arange(6, dtype=np.float32))
    np.testing.assert_array_equal(a, np.arange(6, dtype=np.float32))
    a[2] = 40  # writes land in the buffer
    out = np.empty(6, np.float32)
    buf.download(out)
    assert out[2] == 40
    assert buf.__dlpack_device__() == (dlpack.KDL_CPU, 0)


def test_typed_view_reshapes_and_retypes(k_inc: g.Kernel) -> None:
    buf = k_inc.alloc(8)
    v = np.from_dlpack(buf.typed(np.int32, (2, 4)))
    assert v.shape == (2, 4) and v.dtype == np.int32 and v.ctypes.data == buf.addr
    assert np.asarray(buf.typed(np.uint8)).shape == (32,)
    with pytest.raises(InvalidArgument, match="needs 36 bytes"):
        buf.typed(np.float32, (9,))


def test_export_keeps_the_buffer_alive_and_refuses_copies(k_inc: g.Kernel) -> None:
    buf = k_inc.alloc(4)
    ref = weakref.ref(buf)
    a = np.from_dlpack(buf)
    del buf
    gc.collect()
    assert ref() is not None  # the consumer's view holds the exporter
    del a
    gc.collect()
    assert ref() is None
    buf = k_inc.alloc(4)
    with pytest.raises(BufferError, match="never copies"):
        buf.__dlpack__(copy=True)
    with pytest.raises(BufferError, match="stream must be None"):
        buf.__dlpack__(stream=1)
    with pytest.raises(BufferError, match="would need a copy"):
        buf.__dlpack__(dl_device=(2, 0))
    capsule = buf.__dlpack__()  # dropped unconsumed: its destructor runs the deleter
    del capsule
    buf.free()
    with pytest.raises(InvalidArgument, match="after free"):
        np.from_dlpack(buf)


def test_cpu_buffer_has_no_cuda_array_interface(k_inc: g.Kernel) -> None:
    assert not hasattr(k_inc.alloc(2), "__cuda_array_interface__")


def test_torch_views_a_buffer() -> None:
    torch = pytest.importorskip("torch")
    with g.Kernel(g.map(uname(), g.f32, None, inc), "cpu") as k:
        buf = k.alloc(5)
        t = torch.from_dlpack(buf)
        assert t.data_ptr() == buf.addr and t.dtype == torch.float32 and t.shape == (5,)
        k.launch(buf, 5)
        assert t.tolist() == [1.0] * 5


# ---------------------------------------------------------------- their arrays, our kernels
def test_launch_takes_numpy_arrays_in_place(k_inc: g.Kernel, k_zip: g.Kernel) -> None:
    x = np.arange(10, dtype=np.float32)
    k_inc.launch(x, 10)
    np.testing.assert_array_equal(x, np.arange(10, dtype=np.float32) + 1)
    k_inc.launch(x, 4)  # a prefix, as with a buffer
    np.testing.assert_array_equal(x[:5], [2, 3, 4, 5, 5])
    a, b = np.full(7, 3, np.float32), np.arange(7, dtype=np.float32)
    out = k_zip.alloc(7)
    k_zip.launch(a, b, out, 7)
    np.testing.assert_array_equal(np.from_dlpack(out), a * 2 + b)


def test_launch_checks_foreign_arrays_like_buffers(k_inc: g.Kernel) -> None:
    with pytest.raises(InvalidArgument, match="dtype float64 does not match the spec's float32"):
        k_inc.launch(np.zeros(4), 4)
    with pytest.raises(InvalidArgument, match="not C-contiguous"):
        k_inc.launch(np.zeros(8, np.float32)[::2], 4)
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    with pytest.raises(InvalidArgument, match="read-only but the kernel writes it"):
        k_inc.launch(ro, 4)
    with pytest.raises(InvalidArgument, match="holds 4 elements, the launch needs 5"):
        k_inc.launch(np.zeros(4, np.float32), 5)
    with pytest.raises(InvalidArgument, match="got list"):
        k_inc.launch([1.0, 2.0], 2)


def test_read_only_inputs_are_fine_where_only_read(k_zip: g.Kernel) -> None:
    a = np.ones(3, np.float32)
    a.flags.writeable = False
    out = np.zeros(3, np.float32)
    k_zip.run(a, a, out)
    np.testing.assert_array_equal(out, [3, 3, 3])


def test_run_takes_torch_cpu_tensors_in_place(k_inc: g.Kernel, k_zip: g.Kernel) -> None:
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    ptr = t.data_ptr()
    assert k_inc.run(t) is t
    assert t.data_ptr() == ptr
    assert t.flatten().tolist() == [1, 2, 3, 4, 5, 6]
    out = torch.zeros(2, 3)
    k_zip.run(t, np.ones((2, 3), np.float32), out)
    np.testing.assert_array_equal(out.numpy(), t.numpy() * 2 + 1)
    with pytest.raises(InvalidArgument, match="data: dtype float64"):
        k_inc.run(torch.zeros(3, dtype=torch.float64))
    with pytest.raises(InvalidArgument, match="not C-contiguous"):
        k_inc.run(torch.zeros(4, 4).t())
    with pytest.raises(InvalidArgument, match="out: shape"):
        k_zip.run(t, t, torch.zeros(6))


def test_run_takes_torch_in_reduce_and_gather() -> None:
    torch = pytest.importorskip("torch")
    with g.Kernel(g.sum(uname(), g.i64), "cpu") as k:
        assert k.run(torch.arange(1000)) == 999 * 1000 // 2
    with g.Kernel(g.gather(uname(), g.f32, g.i32), "cpu") as k:
        src = torch.arange(5, dtype=torch.float32)
        out = torch.zeros(3)
        k.run(src, torch.tensor([4, 0, 2], dtype=torch.int32), out)
        assert out.tolist() == [4, 0, 2]
        with pytest.raises(InvalidArgument, match="out: overlaps src"):
            k.run(src, torch.tensor([0], dtype=torch.int32), src[:1])


def test_launch_takes_torch_cpu_tensors(k_inc: g.Kernel) -> None:
    torch = pytest.importorskip("torch")
    t = torch.zeros(4)
    k_inc.launch(t, 4)
    assert t.tolist() == [1, 1, 1, 1]


def test_array_interface_objects_are_taken(k_inc: g.Kernel) -> None:
    backing = np.zeros(4, np.float32)

    class Exposes:
        __array_interface__ = backing.__array_interface__

    k_inc.run(Exposes())
    np.testing.assert_array_equal(backing, [1, 1, 1, 1])


def test_device_mismatch_is_invalid_argument(k_inc: g.Kernel) -> None:
    class OnGpu:
        __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (4096, False),
                                    "version": 3, "strides": None, "stream": None}

    with pytest.raises(InvalidArgument, match="launch: buf: the array is on cuda; this kernel "
                                              "runs on cpu:0"):
        k_inc.launch(OnGpu(), 4)
    with pytest.raises(InvalidArgument, match="data: the array is on cuda"):
        k_inc.run(OnGpu())

    class DlpackOnGpu1:
        def __dlpack_device__(self) -> tuple[int, int]:
            return (dlpack.KDL_CUDA, 1)

        def __dlpack__(self, **kw: object) -> object:
            raise AssertionError("a mismatched device must be refused before exporting")

    with pytest.raises(InvalidArgument, match="on cuda:1, not on this kernel's cpu device"):
        k_inc.launch(DlpackOnGpu1(), 4)


# ---------------------------------------------------------------- borrowed buffers
def test_as_buffer_borrows_and_never_frees() -> None:
    x = np.arange(4, dtype=np.float32)
    buf = g.as_buffer(x)
    assert not buf.owned and buf.addr == x.ctypes.data and buf.dtype == np.float32
    assert buf.shape == (4,)
    ref = weakref.ref(x)
    del x
    gc.collect()
    assert ref() is not None  # the buffer keeps the producer alive
    view = np.from_dlpack(g.as_buffer(buf))
    buf.free()  # forgets; the memory is still the producer's, alive and intact
    np.testing.assert_array_equal(view, [0, 1, 2, 3])
    del buf, view
    gc.collect()
    assert ref() is None
    other = g.as_buffer(np.zeros(2))
    assert g.as_buffer(other) is other


def test_from_dlpack_borrows_a_torch_tensor() -> None:
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    buf = g.from_dlpack(t, "cpu")
    assert not buf.owned and buf.addr == t.data_ptr() and buf.nbytes == 24
    assert buf.dtype == np.int32 and buf.shape == (2, 3)
    back = np.from_dlpack(buf)  # and out again, still the same memory
    assert back.shape == (2, 3) and back.ctypes.data == t.data_ptr()
    buf.free()
    assert t.flatten().tolist() == list(range(6))  # memory untouched, still the tensor's
    with pytest.raises(InvalidArgument, match="has no __dlpack__"):
        g.from_dlpack([1, 2], "cpu")


def test_consumed_capsule_is_renamed_and_released() -> None:
    x = np.arange(3, dtype=np.float32)
    capsule = x.__dlpack__()
    t = dlpack.consume(capsule, "x")
    assert t.addr == x.ctypes.data and t.shape == (3,) and t.dtype == np.float32
    with pytest.raises(InvalidArgument, match="not an unused DLPack capsule"):
        dlpack.consume(capsule, "x")  # renamed: consumed once
    del t
    gc.collect()


def test_read_only_numpy_exports_versioned_read_only() -> None:
    x = np.arange(3, dtype=np.float32)
    x.flags.writeable = False
    t = dlpack.consume(x.__dlpack__(max_version=(1, 0)), "x")
    assert t.readonly


class Bfloat16Host:
    """A host tensor of bfloat16 that speaks DLPack only, as torch's CPU bf16 tensors do:
    each ``__dlpack__`` builds dlpack.h's structures (type code 4, kDLBfloat) over its
    2-byte elements."""

    def __init__(self, n: int) -> None:
        self.bits = np.arange(n, dtype=np.uint16)
        self.shape = (ctypes.c_int64 * 1)(n)
        self.deleter = dlpack._Deleter(lambda _: None)
        self.managed: list[dlpack.DLManagedTensor] = []

    def __dlpack_device__(self) -> tuple[int, int]:
        return (dlpack.KDL_CPU, 0)

    def __dlpack__(self, stream: object = None, max_version: object = None,
                   dl_device: object = None, copy: object = None) -> object:
        tensor = dlpack.DLTensor(ctypes.c_void_p(self.bits.ctypes.data), dlpack.DLDevice(1, 0),
                                 1, dlpack.DLDataType(4, 16, 1), self.shape, None, 0)
        self.managed.append(dlpack.DLManagedTensor(tensor, None, self.deleter))
        return dlpack._new(ctypes.addressof(self.managed[-1]), dlpack.LEGACY, None)


def test_bfloat16_dlpack_is_a_typed_refusal(k_inc: g.Kernel) -> None:
    """A bfloat16 tensor (which NumPy and Gompute have no type for) is an
    ``InvalidArgument`` naming the argument and the type, in ``run``, ``launch`` and
    ``as_buffer``; its memory is untouched."""
    x = Bfloat16Host(4)
    for call, role in ((lambda: k_inc.run(x), "data"), (lambda: k_inc.launch(x, 4), "launch: buf"),
                       (lambda: g.as_buffer(x), "as_buffer")):
        with pytest.raises(InvalidArgument, match=f"^{role}: the DLPack data type bfloat16"):
            call()
    np.testing.assert_array_equal(x.bits, np.arange(4))


B = g.builtins


@g.raw_kernel
def iop_shift(x: g.GlobalPtr[g.f32], out: g.GlobalPtr[g.f32], n: g.u64):
    """Reads ``x``, writes ``out``: a read-only array is fine as ``x`` only."""
    i = B.global_id(0)
    if i < n:
        out[i] = x[i] + 1


def test_read_only_array_as_a_written_raw_pointer_is_refused() -> None:
    """A read-only NumPy array (or a buffer borrowed from one) passed where a raw kernel
    writes is an ``InvalidArgument`` naming the argument, before anything runs; where the
    kernel only reads, it is taken."""
    raw = g.RawKernel(iop_shift, "cpu")
    x = np.arange(8, dtype=np.float32)
    x.flags.writeable = False
    out = np.zeros(8, np.float32)
    raw.launch(1, 8, [x, out, 8])
    np.testing.assert_array_equal(out, x + 1)
    frozen = out.copy()
    frozen.flags.writeable = False
    for target in (frozen, g.as_buffer(frozen)):
        with pytest.raises(InvalidArgument, match=r"#1 \('out'\) is read-only memory but the "
                                                  "kernel writes it"):
            raw.launch(1, 8, [x, target, 8])
    np.testing.assert_array_equal(frozen, x + 1)


def test_devices_without_interop_refuse_foreign_arrays() -> None:
    from pybackend import PyBackend

    from gompute_core.plugins import manager

    with manager.isolated():
        manager.register(PyBackend("pynoiop", host_memory=False))
        with g.Kernel(g.map(uname(), g.f32, None, inc), "pynoiop") as k:
            with pytest.raises(InvalidArgument, match="launch: buf must be a pynoiop buffer"):
                k.launch(np.zeros(4, np.float32), 4)
            buf = k.alloc(4)
            with pytest.raises(BufferError, match="declares no DLPack device type"):
                buf.__dlpack_device__()
            assert not hasattr(buf, "__cuda_array_interface__")
            assert not hasattr(buf, "__array_interface__")


def test_packed_binder_fast_path_refuses_read_only_where_written() -> None:
    """The packing backends' generated argument binder (CUDA, HIP, OpenCL) accepts an
    already-seen buffer class outright, but never a read-only one for a pointer the kernel
    writes: that goes to the full check, which refuses it; a read pointer takes it."""
    from pybackend import PyBackend

    from gompute_core.backend import ArgBuffer, signature_layout
    from gompute_core.ir.nodes import PointerType
    from gompute_core.plugins import manager
    from gompute_core.raw.binding import PackedBinder

    with manager.isolated():
        manager.register(PyBackend("pybind", host_memory=False))
        device = manager.open_device("pybind", 0)
        f32 = np.dtype(np.float32)
        signature = (("x", PointerType(np.float32)), ("out", PointerType(np.float32)))
        args = ArgBuffer(signature_layout(signature))
        checked: list[str] = []

        def converter(name: str) -> object:
            def convert(buf: object) -> object:
                checked.append(name)
                if name == "out" and buf.readonly:  # type: ignore[attr-defined]
                    raise InvalidArgument(f"{name} is read-only memory")
                return buf
            return convert

        bind = PackedBinder(["pointer", "written"], [converter("x"), converter("out")],
                            [f32, f32], device, args, None).bind
        x, out = device.alloc(16), device.alloc(16)
        x.dtype = out.dtype = f32
        bind([x, out])
        checked.clear()
        bind([x, out])  # both seen: no full check
        assert checked == []
        x.readonly = out.readonly = True
        with pytest.raises(InvalidArgument, match="out is read-only"):
            bind([x, out])
        assert checked == ["out"]  # the read pointer still took the fast path

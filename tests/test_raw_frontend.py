"""Raw kernels in the core, without a device: definitions, lowering, the barrier checks,
the uniformity analysis, the argument layout, and by-name resolution errors."""

from __future__ import annotations

import ctypes
import importlib.util
import itertools
import struct
import textwrap
from pathlib import Path

import numpy as np
import pytest

import gompute_core as g
from gompute_core.backend import ArgBuffer, signature_layout
from gompute_core.errors import InvalidArgument, KernelSyntaxError
from gompute_core.ir import nodes as ir
from gompute_core.ir.uniformity import varying_names
from gompute_core.raw.kernel import RawKernelDef

_COUNTER = itertools.count()


def define(tmp_path: Path, body: str) -> object:
    """The one raw kernel a module holding ``body`` defines (a real file: kernels are read
    from their source)."""
    name = f"raw_frontend_mod_{next(_COUNTER)}"
    path = tmp_path / f"{name}.py"
    body = textwrap.dedent(body).replace("rf_bad", f"rf_bad_{name}")
    path.write_text("import gompute_core as g\nB = g.builtins\n" + body)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    (kernel,) = [v for v in vars(module).values() if type(v).__name__ == "RawKernelDef"]
    return kernel


def lowered(tmp_path: Path, body: str) -> ir.Function:
    return define(tmp_path, body).lower().functions[-1]  # type: ignore[attr-defined]


def test_seed_example_lowers_to_loads_stores_and_geometry(tmp_path: Path) -> None:
    fn = lowered(tmp_path, '''
        @g.raw_kernel(block=256)
        def rf_add(data: g.GlobalPtr[g.f32], n: g.u64):
            i = B.global_id(0)
            if i < n:
                data[i] += 1
    ''')
    assert fn.ret is None and fn.args == (("data", ir.PointerType(np.float32)), ("n", np.uint64))
    assign, branch = fn.body
    assert assign == ir.Assign("i", ir.Geometry("global_id", 0, np.int64))
    (store,) = branch.body
    assert isinstance(store, ir.Store) and store.index == (ir.Var("i", np.int64),)
    assert isinstance(store.value, ir.Binary) and isinstance(store.value.lhs, ir.Load)


@pytest.mark.parametrize("body,match", [
    ('''
        @g.raw_kernel
        def rf_bad(d: g.GlobalPtr[g.f32]):
            if B.local_id(0) < 5:
                B.barrier()
    ''', r":7: barrier\(\) under a condition or loop that depends on the thread index \(line 6\)"),
    ('''
        @g.raw_kernel
        def rf_bad(d: g.GlobalPtr[g.f32], n: g.u64):
            if B.global_id(0) >= n:
                return
            B.barrier()
    ''', r":8: barrier\(\) after a return some threads may take \(line 7\)"),
    ('''
        @g.raw_kernel
        def rf_bad(d: g.GlobalPtr[g.f32]):
            x = B.local_id(0) * 2
            y = x + 1
            while y > 0:
                y -= 1
                B.barrier()
    ''', r"barrier\(\) under a condition or loop that depends on the thread index \(line 8\)"),
    ('''
        @g.raw_kernel
        def rf_bad(d: g.GlobalPtr[g.f32]):
            v = B.atomic_add(d, 0, 1.0)
            if v > 3:
                B.barrier()
    ''', "depends on the thread index"),
    ('''
        @g.raw_kernel
        def rf_bad(d: g.GlobalPtr[g.f32], p: g.f32):
            return 5
    ''', "a raw kernel returns nothing"),
    ('''
        @g.raw_kernel
        def rf_bad(d: g.GlobalPtr[g.f32]):
            if B.block_id(0) > 1:
                s = B.shared_array(g.f32, 5)
    ''', "top level of the kernel's body"),
    ('''
        def helper(x):
            return B.local_id(0) + x
        @g.raw_kernel
        def rf_bad(d: g.GlobalPtr[g.f32]):
            d[0] = helper(1.0)
    ''', r"'B.local_id' is only available in a @g.raw_kernel function's own body"),
    ('''
        @g.raw_kernel
        def rf_bad(d: g.GlobalPtr[g.f32]):
            t = B.shared_array(g.f32, (16, 17))
            t[3] = 1.0
    ''', "'t' has 2 dimensions, indexed with 1"),
    ('''
        @g.raw_kernel
        def rf_bad(d: g.GlobalPtr[g.f32]):
            t = B.shared_array(g.f32, 8)
            t[8] = 1.0
    ''', "index 8 out of range for 't'"),
    ('''
        @g.raw_kernel
        def rf_bad(d: g.GlobalPtr[g.f16]):
            B.atomic_add(d, 0, 1.0)
    ''', "atomics take i32, u32, i64, u64, f32 and f64"),
    ('''
        @g.raw_kernel
        def rf_bad(d: g.GlobalPtr[g.i32]):
            d[0] = 2**40
    ''', "out of bounds for i32"),
    ('''
        @g.raw_kernel
        def rf_bad(d: g.GlobalPtr[g.f32]):
            d[0] = B.global_id(3)
    ''', "constant dimension 0, 1 or 2"),
    ('''
        @g.raw_kernel
        def rf_bad(d: g.GlobalPtr[g.f32]):
            B.barrier(1)
    ''', r"barrier\(\) takes no arguments"),
    ('''
        @g.raw_kernel
        def rf_bad(d: g.GlobalPtr[g.f32]):
            B.threadfence(d)
    ''', r":6: threadfence\(\) takes no arguments"),
    ('''
        @g.raw_kernel
        def rf_bad(d: g.GlobalPtr[g.f32]):
            d[0] = B.threadfence()
    ''', r":6: threadfence\(\) is a statement: call it on a line of its own"),
    ('''
        @g.raw_kernel
        def rf_bad(d: g.GlobalPtr[g.f32]):
            d[0:2] = 1.0
    ''', "slicing 'd' is not supported"),
    ('''
        @g.raw_kernel
        def rf_bad(d: g.GlobalPtr[g.f32]):
            s = B.shared_array(g.f32, 4)
            s = 1.0
    ''', "incompatible"),
])
def test_rejected_with_the_line(tmp_path: Path, body: str, match: str) -> None:
    kernel = define(tmp_path, body)
    with pytest.raises(KernelSyntaxError, match=match):
        kernel.lower()  # type: ignore[attr-defined]


def test_memory_outside_raw_kernels_is_rejected() -> None:
    """A spec's element function cannot use device builtins."""
    B = g.builtins

    def element(x):
        return x + B.local_id(0)

    spec = g.map("rf_map_with_builtin", g.f32, None, element)
    with pytest.raises(KernelSyntaxError, match="only available in a @g.raw_kernel"):
        spec.lower()

    def fenced(x):
        B.threadfence()
        return x

    spec = g.map("rf_map_with_fence", g.f32, None, fenced)
    with pytest.raises(KernelSyntaxError, match="threadfence.*only available in a @g.raw_k"):
        spec.lower()


def test_threadfence_is_a_statement_of_the_ir_and_every_dialect() -> None:
    """``threadfence()`` lowers to one ``Fence`` (the printer shows it) and does nothing
    in Python (the oracle); each dialect's spelling: ``tests/test_codegen_raw.py``."""
    from gompute_core.ir.printer import format_function

    B = g.builtins

    @g.raw_kernel
    def rf_fence(d: g.GlobalPtr[g.u32]):
        d[1] = g.u32(7)
        B.threadfence()
        B.atomic_exch(d, 0, g.u32(1))

    fn = rf_fence.lower().functions[-1]
    assert [type(s).__name__ for s in fn.body][:3] == ["Store", "Fence", "Evaluate"]
    assert "threadfence()" in format_function(fn)
    assert B.threadfence() is None


def test_definition_errors() -> None:
    with pytest.raises(InvalidArgument, match="'d' has no annotation"):
        @g.raw_kernel
        def rf_no_annotation(d):
            pass
    with pytest.raises(InvalidArgument, match="block x=2000 is outside 1..1024"):
        @g.raw_kernel(block=2000)
        def rf_big_block(d: g.GlobalPtr[g.f32]):
            pass
    with pytest.raises(InvalidArgument, match=r"block \(64, 32, 1\) has 2048 threads"):
        @g.raw_kernel(block=(64, 32))
        def rf_big_block2(d: g.GlobalPtr[g.f32]):
            pass
    with pytest.raises(InvalidArgument, match="bounds key 'n' is not a GlobalPtr"):
        @g.raw_kernel(bounds={"n": "n"})
        def rf_bounds(d: g.GlobalPtr[g.f32], n: g.u64):
            pass
    with pytest.raises(InvalidArgument, match="element type must be a Gompute scalar type"):
        g.GlobalPtr[str]


def test_names_are_unique_across_specs_and_raw_kernels() -> None:
    spec = g.map("rf_shared_name", g.f32, None, lambda x: x)  # held: its name is taken
    with pytest.raises(InvalidArgument, match=r"raw kernel name 'rf_shared_name' \(defined at "
                                              r".*test_raw_frontend.py:\d+\) is already used "
                                              r"by a map defined at .*test_raw_frontend.py"):
        @g.raw_kernel(name="rf_shared_name")
        def other(d: g.GlobalPtr[g.f32]):
            pass
    assert spec.kind == "map"


def test_builtins_and_definitions_are_not_callable_from_python() -> None:
    with pytest.raises(KernelSyntaxError, match="only inside a @g.raw_kernel"):
        g.builtins.global_id(0)

    @g.raw_kernel
    def rf_called(d: g.GlobalPtr[g.f32]):
        pass

    with pytest.raises(InvalidArgument, match="launch it with g.RawKernel"):
        rf_called(np.zeros(3, np.float32))


def test_uniformity() -> None:
    """Varying: thread geometry, atomics, what is computed from them or assigned under
    varying control, and loop-carried values; uniform: the rest."""
    i64 = np.int64
    lid = ir.Geometry("local_id", 0, i64)
    bid = ir.Geometry("block_id", 0, i64)
    var = ir.Var
    body = (
        ir.Assign("a", lid),
        ir.Assign("b", bid),
        ir.Assign("c", ir.Binary("add", var("b", i64), ir.Const(1, i64), i64)),
        ir.If(ir.Compare("lt", var("a", i64), ir.Const(3, i64), np.bool_),
              (ir.Assign("d", ir.Const(1, i64)),), ()),
        ir.While(ir.Compare("lt", var("c", i64), ir.Const(9, i64), np.bool_),
                 (ir.Assign("c", ir.Binary("add", var("c", i64), var("e", i64), i64)),
                  ir.Assign("e", var("a", i64)))),
        ir.Assign("f", var("b", i64)),
    )
    fn = ir.Function("k", (), None, tuple((n, i64) for n in "abcdef"), body)
    assert varying_names(fn) == {"a", "c", "d", "e"}


def test_raw_argument_layout_is_the_c_struct() -> None:
    """Pointers, scalars of every width and a params record at their C offsets."""

    @g.params
    class P:
        a: g.u8
        b: g.f64

    from gompute_core.abi import pack, struct_type_of

    signature = (("p0", ir.PointerType(np.float32)), ("c", np.uint8), ("x", np.float32),
                 ("p", struct_type_of(P)), ("h", np.float16), ("q", ir.PointerType(np.int8)))
    layout = signature_layout(signature)

    class C(ctypes.Structure):
        _fields_ = [("p0", ctypes.c_uint64), ("c", ctypes.c_uint8), ("x", ctypes.c_float),
                    ("p", type("CP", (ctypes.Structure,), {"_fields_": [
                        ("a", ctypes.c_uint8), ("b", ctypes.c_double)]})),
                    ("h", ctypes.c_uint16), ("q", ctypes.c_uint64)]

    assert [s.offset for s in layout.slots] == [getattr(C, n).offset for n, _ in signature]
    assert layout.size == C.q.offset + 8
    buf = ArgBuffer(layout)
    buf.pack(0x1122334455667788, 7, 1.5, 0.25, 0xABC)
    buf.set_params(pack(P(a=np.uint8(9), b=np.float64(2.0))))
    c = C.from_buffer_copy(bytes(buf.data[:ctypes.sizeof(C)]))
    assert (c.p0, c.c, c.x, c.p.a, c.p.b, c.q) == (0x1122334455667788, 7, 1.5, 9, 2.0, 0xABC)
    assert struct.unpack_from("<e", buf.data, C.h.offset)[0] == 0.25


def test_unknown_backend_and_kernel_names() -> None:
    with pytest.raises(g.UnsupportedBackend):
        g.raw_kernel_by_name("no-such-backend", "anything")


def _scale_kernel(T: type, name: str) -> RawKernelDef:
    @g.raw_kernel(name=name)
    def scale(data: g.GlobalPtr[T], n: g.u64, factor: T):
        i = g.builtins.global_id(0)
        if i < n:
            data[i] = data[i] * factor * T(1)

    return scale


def test_string_annotations_see_the_kernels_closure() -> None:
    """Under ``from __future__ import annotations`` a factory's kernel annotates with its
    element type ``T`` from the closure, as its body uses it; each made type runs as
    NumPy computes it. A name neither the module nor the closure holds is still refused."""
    for T, name in ((g.f64, "closure_scale_f64"), (g.i32, "closure_scale_i32")):
        raw = g.RawKernel(_scale_kernel(T, name), "cpu")
        data = np.arange(-5, 6).astype(T)
        want = data * T(3)
        raw.launch(1, 64, [data, data.size, T(3)])
        np.testing.assert_array_equal(data, want)

    def unknown(data: g.GlobalPtr[Missing]):  # noqa: F821
        pass

    with pytest.raises(g.InvalidArgument, match="annotations cannot be evaluated.*Missing"):
        g.raw_kernel(unknown)

"""Per-thread local arrays (``g.local_array(T, n)``, ``g.builtins.local_array``): the kernel
function still runs as its own oracle (``numpy.zeros``), the CPU kernels equal it, the IR
keeps local accesses as their own nodes, the GPU renderings compile with NVRTC and hiprtc,
and what is outside the rules is a ``KernelSyntaxError`` at its line."""

# ruff: noqa: F841  (the misuse corpus below assigns arrays it never reads)

from __future__ import annotations

import numpy as np
import pytest

import gompute_core as g
from gompute_core.errors import KernelSyntaxError
from gompute_core.frontend import lower
from gompute_core.ir import nodes as ir
from gompute_core.ir.printer import format_kernel

B = g.builtins
F32, F64 = np.float32, np.float64


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GOMPUTE_CACHE_DIR", str(tmp_path / "cache"))


def recurrence(x):
    c = g.local_array(g.f32, 6)
    c[0] = 1.0
    c[1] = x
    for i in range(2, 6):
        c[i] = c[i - 1] * x - c[i - 2]
    acc = 0.0
    for i in range(6):
        acc += c[i]
    c[-1] += 1  # a constant negative index counts from the end, as NumPy's
    return acc + c[5]


def fill(t, x):
    for i in range(2):
        for j in range(3):
            t[i, j] = x * (i + 1) + j
    return t[1, 2]


def tile(x):
    t = g.local_array(g.f64, (2, 3))
    last = fill(t, x)  # a helper writes the caller's array, as Python does
    return t[0, 0] + t[0, 2] * 10.0 + last


def tile_by_statement(x):
    t = g.local_array(g.f64, (2, 3))
    fill(t, x)  # called for what it writes: a statement, its result dropped
    fill(t, t[0, 1])
    return t[0, 0] + t[1, 2]


def counts(x):
    hist = g.local_array(g.i32, 4)
    flags = g.local_array(bool, 2)
    hist[0] = x * 2.5  # converted as NumPy's item assignment: truncated
    for k in range(1, 4):
        hist[k] = hist[k - 1] + k
    flags[1] = hist[3] > 10
    return hist[3] if flags[1] else -hist[0]


def _run_cpu(spec: object, x: np.ndarray) -> np.ndarray:
    pytest.importorskip("gompute_cpu")
    y = x.copy()
    with g.Kernel(spec, "cpu") as k:  # type: ignore[arg-type]
        k.run(y)
    return y


@pytest.mark.parametrize(("fn", "t"), [(recurrence, F32), (tile, F64),
                                       (tile_by_statement, F64), (counts, np.int32)],
                         ids=["recurrence", "helper_2d", "helper_statement", "int_bool"])
def test_cpu_kernel_equals_the_function_run_as_python(fn: object, t: type) -> None:
    spec = g.map(f"la_{fn.__name__}", t, None, fn)  # type: ignore[attr-defined]
    x = np.linspace(-3, 3, 61).astype(t) if t is not np.int32 else np.arange(-30, 31, dtype=t)
    with np.errstate(all="ignore"):
        want = np.array([fn(v) for v in x], t)  # type: ignore[operator]
    assert np.array_equal(_run_cpu(spec, x), want)


def test_local_accesses_are_their_own_ir_nodes() -> None:
    kir = g.map("la_ir", F32, None, recurrence).lower()
    text = format_kernel(kir)
    assert "var c: local f32[6]" in text and "c[5i64] = c[5i64] + 1.0f32" in text
    kinds = {type(n) for n in _walk(kir.functions[-1].body)}
    assert ir.LocalLoad in kinds and ir.LocalStore in kinds
    assert ir.Load not in kinds and ir.Store not in kinds


def _walk(obj: object) -> list[object]:
    out: list[object] = [obj]
    if isinstance(obj, tuple):
        for x in obj:
            out.extend(_walk(x))
    elif hasattr(obj, "__dataclass_fields__") and not isinstance(obj, ir.StructType):
        for f in obj.__dataclass_fields__:
            out.extend(_walk(getattr(obj, f)))
    return out


@g.raw_kernel(block=64)
def la_raw_tile(a: g.GlobalPtr[g.f32], out: g.GlobalPtr[g.f32], n: g.u64):
    acc = B.local_array(g.f32, (4, 4))
    i = B.global_id(0)
    if i < n:
        for r in range(4):
            for c in range(4):
                acc[r, c] = g.math.fma(a[i], g.f32(r), g.f32(c))
        s = 0.0
        for r in range(4):
            s += acc[r, r]
        out[i] = s


def _compile_or_skip(spec: object, backend: str, arch: str) -> g.Artifact:
    try:
        return g.compile(spec, backend, arch=arch)  # type: ignore[arg-type]
    except (ImportError, g.BackendUnavailable, g.UnsupportedBackend) as exc:
        pytest.skip(f"no {backend} compiler: {exc}")


@pytest.mark.parametrize(("backend", "arch"), [("cuda", "sm_90"), ("hip", "gfx90a")])
def test_gpu_renderings_compile(backend: str, arch: str) -> None:
    for spec in (g.map(f"la_gpu_{backend}", F32, None, recurrence),
                 g.map(f"la_gpu2_{backend}", F64, None, tile),
                 g.map(f"la_gpu3_{backend}", np.int32, None, counts),
                 g.map(f"la_gpu4_{backend}", F64, None, tile_by_statement)):
        art = _compile_or_skip(spec, backend, arch)
        assert "] = {0};" in art.source
    art = _compile_or_skip(la_raw_tile, backend, arch)
    assert "float v_acc[4][4] = {0};" in art.source


def test_opencl_rendering_declares_private_arrays() -> None:
    pytest.importorskip("gompute_opencl")
    from gompute_opencl.renderer import OpenCLRenderer

    src = OpenCLRenderer().render(g.map("la_ocl", F64, None, tile).lower())
    assert "double v_t[2][3] = {0};" in src and "v_t[(gp_i64)(" in src


def test_cpu_raw_kernel_body_arrays_run_per_thread() -> None:
    """No barrier (one flat loop, an array per thread): each element as NumPy scalars
    compute it, ``g.math.fma`` included."""
    pytest.importorskip("gompute_cpu")
    n = 200
    a = np.linspace(-1, 1, n).astype(F32)
    out = np.zeros(n, F32)
    k = g.RawKernel(la_raw_tile, "cpu")
    k.launch(-(-n // 64), 64, [a, out, np.uint64(n)])
    k.synchronize()
    want = []
    for v in a:
        s = F32(0)
        for r in range(4):
            s = s + g.math.fma(v, F32(r), F32(r))
        want.append(s)
    assert np.array_equal(out, np.array(want, F32))


@g.raw_kernel(block=32)
def la_raw_phases(a: g.GlobalPtr[g.f32], out: g.GlobalPtr[g.f32], n: g.i64):
    sh = B.shared_array(g.f32, 32)
    acc = B.local_array(g.f32, (2, 3))
    i = B.global_id(0)
    t = B.local_id(0)
    acc[1, 2] = a[i] * 2
    sh[t] = acc[1, 2]
    B.barrier()
    for k in range(3):  # a block loop: every thread's array lives across its barriers
        acc[0, k] += sh[(t + k) % 32]
        B.barrier()
    if acc[0, 0] >= 0:
        out[i] = acc[0, 0] + acc[0, 1] + acc[0, 2] + acc[1, 2] + acc[1, 0]


def test_cpu_raw_kernel_body_arrays_live_across_barriers() -> None:
    """With barriers (the block's threads as loops split into phases): every thread keeps
    its own zeroed array from phase to phase."""
    pytest.importorskip("gompute_cpu")
    n = 128
    a = np.arange(n, dtype=F32) - 50
    out = np.full(n, -1, F32)
    k = g.RawKernel(la_raw_phases, "cpu")
    k.launch(n // 32, 32, [a, out, n])
    k.synchronize()
    doubled = (a * 2).reshape(-1, 32)
    want = np.full(n, -1, F32).reshape(-1, 32)
    for blk in range(n // 32):
        for t in range(32):
            acc = np.zeros((2, 3), F32)
            acc[1, 2] = doubled[blk, t]
            for kk in range(3):
                acc[0, kk] += doubled[blk, (t + kk) % 32]
            if acc[0, 0] >= 0:
                want[blk, t] = acc[0, 0] + acc[0, 1] + acc[0, 2] + acc[1, 2] + acc[1, 0]
    assert np.array_equal(out, want.reshape(-1))


def test_barrier_checks_see_a_thread_dependent_array() -> None:
    @g.raw_kernel(name="la_divergent")
    def la_divergent(d: g.GlobalPtr[g.f32], n: g.u64):
        v = B.local_array(g.f32, 2)
        v[0] = d[B.local_id(0)]
        if v[0] > 0:
            B.barrier()

    with pytest.raises(KernelSyntaxError, match="barrier.. under a condition"):
        la_divergent.lower()

    @g.raw_kernel(name="la_uniform")
    def la_uniform(d: g.GlobalPtr[g.f32], n: g.u64):
        v = B.local_array(g.f32, 2)
        v[0] = d[0]
        if v[0] > 0:
            B.barrier()

    la_uniform.lower()


def decl_in_loop(x):
    for _ in range(2):
        t = g.local_array(g.f32, 2)
    return x


def decl_twice(x):
    t = g.local_array(g.f32, 2)
    t = g.local_array(g.f32, 2)
    return x


def decl_runtime_size(x):
    t = g.local_array(g.f32, g.i32(x))
    return x


def decl_huge(x):
    t = g.local_array(g.f32, 5000)
    return x


def decl_bad_type(x):
    t = g.local_array(g.Array, 4)
    return x


def index_out_of_range(x):
    t = g.local_array(g.f32, 4)
    return t[4]


def three_dims(x):
    t = g.local_array(g.f32, (2, 2, 2))
    return x


def wrong_rank(x):
    t = g.local_array(g.f32, (2, 2))
    return t[1]


def array_as_value(x):
    t = g.local_array(g.f32, 2)
    u = t
    return x


def fill_no_return(t, x):
    t[0] = x


def helper_without_return(x):
    t = g.local_array(g.f32, 2)
    fill_no_return(t, x)
    return t[0]


def math_as_statement(x):
    g.math.sin(x)
    return x


def float_index(x):
    t = g.local_array(g.f32, 2)
    return t[x]


@pytest.mark.parametrize(("fn", "message"), [
    (decl_in_loop, "must be declared at the top level"),
    (decl_twice, "declared once"),
    (decl_runtime_size, "dimensions must be positive integer constants"),
    (decl_huge, "at most 4096"),
    (decl_bad_type, "is not a scalar type"),
    (index_out_of_range, "index 4 out of range"),
    (three_dims, "1 or 2 dimensions"),
    (wrong_rank, "has 2 dimensions, indexed with 1"),
    (array_as_value, "cannot assign a local array f32"),
    (float_index, "must be an integer, got f32"),
    (helper_without_return, r"'fill_no_return' never returns a value \(a helper called for "
                            r"what it writes .* 'return 0'"),
    (math_as_statement, "a call of 'g.math.sin' as a statement"),
], ids=lambda v: getattr(v, "__name__", "message"))
def test_misuse_is_a_kernel_syntax_error_at_its_line(fn: object, message: str) -> None:
    with pytest.raises(KernelSyntaxError, match=message) as info:
        lower(fn, [F32], F32, "k")
    assert info.value.filename == __file__


def put(a, v, j):
    a[j] = v
    return 0


@g.raw_kernel(block=32)
def la_raw_statement(out: g.GlobalPtr[g.f32], n: g.u64, j: g.i64):
    t = B.local_array(g.f32, 2)
    i = B.global_id(0)
    if i < n:
        put(t, g.f32(i), j)  # a helper called for what it writes, as a statement
        out[i] = t[0] * 3 + t[1]


@pytest.mark.parametrize("checked", [False, True])
def test_cpu_raw_helper_statement_writes_the_callers_array(checked: bool) -> None:
    """The statement call runs (each thread's array as NumPy computes it); checked, a write
    past the array inside the helper is an ``OutOfBounds`` naming the helper's array."""
    pytest.importorskip("gompute_cpu")
    n = 96
    k = g.RawKernel(la_raw_statement, "cpu", checked=checked)
    for j in (0, 1):
        out = np.full(n, -1, F32)
        k.launch(n // 32, 32, [out, np.uint64(n), np.int64(j)])
        k.synchronize()
        want = []
        for i in range(n):
            t = np.zeros(2, F32)
            put(t, F32(i), j)
            want.append(t[0] * F32(3) + t[1])
        assert np.array_equal(out, np.array(want, F32))
    if checked:
        out = np.zeros(n, F32)
        k.launch(n // 32, 32, [out, np.uint64(n), np.int64(2)])
        with pytest.raises(g.OutOfBounds) as info:
            k.synchronize()
        assert (info.value.array, info.value.index, info.value.extent) == ("a", 2, 2)

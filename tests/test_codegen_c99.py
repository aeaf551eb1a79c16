"""A plain C99 dialect of the shared C renderer: every difference from the CUDA-flavoured
defaults is a class attribute or a small method (language mode, integer typedefs, vector
loads, reserved words, address spaces), and every conformance kernel it renders is C99 that
``gcc -std=c99 -pedantic-errors`` accepts: no C++ (bare struct names, ``static_assert``,
``alignof``, ``extern "C"``, empty initializers) leaks out of the shared code."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
import pytest

import gompute_core as g
from gompute_core.codegen import CRenderer
from gompute_core.ir.intrinsics import INTRINSICS
from gompute_core.testing.catalogue import entries

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not found")

_C99_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if "
    "inline int long register restrict return short signed sizeof static struct switch typedef "
    "union unsigned void volatile while _Bool _Complex _Imaginary bool true false".split())
_LIBC_NAMES = frozenset(
    {m.c for m in INTRINSICS if m.c} | {f"{m.c}f" for m in INTRINSICS if m.c}
    | {"memcpy", "offsetof", "NULL", "size_t"})


class C99Renderer(CRenderer):
    """Serial host C99: one thread runs the whole grid-stride loop, 16-byte vectors copied
    with ``memcpy`` (the host-compiler form), f16 through GCC's ``_Float16`` (an extension,
    marked so); a kernel named like a libm function gets a mangled entry symbol."""

    name: ClassVar[str] = "c99"
    language: ClassVar[Literal["c++", "c"]] = "c"
    vector_loads: ClassVar[Literal["union", "memcpy", "scalar"]] = "memcpy"
    prelude: ClassVar[str] = (
        "#include <math.h>\n#include <stdbool.h>\n#include <stddef.h>\n#include <string.h>\n"
        "typedef struct { unsigned int w[4]; } gp_v16;\n"
        "typedef struct { unsigned int w[2]; } gp_v8;\n"
        "static inline float gp_bits_f32(int b) { float f; memcpy(&f, &b, 4); return f; }\n"
        "static inline double gp_bits_f64(long long b) "
        "{ double d; memcpy(&d, &b, 8); return d; }\n")
    half_prelude: ClassVar[str] = (
        "__extension__ typedef _Float16 gp_half;\n"
        "typedef union { gp_f16 u; gp_half h; } gp_hbits;\n"
        "static inline float gp_h2f(gp_f16 v) { gp_hbits b; b.u = v; return (float)b.h; }\n"
        "static inline gp_f16 gp_f2h(float f) { gp_hbits b; b.h = (gp_half)f; return b.u; }\n"
        "static inline gp_f16 gp_d2h(double d) { gp_hbits b; b.h = (gp_half)d; return b.u; }\n"
        "static inline float gp_rh(float f) { return gp_h2f(gp_f2h(f)); }\n")
    kernel_qualifier: ClassVar[str] = "void"
    launch_bounds: ClassVar[str] = ""
    function_qualifier: ClassVar[str] = "static inline"
    shared_qualifier: ClassVar[str] = ""
    block_barrier: ClassVar[str] = "(void)0"
    geometry: ClassVar[dict[str, str]] = {
        "local_id": "0", "block_id": "0", "block_dim": "1", "grid_dim": "1"}
    restrict: ClassVar[str] = "restrict "
    unroll_pragma: ClassVar[str] = ""
    offsetof: ClassVar[str] = "offsetof({t}, {m})"
    vector_types: ClassVar[dict[int, str]] = {
        16: "gp_v16", 8: "gp_v8", 4: "unsigned int", 2: "unsigned short", 1: "unsigned char"}
    float_from_bits: ClassVar[dict[str, str]] = {"f32": "gp_bits_f32", "f64": "gp_bits_f64"}
    reserved_words: ClassVar[frozenset[str]] = _C99_KEYWORDS | _LIBC_NAMES


class UnionC99Renderer(C99Renderer):
    """The same target with the GPU dialects' union vectors."""

    vector_loads: ClassVar[Literal["union", "memcpy", "scalar"]] = "union"


class ScalarC99Renderer(C99Renderer):
    """The same target without vector loads."""

    vector_loads: ClassVar[Literal["union", "memcpy", "scalar"]] = "scalar"


GCC = ["gcc", "-std=c99", "-pedantic-errors", "-Wall", "-Werror", "-Wno-unused-function",
       "-Wno-unused-variable", "-Wno-unknown-pragmas", "-fsyntax-only"]


def _gcc(source: str, path: Path) -> str:
    """gcc's complaints about ``source`` (empty when it is accepted)."""
    path.write_text(source)
    res = subprocess.run([*GCC, str(path)], capture_output=True, text=True)
    return "" if res.returncode == 0 else res.stderr


@pytest.mark.parametrize("dialect", [C99Renderer, UnionC99Renderer, ScalarC99Renderer],
                         ids=lambda d: d.__name__)
def test_every_conformance_kernel_is_c99(dialect: type[CRenderer], tmp_path: Path) -> None:
    jobs = {key: dialect().render(e.spec().lower()) for key, e in sorted(entries().items())}
    assert all("static_assert" not in s and 'extern "C"' not in s for s in jobs.values())
    with ThreadPoolExecutor(4) as pool:
        errors = dict(zip(jobs, pool.map(lambda kv: _gcc(kv[1], tmp_path / f"{kv[0]}.c"),
                                         jobs.items()), strict=True))
    bad = {k: v for k, v in errors.items() if v}
    assert not bad, f"{len(bad)} of {len(jobs)} kernels rejected by gcc -std=c99, e.g. " \
                    f"{next(iter(bad))}:\n{next(iter(bad.values()))[:2000]}"


@g.params
class Keywords:
    """Fields named like C++ keywords (valid in C99)."""

    new: g.f32
    this: g.i32


def scale(x, p: Keywords):
    return x * p.new + g.f32(p.this)


def test_reserved_words_and_entry_symbol_come_from_the_dialect(tmp_path: Path) -> None:
    cuda_renderer = pytest.importorskip("gompute_cuda.renderer")
    kir = g.map("exp", g.f32, Keywords, scale).lower()
    c99, cuda = C99Renderer(), cuda_renderer.CUDARenderer()
    # a kernel called exp collides with the math library on every C-family target
    # (NVRTC refused it on the H200)
    assert c99.entry_symbol(kir) == "exp_" and cuda.entry_symbol(kir) == "exp_"
    src = c99.render(kir)
    assert "void exp_(float* restrict data, gp_u64 n, P_Keywords p)" in src
    assert "// kernel exp (map), entry exp_," in src
    assert "float new;" in src and "gp_i32 this;" in src
    assert _gcc(src, tmp_path / "exp.c") == ""
    cuda_src = cuda.render(kir)
    assert "float new_;" in cuda_src and "gp_i32 this_;" in cuda_src
    assert "p.new_" in cuda_src and "static_assert(" in cuda_src


def affine(x):
    return x * 3 - 1


def _shared_library(source: str, path: Path, flags: list[str] | None = None) -> ctypes.CDLL:
    path.with_suffix(".c").write_text(source)
    subprocess.run(["gcc", "-std=c99", *(flags or ["-O1"]), "-shared", "-fPIC", "-o", str(path),
                    str(path.with_suffix(".c")), "-lm"], check=True, capture_output=True)
    return ctypes.CDLL(str(path))


@pytest.mark.parametrize("dialect", [C99Renderer, UnionC99Renderer, ScalarC99Renderer],
                         ids=lambda d: d.__name__)
def test_c99_entry_points_run_like_the_oracle(dialect: type[CRenderer], tmp_path: Path) -> None:
    """The serial C99 build of a map (vector loop, unrolled and single, then the tail) and a
    reduce preset (lane accumulators, then the tree) gives the oracle's bits."""
    tag = dialect.__name__.lower()
    mapk = g.map(f"c99_affine_{tag}", g.f32, None, affine).lower()
    lib = _shared_library(dialect().render(mapk), tmp_path / "affine.so")
    buf = np.zeros(64 + 4, np.float32)
    start = (-buf.ctypes.data % 16) // 4  # a 16-byte aligned view: the vector path runs
    data = buf[start:start + 39]
    data[:] = np.linspace(-7.25, 11.5, 39, dtype=np.float32)
    want = np.array([affine(x) for x in data], np.float32)
    run = getattr(lib, mapk.name)
    run.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
    run(data.ctypes.data, data.size)
    assert data.tobytes() == want.tobytes()

    sumk = g.sum(f"c99_sum_{tag}", g.i32, None).lower()
    lib = _shared_library(dialect().render(sumk), tmp_path / "sum.so")
    values = np.random.default_rng(7).integers(-2**31, 2**31 - 1, 1001, dtype=np.int32)
    partial = np.zeros(1, np.int32)
    run = getattr(lib, sumk.name)
    run.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p]
    run(values.ctypes.data, values.size, partial.ctypes.data)
    assert partial[0] == np.add.reduce(values, dtype=np.int32)  # wraps, as the IR says


def _x86_avx2() -> bool:
    probe = subprocess.run(["gcc", "-mavx2", "-E", "-x", "c", "-"], input="", text=True,
                           capture_output=True)
    return probe.returncode == 0 and "avx2" in Path("/proc/cpuinfo").read_text() \
        if Path("/proc/cpuinfo").exists() else False


@pytest.mark.skipif(not _x86_avx2(), reason="needs an x86 CPU with AVX2 and gcc -mavx2")
@pytest.mark.parametrize("flags", [["-O3", "-mavx2"], ["-O3", "-march=native"], ["-O2"]],
                         ids=" ".join)
def test_vector_sums_survive_gcc_O3_avx2(flags: list[str], tmp_path: Path) -> None:
    """The sum presets of the host C dialect, built by gcc with ``flags``, over sizes that
    exercise every loop (unrolled vectors, single vectors, the scalar tail): GCC 12.2 at
    ``-O3 -mavx2`` turned the union form's 4-lane wrapping i32 sum of 0..255 into 15040
    (the right sum is 32640); the memcpy form gives the oracle's value for every type and
    size."""
    for T in (g.i32, g.i64, g.u32, g.i16, g.u8, g.f32, g.f64):
        kir = g.sum(f"c99_gcc_sum_{np.dtype(T).name}", T, None).lower()
        source = C99Renderer().render(kir)
        assert "memcpy(r[u], data + (gp_i + u * gp_nth)" in source  # the vector loop is there
        lib = _shared_library(source, tmp_path / f"{kir.name}.so", flags)
        run = getattr(lib, kir.name)
        run.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p]
        buf = np.zeros(700, T)
        start = (-buf.ctypes.data % 16) // buf.itemsize  # 16-byte aligned: the vector path
        for n in (8, 9, 24, 27, 64, 67, 256, 257, 600):
            data = buf[start:start + n]
            data[:] = (np.arange(n) % 100).astype(T)
            out = np.zeros(1, T)
            run(data.ctypes.data, n, out.ctypes.data)
            want = np.add.reduce(data, dtype=T)
            assert out[0] == want, (np.dtype(T).name, n, out[0], want)

"""Raw kernels through the C-family renderers: what the source says (no ``restrict`` on
raw pointers, launch bounds exactly when a block is declared, shared arrays, geometry in
64 bits), and that every example kernel (``tests/raw_examples.py``) compiles: NVRTC for
CUDA, hiprtc for gfx90a/gfx1030 with the code object's kernarg layout equal to
:func:`~gompute_core.backend.signature_layout`, the HIP source through NVRTC (the
HIP-on-CUDA fixture), and source given as is (``from_source``). No GPU needed.
"""

from __future__ import annotations

import re

import pytest
from raw_examples import EXAMPLES

from gompute_core.backend import signature_layout
from gompute_core.codegen import CRenderer
from gompute_core.compilation import compile_kernel
from gompute_core.errors import BackendUnavailable
from gompute_core.ir.kernel import RAW, KernelIR

pytest.importorskip("gompute_cuda")
pytest.importorskip("gompute_hip")

from gompute_cuda.renderer import CUDARenderer  # noqa: E402
from gompute_hip.renderer import HIPRenderer  # noqa: E402

NAMES = sorted(EXAMPLES)


def _opencl_renderer() -> type[CRenderer]:
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "examples" / "gompute-opencl"
    sys.path.insert(0, str(root))
    try:
        from gompute_opencl.renderer import OpenCLRenderer
    finally:
        sys.path.remove(str(root))
    return OpenCLRenderer


def _entry_line(src: str, name: str) -> str:
    return next(line for line in src.splitlines() if f" {name}(" in line
                and ("__global__" in line or "__kernel" in line))


def _nvrtc_or_skip() -> None:
    from gompute_cuda.nvrtc import load_nvrtc

    try:
        load_nvrtc()
    except BackendUnavailable as exc:
        pytest.skip(f"NVRTC unavailable: {exc}")


def _hiprtc_or_skip() -> None:
    pytest.importorskip("elftools")
    from gompute_hip import libs

    try:
        libs.hiprtc()
    except BackendUnavailable as exc:
        pytest.skip(f"hiprtc unavailable: {exc}")


# ---- the rendered source --------------------------------------------------------------
@pytest.mark.parametrize("renderer", [CUDARenderer, HIPRenderer, _opencl_renderer()],
                         ids=lambda r: r.name)
@pytest.mark.parametrize("name", NAMES)
def test_raw_pointers_are_never_restrict(renderer: type[CRenderer], name: str) -> None:
    kernel = EXAMPLES[name].kernel
    src = renderer().render(kernel.lower())
    head = _entry_line(src, kernel.name)
    assert "restrict" not in head
    assert head.count("*") == sum(1 for _, t in kernel.signature if hasattr(t, "elem"))


@pytest.mark.parametrize("name", NAMES)
def test_launch_bounds_exactly_when_a_block_is_declared(name: str) -> None:
    kernel = EXAMPLES[name].kernel
    kir = kernel.lower()
    cuda = _entry_line(CUDARenderer().render(kir), kernel.name)
    opencl = _entry_line(_opencl_renderer()().render(kir), kernel.name)
    if kir.block is None:
        assert "__launch_bounds__" not in cuda and "reqd_work_group_size" not in opencl
    else:
        x, y, z = kir.block
        assert f"__launch_bounds__({x * y * z})" in cuda
        assert f"reqd_work_group_size({x}, {y}, {z})" in opencl


def test_shared_arrays_barriers_and_geometry_per_dialect() -> None:
    kir = EXAMPLES["transpose"].kernel.lower()
    cuda = CUDARenderer().render(kir)
    assert "__shared__ float v_tile[16][17];" in cuda
    assert "__syncthreads();" in cuda and "threadIdx.y" in cuda and "blockIdx.y" in cuda
    opencl = _opencl_renderer()().render(kir)
    assert "__local float v_tile[16][17];" in opencl
    assert "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);" in opencl
    assert "get_local_id(1)" in opencl and "get_group_id(1)" in opencl
    # global_id from the group, never get_global_id (which adds the global offset)
    add = _opencl_renderer()().render(EXAMPLES["add_pair"].kernel.lower())
    assert "get_global_id" not in add
    assert "((gp_i64)get_group_id(0)) * ((gp_i64)get_local_size(0)) + " \
           "((gp_i64)get_local_id(0))" in add


def test_threadfence_per_dialect() -> None:
    """``threadfence()`` is each dialect's device-wide fence, between the store it
    publishes and the atomic that flags it."""
    kir = EXAMPLES["last_block_sum"].kernel.lower()
    for renderer, fence in ((CUDARenderer, "__threadfence();"), (HIPRenderer, "__threadfence();"),
                            (_opencl_renderer(), "mem_fence(CLK_GLOBAL_MEM_FENCE);")):
        src = renderer().render(kir)
        assert src.count(fence) == 2
        published = src[src.index("v_partials[(gp_i64)"):]  # the store, then the fence
        assert published.index(fence) < published.index("v_arrived[")


def test_bare_return_unused_atomics_and_scalar_conversions() -> None:
    src = CUDARenderer().render(EXAMPLES["scale"].kernel.lower())
    assert re.search(r"^\s+return;$", src, re.M)
    hist = CUDARenderer().render(EXAMPLES["histogram"].kernel.lower())
    assert "(void)(((gp_u32)atomicAdd(&v_h[" in hist
    saxpy = _entry_line(CUDARenderer().render(EXAMPLES["saxpy"].kernel.lower()), "raw_saxpy")
    # f16 and bool cross in their storage types, the params record by value
    assert "gp_f16 gp_arg_h" in saxpy and "gp_u8 gp_arg_b" in saxpy and "P_Scale v_p" in saxpy
    fill = CUDARenderer().render(EXAMPLES["fill"].kernel.lower())
    assert "Nothing" not in _entry_line(fill, "raw_fill")  # an empty record is no argument
    assert "const P_Nothing v_e = {};" in fill


def test_atomics_native_where_the_dialect_has_them_else_one_cas_loop_each() -> None:
    cuda = CUDARenderer().render(EXAMPLES["atomics"].kernel.lower())
    assert "atomicMin(&v_i64s[" in cuda  # CUDA's long long overload
    assert "atomicAdd(&v_f64s[" in cuda and "atomicAdd(&v_f32s[" in cuda
    for helper in ("min_f32", "max_f32", "sub_f32", "min_f64", "max_f64", "exch_f64",
                   "cas_f32", "cas_f64"):
        assert cuda.count(f"gp_atomic_{helper}(") == cuda.count(f"gp_atomic_{helper}(&") + 1
    hip = HIPRenderer().render(EXAMPLES["atomics"].kernel.lower())
    assert "gp_atomic_min_i64(" in hip and "gp_atomic_max_i64(" in hip  # no ROCm overload
    opencl = _opencl_renderer()().render(EXAMPLES["atomics"].kernel.lower())
    assert "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable" in opencl
    assert "gp_atomic_min_f32_global(__global float* p, float v)" in opencl
    assert "if (!(v < cur)) break;" in opencl  # a NaN never replaces


# ---- compiles -------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_cuda_compiles_with_nvrtc(name: str) -> None:
    _nvrtc_or_skip()
    from gompute_cuda.compiler import CudaCompiler

    kernel = EXAMPLES[name].kernel
    art = compile_kernel(CudaCompiler(), kernel.lower(), "sm_90")
    assert art.format in ("cubin", "ptx") and art.image and art.entry == kernel.name


@pytest.mark.parametrize("arch", ("gfx90a", "gfx1030"))
@pytest.mark.parametrize("name", NAMES)
def test_hip_compiles_with_hiprtc_to_the_raw_abi(name: str, arch: str) -> None:
    _hiprtc_or_skip()
    from amdgpu_codeobject import read_code_object
    from gompute_hip.compiler import HipCompiler

    kernel = EXAMPLES[name].kernel
    kir = kernel.lower()
    art = compile_kernel(HipCompiler(), kir, arch)
    assert (art.format, art.entry, art.target) == ("hsaco", kernel.name, arch)
    meta = read_code_object(art.image).kernel(kernel.name)
    if kir.block is not None:
        assert meta.max_flat_workgroup_size == kir.block[0] * kir.block[1] * kir.block[2]
    layout = signature_layout(kernel.signature)
    explicit = meta.explicit_args
    assert [(a.offset, a.size) for a in explicit] == [(s.offset, s.size) for s in layout.slots]
    for arg, slot in zip(explicit, layout.slots, strict=True):
        assert arg.value_kind == ("global_buffer" if slot.kind == "pointer" else "by_value")


@pytest.mark.parametrize("name", NAMES)
def test_hip_source_compiles_with_nvrtc(name: str) -> None:
    _nvrtc_or_skip()
    from hip_on_cuda.on_nvrtc import compile_for_cuda

    art = compile_for_cuda(EXAMPLES[name].kernel.lower(), "sm_90")
    assert art.format in ("cubin", "ptx") and art.image


# ---- from_source: the text compiled as is ---------------------------------------------
def _source_kernel(name: str) -> KernelIR:
    return KernelIR(name=name, kind=RAW, block_size=0, value_types=(), params=None)


CUDA_SOURCE = """extern "C" __global__ void my_scale(float* x, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}
"""


def test_from_source_keeps_its_entry_name_and_text() -> None:
    kir = _source_kernel("exp")  # a reserved word: a rendered entry would be renamed
    assert CUDARenderer().entry_symbol(kir) == "exp"
    _nvrtc_or_skip()
    from gompute_cuda.compiler import CudaCompiler

    art = compile_kernel(CudaCompiler(), _source_kernel("my_scale"), "sm_90",
                         source=CUDA_SOURCE)
    assert art.source == CUDA_SOURCE and art.entry == "my_scale" and art.kind == RAW


def test_hip_from_source_compiles_for_gfx90a() -> None:
    _hiprtc_or_skip()
    from amdgpu_codeobject import read_code_object
    from gompute_hip.compiler import HipCompiler

    art = compile_kernel(HipCompiler(), _source_kernel("my_scale"), "gfx90a",
                         source=CUDA_SOURCE)  # HIP spells this kernel alike
    assert art.entry == "my_scale" and "my_scale" in read_code_object(art.image).functions

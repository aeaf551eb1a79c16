"""The OpenCL C dialect of the core's C-family renderer: class attributes only.

OpenCL C is C99 with address spaces: kernels are ``__kernel void``, pointer
parameters ``__global``, the block's scratch array ``__local``, the thread
and block indices the work-item functions, and the math functions are
overloaded (``sin`` takes a float as well as a double, there is no
``sinf``). ``long`` is 64 bits (``long long`` is reserved), and f16 is kept
as raw 16-bit storage converted by integer arithmetic (:data:`HALF`), so
every OpenCL 1.2 device runs f16 kernels (no ``cl_khr_fp16`` needed). ``FP_CONTRACT`` is
off: OpenCL compilers fuse ``a * b + c`` by default, the kernel language rounds
each operation (a kernel compiled with ``contract=True`` turns it back on).

Raw kernels: geometry from the work-item functions (``get_local_id(d)``,
``get_group_id(d)``...; ``global_id`` is computed from them, so a global
offset never shifts it), ``__local`` shared arrays at kernel scope, a barrier
fencing local and global memory, a declared block as
``reqd_work_group_size``, and atomics: OpenCL 1.1's 32-bit ``atomic_*`` on
``int``/``uint`` (and ``atomic_xchg`` on ``float``), 64-bit ``atom_*`` of
``cl_khr_int64_base_atomics`` (enabled by pragma when used), everything else
through ``atomic_cmpxchg``/``atom_cmpxchg`` loops on the bit pattern.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from gompute_core.codegen import C_FAMILY_RESERVED, CRenderer

INT_TYPEDEFS = (
    "typedef char gp_i8;\n"
    "typedef uchar gp_u8;\n"
    "typedef short gp_i16;\n"
    "typedef ushort gp_u16;\n"
    "typedef int gp_i32;\n"
    "typedef uint gp_u32;\n"
    "typedef long gp_i64;\n"
    "typedef ulong gp_u64;\n"
    "typedef ushort gp_f16;\n"
)

HALF = r"""inline float gp_h2f(gp_f16 h) {
  uint sign = ((uint)h & 0x8000u) << 16, e = ((uint)h >> 10) & 0x1fu, m = (uint)h & 0x3ffu;
  if (e == 0x1fu) return as_float(sign | 0x7f800000u | (m << 13));
  if (e == 0u) { float f = (float)m * 5.9604644775390625e-8f; return sign ? -f : f; }
  return as_float(sign | ((e + 112u) << 23) | (m << 13));
}
inline gp_f16 gp_f2h(float f) {
  uint x = as_uint(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u)
    return (gp_f16)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
  if (ax >= 0x477ff000u) return (gp_f16)(sign | 0x7c00u);
  if (ax < 0x38800000u) return (gp_f16)(sign | (uint)rint(as_float(ax) * 16777216.0f));
  return (gp_f16)(sign | ((ax + 0xfffu + ((ax >> 13) & 1u) - 0x38000000u) >> 13));
}
inline gp_f16 gp_d2h(double d) {
  ulong x = as_ulong(d), ax = x & 0x7fffffffffffffffUL;
  uint sign = (uint)(x >> 48) & 0x8000u;
  if (ax >= 0x7ff0000000000000UL)
    return (gp_f16)(sign | 0x7c00u | (ax > 0x7ff0000000000000UL
                                      ? 0x200u | (uint)((ax >> 42) & 0x3ffUL) : 0u));
  if (ax >= 0x40effe0000000000UL) return (gp_f16)(sign | 0x7c00u);
  if (ax < 0x3f10000000000000UL) return (gp_f16)(sign | (uint)rint(as_double(ax) * 16777216.0));
  return (gp_f16)(sign | (uint)((ax + 0x1ffffffffffUL + ((ax >> 42) & 1UL)
                                 - 0x3f00000000000000UL) >> 42));
}
inline float gp_rh(float f) { return gp_h2f(gp_f2h(f)); }
"""
"""f16 kept as its 16 bits and converted with integer arithmetic (round to nearest even;
doubles rounded once, not through float), so no ``cl_khr_fp16`` and no private-memory
``vload_half`` is needed."""

_VECTOR_NAMES = frozenset(
    f"{base}{n}" for base in ("char", "uchar", "short", "ushort", "int", "uint", "long",
                              "ulong", "float", "double", "half")
    for n in ("", "2", "3", "4", "8", "16"))

OPENCL_RESERVED = C_FAMILY_RESERVED | _VECTOR_NAMES | frozenset(
    # qualifiers and types of OpenCL C
    "kernel __kernel global __global local __local constant __constant private __private "
    "generic __generic read_only __read_only write_only __write_only read_write "
    "__read_write uniform pipe bool uchar ushort uint ulong size_t ptrdiff_t intptr_t "
    "uintptr_t image1d_t image2d_t image3d_t sampler_t event_t "
    # work-item, synchronization and conversion built-ins the generated code uses
    "get_global_id get_local_id get_group_id get_local_size get_num_groups "
    "get_global_size get_work_dim barrier mem_fence vload_half vstore_half "
    "vstore_half_rte as_float as_double as_int as_long as_uint as_ulong "
    # math built-ins (overloaded for every float type, so any of them may be shadowed)
    "acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh erf erfc exp exp2 "
    "exp10 expm1 fabs fdim floor fma fmax fmin fmod frexp hypot ilogb ldexp lgamma log "
    "log10 log1p log2 logb nan nextafter pow pown powr remainder rint rootn round rsqrt "
    "sin sincos sinh sqrt tan tanh tgamma trunc isnan isinf isfinite signbit abs min max "
    "clamp select mix sign "
    # other built-ins a kernel name or field could shadow, and the program entry name
    "main printf atomic_add atomic_sub atomic_xchg atomic_inc atomic_dec atomic_cmpxchg "
    "atomic_min atomic_max atomic_and atomic_or atomic_xor async_work_group_copy "
    "wait_group_events prefetch vload vstore shuffle any all bitselect mad mul24 "
    "mad24 popcount clz rotate upsample hadd rhadd".split())
"""Identifiers an OpenCL C kernel may not redefine (keywords, types, built-ins)."""


_OPS32 = {"add": "atomic_add", "sub": "atomic_sub", "min": "atomic_min", "max": "atomic_max",
          "exch": "atomic_xchg"}
_OPS64 = {"add": "atom_add", "sub": "atom_sub", "exch": "atom_xchg"}
OPENCL_ATOMICS: dict[tuple[str, str], str] = {
    **{(op, t): f"{fn}({{p}}, {{v}})" for op, fn in _OPS32.items() for t in ("i32", "u32")},
    ("exch", "f32"): "atomic_xchg({p}, {v})",
    **{(op, t): f"{fn}({{p}}, {{v}})" for op, fn in _OPS64.items() for t in ("i64", "u64")},
    **{("cas", t): "atomic_cmpxchg({p}, {c}, {v})" for t in ("i32", "u32")},
    **{("cas", t): "atom_cmpxchg({p}, {c}, {v})" for t in ("i64", "u64")},
}
"""Native atomics: 32-bit from OpenCL 1.1, 64-bit from ``cl_khr_int64_base_atomics`` (64-bit
min/max, of the extended extension, go through compare-and-swap: only the base is needed)."""


class OpenCLRenderer(CRenderer):
    """KernelIR to OpenCL C 1.2 (with ``cl_khr_fp64`` where the kernel uses f64)."""

    name: ClassVar[str] = "opencl"
    language: ClassVar[Literal["c++", "c"]] = "c"
    prelude: ClassVar[str] = (
        "// OpenCL C generated by gompute-opencl\n"
        "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
        "#pragma OPENCL FP_CONTRACT OFF\n")  # one rounding per operation: no fused a*b+c
    contract_prelude: ClassVar[str] = "#pragma OPENCL FP_CONTRACT ON\n"
    int_typedefs: ClassVar[str] = INT_TYPEDEFS
    reserved_words: ClassVar[frozenset[str]] = OPENCL_RESERVED
    half_prelude: ClassVar[str] = HALF
    kernel_qualifier: ClassVar[str] = "__kernel void"
    function_qualifier: ClassVar[str] = "inline"
    shared_qualifier: ClassVar[str] = "__local"
    restrict: ClassVar[str] = "restrict "
    pointer_space: ClassVar[str] = "__global "
    unroll_pragma: ClassVar[str] = "#pragma unroll"
    offsetof: ClassVar[str] = "__builtin_offsetof({t}, {m})"
    vector_types: ClassVar[dict[int, str]] = {
        16: "uint4", 8: "uint2", 4: "uint", 2: "ushort", 1: "uchar"}
    float_from_bits: ClassVar[dict[str, str]] = {"f32": "as_float", "f64": "as_double"}
    math_f32: ClassVar[dict[str, str]] = dict(CRenderer.math_f64)
    geometry: ClassVar[dict[str, str]] = {
        "local_id": "get_local_id({d})", "block_id": "get_group_id({d})",
        "block_dim": "get_local_size({d})", "grid_dim": "get_num_groups({d})",
    }
    block_barrier: ClassVar[str] = "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)"
    device_fence: ClassVar[str] = "mem_fence(CLK_GLOBAL_MEM_FENCE)"
    launch_bounds: ClassVar[str] = "__attribute__((reqd_work_group_size({x}, {y}, {z}))) "
    shared_pointer_space: ClassVar[str] = "__local "
    atomics: ClassVar[dict[tuple[str, str], str]] = OPENCL_ATOMICS
    atomic_cas: ClassVar[dict[int, str]] = {32: "atomic_cmpxchg({p}, {c}, {v})",
                                            64: "atom_cmpxchg({p}, {c}, {v})"}
    atomic_float_bits: ClassVar[dict[str, tuple[str, str]]] = {
        "f32": ("as_uint({})", "as_float({})"), "f64": ("as_ulong({})", "as_double({})")}
    int64_atomics_prelude: ClassVar[str] = \
        "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n"

"""Identifiers: IR names that are valid, non-reserved identifiers in C, C++ and Python.

Kernel locals and arguments keep their Python names unless a name collides
with a reserved word of a language a renderer emits (C, C++, CUDA/HIP), with a
name the renderers use for their own helpers (``np``, ``math``, ``numba``,
``int``, ...), contains ``__`` (reserved in C++) or starts with ``_``
(reserved at file scope in C), or is not ASCII. Such a name gets the suffix
``_v`` (then ``_v2``, ``_v3``, ... until unique), deterministically.
"""

from __future__ import annotations

import keyword

_C_KEYWORDS = """
auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef
union unsigned void volatile while _Bool _Complex _Imaginary _Alignas _Alignof _Atomic
_Generic _Noreturn _Static_assert _Thread_local bool true false
"""
_CPP_KEYWORDS = """
alignas alignof and and_eq asm bitand bitor catch char8_t char16_t char32_t class compl
concept consteval constexpr constinit const_cast co_await co_return co_yield decltype delete
dynamic_cast explicit export friend mutable namespace new noexcept not not_eq nullptr
operator or or_eq private protected public reinterpret_cast requires static_assert
static_cast template this thread_local throw try typeid typename using virtual wchar_t xor
xor_eq
"""
_GPU_NAMES = """
threadIdx blockIdx blockDim gridDim warpSize __global__ __device__ __shared__ half
__half __nv_bool size_t ptrdiff_t int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t
uint64_t NULL INFINITY NAN signbit isnan isinf isfinite fabs fabsf sqrt sqrtf exp expf
log logf pow powf floor floorf ceil ceilf fmin fmax min max abs assert
"""
_RENDERER_NAMES = """
np numpy numba nb math cmath prange range len float int bool abs min max print object
type self cls None True False
"""

RESERVED: frozenset[str] = frozenset(
    (_C_KEYWORDS + _CPP_KEYWORDS + _GPU_NAMES + _RENDERER_NAMES).split()
) | frozenset(keyword.kwlist)
"""Names never used as IR identifiers."""


def is_safe(name: str) -> bool:
    """True if ``name`` can be used as is in every renderer."""
    return (name.isascii() and name.isidentifier() and name not in RESERVED
            and "__" not in name and not name.startswith("_"))


def safe_name(name: str, taken: set[str]) -> str:
    """A safe identifier for ``name``, not in ``taken``; adds it to ``taken``."""
    base = name if name.isascii() else "v" + "".join(f"{ord(c):x}" for c in name)
    base = base.lstrip("_") or "v"
    while "__" in base:
        base = base.replace("__", "_")
    if base[0].isdigit():
        base = "v" + base
    candidate = base
    k = 1
    while not is_safe(candidate) or candidate in taken:
        candidate = f"{base}_v" if k == 1 else f"{base}_v{k}"
        k += 1
    taken.add(candidate)
    return candidate

"""``CRenderer``: the shared C-family renderer (CUDA, HIP and third-party dialects).

A dialect is a subclass that sets class attributes and overrides small methods
(tinygrad style): the language mode (C++ or C99), the prelude and integer typedefs,
qualifiers and address spaces, one vocabulary of launch geometry (:attr:`CRenderer.geometry`),
block barrier, device fence and launch bound for spec entries and raw kernels alike, vector
types and the vector-load style, math function names per float type (defaults from
:mod:`gompute_core.ir.intrinsics`), f16 conversion functions, the restrict keyword,
reserved words, and the expression writer class. :meth:`CRenderer.render` turns one
:class:`~gompute_core.ir.kernel.KernelIR` into a complete translation unit:
prelude, helpers, params struct with compile-time layout assertions, the kernel's
IR functions as forced-inline device functions, and the entry point. Raw kernels
(``kind == "raw"``) add the shared address space of pointers and the atomics
(:mod:`gompute_core.codegen.atomics`).

Names of plugin API 2's separate spec-entry vocabulary (``barrier``, ``thread_idx``,
``block_idx``, ``block_dim``, ``grid_dim``, ``raw_launch_bounds``, a positional
``launch_bounds``) are refused when a dialect sets them (:data:`RENAMED`), naming what
replaces each.
"""

from __future__ import annotations

import hashlib
from typing import ClassVar, Literal

import numpy as np

from ..errors import Unsupported
from ..ir.intrinsics import INTRINSICS, f16_via_f64, f32_via_f64
from ..ir.kernel import RAW, KernelIR
from ..ir.nodes import AtomicOp, GeometryFunc, IRType, TupleType
from ..types import bits, short_name
from .atomics import CUDA_ATOMICS, CUDA_CAS, CUDA_FLOAT_BITS, cas_loop_helper
from .cexpr import FunctionWriter
from .ctypes_ import C_FAMILY_RESERVED, INT_TYPEDEFS, reg_type
from .entries import EntryWriter, params_decls
from .helpers import (
    CONSTANT_POWERS,
    constant_power,
    float_abs_helper,
    float_helper,
    helper_name,
    int_helper,
)
from .raw import raw_entry

_C_MATH: dict[str, str] = {
    m.name: m.c for m in INTRINSICS if m.c is not None and m.kind != "predicate"
}
"""Intrinsic (and operator function) name -> C99 ``double`` function, from the one table."""

F32_VIA_F64: frozenset[str] = f32_via_f64()
"""f32 functions evaluated in double and rounded once: correctly rounded in practice, as
the CPU's libm, where the f32 device functions may be an ulp or two away."""

F16_VIA_F64: frozenset[str] = f16_via_f64()
"""f16 functions evaluated in double and rounded once to f16 (``fma``: in float, the sum
would be rounded twice)."""


RENAMED: dict[str, str] = {
    "barrier": "block_barrier",
    "thread_idx": "geometry['local_id'] (a format string over {d} and {axis})",
    "block_idx": "geometry['block_id']",
    "block_dim": "geometry['block_dim']",
    "grid_dim": "geometry['grid_dim']",
    "raw_launch_bounds": "launch_bounds (over {threads}, {x}, {y}, {z})",
}
"""Class attributes of the plugin API 2 renderer vocabulary -> what replaces each."""


class CRenderer:
    """Base of C-family renderers; subclasses set the dialect's class attributes.

    Instances are cheap and single-use per :meth:`render` call (they collect
    the helpers a kernel needs); call ``SubClass().render(kir)``.
    """

    name: ClassVar[str] = "c"
    #: ``"c++"`` (CUDA, HIP: struct and union types named bare, ``static_assert``,
    #: ``alignof``) or ``"c"`` (C99: typedef'd structs and unions, assertions as array
    #: sizes, alignment through ``offsetof``, ``{0}`` initializers); see :meth:`aggregate`,
    #: :meth:`static_assert`, :meth:`alignof` and :meth:`zero_initializer`.
    language: ClassVar[Literal["c++", "c"]] = "c++"
    #: text before everything (includes, typedefs beyond :attr:`int_typedefs`).
    prelude: ClassVar[str] = ""
    #: text after the prelude when the kernel opts in to contraction (``KernelIR.contract``)
    #: and the dialect turns it on in the source (OpenCL's ``FP_CONTRACT`` pragma); CUDA and
    #: HIP turn it on with their compilers' options instead.
    contract_prelude: ClassVar[str] = ""
    #: the fixed-width integer typedefs (``gp_i8`` ... ``gp_u64``, ``gp_f16``) after the prelude.
    int_typedefs: ClassVar[str] = INT_TYPEDEFS
    #: identifiers the target reserves: a params member or kernel name among them gets ``_``
    #: appended (see :meth:`member` and :meth:`entry_symbol`).
    reserved_words: ClassVar[frozenset[str]] = C_FAMILY_RESERVED
    #: definitions of the f16 conversion functions named below (emitted only when needed).
    half_prelude: ClassVar[str] = ""
    half_to_float: ClassVar[str] = "gp_h2f"
    float_to_half: ClassVar[str] = "gp_f2h"
    double_to_half: ClassVar[str] = "gp_d2h"
    round_half: ClassVar[str] = "gp_rh"
    kernel_qualifier: ClassVar[str] = 'extern "C" __global__ void'
    function_qualifier: ClassVar[str] = "static __device__ __forceinline__"
    shared_qualifier: ClassVar[str] = "__shared__"
    restrict: ClassVar[str] = "__restrict__ "
    #: address-space qualifier of the kernel's pointer parameters and of casts of them
    #: (OpenCL's ``"__global "``); the shared array's is :attr:`shared_qualifier`.
    pointer_space: ClassVar[str] = ""
    #: elementwise and reduce-preset loops: ``"union"`` loads 16-byte vectors through a
    #: union with :attr:`vector_types` (what NVRTC and hiprtc turn into one 16-byte load);
    #: ``"memcpy"`` copies each 16-byte vector into a local array of elements with
    #: ``memcpy`` (for a host C or C++ compiler: no pointer cast, and GCC 12.2 at ``-O3
    #: -mavx2`` miscompiles the union's integer lane sums, which this form avoids; the
    #: prelude must declare ``memcpy``); ``"scalar"`` loads one element at a time. The
    #: three fold a reduce preset in the same order.
    vector_loads: ClassVar[Literal["union", "memcpy", "scalar"]] = "union"
    unroll_pragma: ClassVar[str] = "#pragma unroll"
    #: a constant expression for a member's offset, from ``{t}`` (struct) and ``{m}`` (member).
    offsetof: ClassVar[str] = "__builtin_offsetof({t}, {m})"
    #: integer vector types by byte width, for vectorized loads and stores.
    vector_types: ClassVar[dict[int, str]] = {
        16: "uint4", 8: "uint2", 4: "unsigned int", 2: "unsigned short", 1: "unsigned char",
    }
    #: functions building a float from its bits (for inf/nan literals).
    float_from_bits: ClassVar[dict[str, str]] = {
        "f32": "__int_as_float", "f64": "__longlong_as_double",
    }
    #: C spellings of the predicate intrinsics (``isnan``...), by intrinsic name.
    predicate_names: ClassVar[dict[str, str]] = {
        m.name: m.c for m in INTRINSICS if m.kind == "predicate" and m.c is not None
    }
    #: math function names for f64 and f32 by intrinsic name (``abs`` of a float is ``fabs``;
    #: the operator function ``pow`` too), from :mod:`gompute_core.ir.intrinsics`.
    math_f64: ClassVar[dict[str, str]] = dict(_C_MATH)
    math_f32: ClassVar[dict[str, str]] = {m: c + "f" for m, c in _C_MATH.items()}
    #: f32 functions computed through f64 (empty the set for dialects with slow f64).
    f32_via_f64: ClassVar[frozenset[str]] = F32_VIA_F64
    #: the expression and statement writer (a :class:`FunctionWriter` subclass overrides
    #: single node renderings).
    writer_class: ClassVar[type[FunctionWriter]] = FunctionWriter

    # ---- launch geometry and synchronization: spec entries and raw kernels ------------
    #: launch geometry by builtin, format strings over ``{d}`` (0, 1, 2) and ``{axis}``
    #: (x, y, z); ``global_id`` is always ``block_id * block_dim + local_id`` in 64 bits
    #: (not OpenCL's ``get_global_id``, which adds the launch's global offset). Spec
    #: entries read dimension 0.
    geometry: ClassVar[dict[str, str]] = {
        "local_id": "threadIdx.{axis}", "block_id": "blockIdx.{axis}",
        "block_dim": "blockDim.{axis}", "grid_dim": "gridDim.{axis}",
    }
    #: the block barrier (a reduce entry's tree, raw ``barrier()``): every thread of the
    #: block waits; global and shared memory written before it is visible after it.
    block_barrier: ClassVar[str] = "__syncthreads()"
    #: ``threadfence()`` of raw kernels: this thread's global-memory accesses ordered for
    #: every thread of the launch.
    device_fence: ClassVar[str] = "__threadfence()"
    #: the launch bound of a block shape known when compiling (a spec's ``block_size``, a
    #: raw kernel's declared block), over ``{threads}`` and ``{x}``, ``{y}``, ``{z}``.
    launch_bounds: ClassVar[str] = "__launch_bounds__({threads}) "
    #: address-space qualifier of pointers to shared memory (OpenCL's ``"__local "``;
    #: CUDA and HIP pointers are generic).
    shared_pointer_space: ClassVar[str] = ""
    #: native atomics by (op, element short name): see :mod:`gompute_core.codegen.atomics`.
    atomics: ClassVar[dict[tuple[str, str], str]] = CUDA_ATOMICS
    #: compare-and-swap by bit width, the base of every atomic not in :attr:`atomics`.
    atomic_cas: ClassVar[dict[int, str]] = CUDA_CAS
    #: per float type, (its bit pattern, the float of a bit pattern), format strings.
    atomic_float_bits: ClassVar[dict[str, tuple[str, str]]] = CUDA_FLOAT_BITS
    #: text emitted before the helpers when a kernel uses a 64-bit atomic (OpenCL's
    #: extension pragmas).
    int64_atomics_prelude: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        for old, new in RENAMED.items():
            if old in cls.__dict__:
                raise TypeError(f"renderer {cls.__name__} sets '{old}', which the renderer no "
                                f"longer reads: set {new} instead (plugins.md section 11, "
                                "\"Porting a plugin from an earlier plugin API\")")
        if "{}" in cls.launch_bounds:
            raise TypeError(f"renderer {cls.__name__}: launch_bounds is formatted with "
                            "{threads} (and {x}, {y}, {z}), not {} (plugins.md section 11)")

    def __init__(self) -> None:
        self._helpers: dict[str, str] = {}
        #: set by the writers when the kernel touches f16 (the half prelude is then emitted).
        self.uses_half = False
        #: set by the writers when the kernel uses a 64-bit atomic.
        self.uses_int64_atomics = False
        self.writer = self.writer_class(self)

    # ---- language and naming: small methods a dialect may override -----------------
    def aggregate(self, tag: Literal["struct", "union"], name: str, members: str) -> str:
        """A declaration of struct or union ``name`` (``members`` is the text between the
        braces) after which ``name`` alone names the type."""
        if self.language == "c":
            if tag == "struct" and not members.strip():
                members = "\n  char gp_unused;\n"  # C has no empty structs
            return f"typedef {tag} {name} {{{members}}} {name};"
        return f"{tag} {name} {{{members}}};"

    def static_assert(self, cond: str, message: str, label: str) -> str:
        """A file-scope compile-time assertion line; ``label`` is unique per translation unit
        (C99 spells the assertion as an array type whose size is negative when it fails)."""
        if self.language == "c":
            return f"typedef char gp_assert_{label}[({cond}) ? 1 : -1];\n"
        return f"static_assert({cond}, \"{message}\");\n"

    def alignof(self, type_name: str) -> str:
        """A constant expression for the alignment of ``type_name``."""
        if self.language == "c":
            return self.offsetof.format(t=f"struct {{ char gp_c; {type_name} gp_m; }}", m="gp_m")
        return f"alignof({type_name})"

    def zero_initializer(self) -> str:
        """An initializer zeroing an aggregate (``{}`` in C++, ``{0}`` in C)."""
        return "{0}" if self.language == "c" else "{}"

    def member(self, name: str) -> str:
        """A params struct member's C name: the field name, ``_`` appended if reserved."""
        return name + "_" if name in self.reserved_words else name

    def entry_symbol(self, kir: KernelIR) -> str:
        """The entry point's symbol: the kernel's name, ``_`` appended if the target reserves
        it (compilers record it as the artifact's ``entry``); a raw kernel given as source
        (no functions: ``g.RawKernel.from_source``) keeps the name its source defines."""
        if kir.kind == RAW and not kir.functions:
            return kir.name
        return kir.name + "_" if kir.name in self.reserved_words else kir.name

    # ---- services used by the writers ----------------------------------------------
    def math_name(self, func: str, t: IRType) -> str:
        """The C function computing ``func`` on float type ``t``."""
        table = self.math_f64 if t is np.float64 else self.math_f32
        if func not in table:
            raise Unsupported(f"math function {func!r} has no {self.name} spelling")
        return table[func]

    def math_call(self, func: str, t: IRType, args: list[str]) -> str:
        """A call of math ``func`` on float type ``t`` (f16 computed in f32 and rounded, or
        in f64 for :data:`F16_VIA_F64`)."""
        if t is np.float64:
            return f"{self.math_name(func, t)}({', '.join(args)})"
        if t is np.float16 and func in F16_VIA_F64:
            self.uses_half = True
            call = f"{self.math_name(func, np.float64)}" \
                   f"({', '.join(f'(double)({a})' for a in args)})"
            return f"{self.half_to_float}({self.double_to_half}({call}))"
        if func in self.f32_via_f64:
            call = f"(float){self.math_name(func, np.float64)}" \
                   f"({', '.join(f'(double)({a})' for a in args)})"
        else:
            call = f"{self.math_name(func, np.float32)}({', '.join(args)})"
        if t is np.float16:
            self.uses_half = True
            return f"{self.round_half}({call})"
        return call

    def need_int_helper(self, op: str, t: IRType) -> str:
        """Name of integer helper ``op`` for ``t``, emitting it once."""
        name = helper_name(op, t)
        if name not in self._helpers:
            self._helpers[name] = int_helper(op, t, self.function_qualifier)
        return name

    def need_float_helper(self, op: str, t: IRType) -> str:
        """Name of float helper ``op`` for ``t``, emitting it once."""
        name = helper_name(op, t)
        if name not in self._helpers:
            key = np.float64 if t is np.float64 else np.float32
            names = {m: self.math_name(m, key) for m in ("fmod", "floor", "copysign")}
            self._helpers[name] = float_helper(op, t, self.function_qualifier, names,
                                               self.round_half)
            self.uses_half |= t is np.float16
        return name

    def need_select_helper(self, result: str, signature: str, select: str) -> str:
        """Name of a helper returning ``select`` (a C conditional expression over the
        parameters ``signature``) as ``result``, emitting it once per distinct text
        (:mod:`~gompute_core.codegen.select_once`)."""
        body = f"({signature}) {{ return {select}; }}"
        name = "gp_select_" + hashlib.sha256(f"{result} {body}".encode()).hexdigest()[:12]
        if name not in self._helpers:
            self._helpers[name] = f"{self.function_qualifier} {result} {name}{body}\n"
        return name

    def need_tuple(self, t: TupleType) -> tuple[str, str]:
        """The struct type of tuple type ``t`` and the function making one from its items
        (``gp_tuple_f32_i64``, ``gp_make_tuple_f32_i64``), emitting both once."""
        suffix = "_".join(short_name(e) for e in t.elems)
        name, make = f"gp_tuple_{suffix}", f"gp_make_tuple_{suffix}"
        if name not in self._helpers:
            members = "".join(f"\n  {reg_type(e)} v{k};" for k, e in enumerate(t.elems)) + "\n"
            params = ", ".join(f"{reg_type(e)} a{k}" for k, e in enumerate(t.elems))
            body = "".join(f" r.v{k} = a{k};" for k in range(len(t.elems)))
            self._helpers[name] = (f"{self.aggregate('struct', name, members)}\n"
                                   f"{self.function_qualifier} {name} {make}({params}) {{ "
                                   f"{name} r;{body} return r; }}\n")
        return name, make

    def need_float_abs(self) -> str:
        """Name of the f32 absolute value helper (:func:`float_abs_helper`), emitting it
        once."""
        name = helper_name("fabs", np.float32)
        if name not in self._helpers:
            self._helpers[name] = float_abs_helper(self.function_qualifier)
        return name

    def need_constant_power(self, y: float, t: IRType) -> str:
        """Name of the helper computing float ``x ** y`` for a constant ``y`` in
        :data:`~gompute_core.codegen.helpers.CONSTANT_POWERS`, emitting it once."""
        name = helper_name(CONSTANT_POWERS[y], t)
        if name not in self._helpers:
            sqrt = self.math_name("sqrt", np.float64 if t is np.float64 else np.float32)
            self._helpers[name] = constant_power(y, t, self.function_qualifier, sqrt,
                                                 self.round_half)
            self.uses_half |= t is np.float16
        return name

    def geometry_expr(self, func: GeometryFunc, dim: int) -> str:
        """Launch-geometry builtin ``func`` along ``dim`` as a 64-bit signed expression."""
        if func == "global_id":
            return (f"({self.geometry_expr('block_id', dim)} * "
                    f"{self.geometry_expr('block_dim', dim)} + "
                    f"{self.geometry_expr('local_id', dim)})")
        return f"((gp_i64){self.geometry[func].format(d=dim, axis='xyz'[dim])})"

    def atomic(self, op: AtomicOp, t: IRType, address: str, space: str, value: str,
               compare: str | None) -> str:
        """Atomic ``op`` on the element of type ``t`` at ``address`` (in address space
        ``space``), its old value: the native spelling when :attr:`atomics` has one, else a
        compare-and-swap helper emitted once."""
        if bits(t) == 64:
            self.uses_int64_atomics = True
        native = self.atomics.get((op, short_name(t)))
        if native is not None:
            call = native.format(p=address, v=value, c=compare, space=space)
            return f"(({reg_type(t)}){call})"
        if bits(t) not in self.atomic_cas:
            raise Unsupported(f"{self.name}: no {bits(t)}-bit compare-and-swap for atomic_{op} "
                              f"on {short_name(t)}")
        name, source = cas_loop_helper(op, t, space, self.function_qualifier, self.atomic_cas,
                                       self.atomic_float_bits)
        self._helpers.setdefault(name, source)
        args = [address, value] if compare is None else [address, compare, value]
        return f"{name}({', '.join(args)})"

    # ---- rendering -------------------------------------------------------------------
    def render(self, kir: KernelIR) -> str:
        """The complete source of ``kir``: prelude, helpers, params, functions, entry."""
        if kir.kind == RAW:
            functions = "".join(self.writer.function(f) + "\n" for f in kir.functions[:-1])
            entry = raw_entry(self, kir)
        else:
            functions = "".join(self.writer.function(f) + "\n" for f in kir.functions)
            entry = EntryWriter(self, kir).render()
        symbol = self.entry_symbol(kir)
        named = f", entry {symbol}" if symbol != kir.name else ""
        return "\n".join(p for p in (
            f"// kernel {kir.name} ({kir.kind}){named}, IR digest {kir.digest()[:16]}\n",
            self.prelude, self.contract_prelude if kir.contract else "", self.int_typedefs,
            self._support(kir), functions, entry) if p)

    def render_functions(self, kir: KernelIR) -> str:
        """Only the device code of ``kir``'s IR functions, with the helpers and params
        declarations they need (no prelude, no entry point): for dialect tests and tools
        that call the element functions themselves."""
        functions = "".join(self.writer.function(f) + "\n" for f in kir.functions)
        return "\n".join(p for p in (self._support(kir), functions) if p)

    def _support(self, kir: KernelIR) -> str:
        """f16 conversions (when used), helpers and params declarations, in that order."""
        if self.uses_half and not self.half_prelude:
            raise Unsupported(f"the {self.name} renderer has no f16 support")
        parts = [self.half_prelude if self.uses_half else "",
                 self.int64_atomics_prelude if self.uses_int64_atomics else "",
                 "".join(self._helpers.values())]
        if kir.params is not None:
            parts.append(params_decls(kir.params, self))
        return "\n".join(p for p in parts if p)

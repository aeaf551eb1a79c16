"""The conformance catalogue: every spec the suite runs, built once per process.

``iter_specs()`` returns them all (every kind, every scalar type, every params
shape, fusion, the kernel-language semantics kernels); GPU backends compile
them ahead of time in CI (``g.compile(spec, "cuda", arch="sm_90")``) to prove
that every conformance kernel renders and compiles for each target.

Spec names are ``gct_<key>``: deterministic (so on-disk compile caches hit
across runs) and unique in the process because each entry builds its spec
once and memoizes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..types import FLOAT_TYPES, INT_TYPES, SCALAR_TYPES, short_name

NUMERIC_TYPES: tuple[type, ...] = INT_TYPES + FLOAT_TYPES
"""Every scalar type but bool."""

PRESET_KINDS: tuple[str, ...] = ("sum", "min", "max", "any", "all")
"""Reduce presets; their spec kind is ``reduce``."""

_BUILT: dict[str, Any] = {}


@dataclass(frozen=True)
class Entry:
    """One conformance spec: how to build it and what the suite needs for its oracle.

    ``kind`` is the spec kind, or a preset name (``sum``, ``min``, ...) for
    reduce presets. ``types`` maps roles (``T``, ``In``, ``Out``, ``A``, ``B``,
    ``Idx``) to scalar types; ``extra_types`` lists further types the body
    uses (params field types are read from the params layout), so a backend
    that cannot run one of them never sees the spec.
    ``fn`` is the element function (the combine for ``reduce``); ``ctor``
    names another constructor for the kind (``"map_fn"``). ``group``
    says which part of the suite runs it (``kinds``: every kind over every
    type at every edge size; ``language``: kernel-language semantics,
    params shapes and fusion).
    """

    key: str
    kind: str
    types: tuple[tuple[str, type], ...]
    params: Any = None
    fn: Callable[..., Any] | None = None
    identity: Any = None
    pre: Callable[..., Any] | None = None
    block_size: int = 256
    extra_types: tuple[type, ...] = field(default=())
    group: str = "kinds"
    ctor: str = ""

    @property
    def name(self) -> str:
        """The spec's name: ``gct_<key>``."""
        return f"gct_{self.key}"

    @property
    def spec_kind(self) -> str:
        """The kind of the built spec (presets are ``reduce``)."""
        return "reduce" if self.kind in PRESET_KINDS else self.kind

    def t(self, role: str = "T") -> type:
        """The scalar type playing ``role``."""
        return dict(self.types)[role]

    def type_names(self) -> tuple[str, ...]:
        """Short names of every scalar type the spec touches: values, params fields, body."""
        ts = {t for _, t in self.types} | set(self.extra_types)
        if self.params is not None:
            from ..abi import struct_type_of

            ts |= _field_types(struct_type_of(self.params))
        return tuple(sorted(short_name(t) for t in ts))

    def spec(self) -> Any:
        """Build the spec (once per process) through the public constructors."""
        spec = _BUILT.get(self.key)
        if spec is None:
            spec = _build(self)
            _BUILT[self.key] = spec
        return spec


def _field_types(t: Any) -> set[type]:
    """Scalar types inside an IR type (struct fields, array elements; enums are their tag)."""
    from ..ir.nodes import ArrayType, StructType

    if isinstance(t, StructType):
        out: set[type] = set()
        for f in t.layout.fields:
            out |= _field_types(f.type)
        return out
    if isinstance(t, ArrayType):
        return _field_types(t.elem)
    return {t}


def _build(e: Entry) -> Any:
    import gompute_core as g

    bs = {"block_size": e.block_size}
    if e.ctor == "map_fn":
        return g.map_fn(e.name, e.fn, **bs)
    if e.kind in ("map", "map_indexed"):
        ctor = g.map if e.kind == "map" else g.map_indexed
        return ctor(e.name, e.t(), e.params, e.fn, **bs)
    if e.kind == "map_to":
        return g.map_to(e.name, e.t("In"), e.t("Out"), e.params, e.fn, **bs)
    if e.kind == "zip":
        return g.zip(e.name, e.t("A"), e.t("B"), e.t("Out"), e.params, e.fn, **bs)
    if e.kind == "reduce":
        return g.reduce(e.name, e.t(), e.params, e.fn, e.identity, pre=e.pre, **bs)
    if e.kind in PRESET_KINDS:
        return getattr(g, e.kind)(e.name, e.t(), e.params, pre=e.pre, **bs)
    ctor = g.gather if e.kind == "gather" else g.scatter
    return ctor(e.name, e.t(), e.t("Idx"), **bs)


def _s(t: type) -> str:
    return short_name(t)


def _kinds_entries() -> list[Entry]:
    """Every kind over every scalar type it admits."""
    from . import kernels as k

    out: list[Entry] = []
    for t in SCALAR_TYPES:
        is_bool = t is np.bool_
        out.append(Entry(f"map_{_s(t)}", "map", (("T", t),), k.COEF[t],
                         k.map_bool if is_bool else k.map_affine))
        out.append(Entry(f"zip_{_s(t)}", "zip", (("A", t), ("B", t), ("Out", t)), k.COEF[t],
                         k.zip_bool if is_bool else k.zip_affine))
        out.append(Entry(f"idx_{_s(t)}", "map_indexed", (("T", t),), k.COEF[t],
                         k.idx_bool if is_bool else k.idx_select))
    for a, b, o in _ZIP_MIXED:
        out.append(Entry(f"zipmix_{_s(a)}_{_s(b)}_{_s(o)}", "zip",
                         (("A", a), ("B", b), ("Out", o)), k.COEF[o], k.zip_mixed))
    for i, o in _CASTS:
        out.append(Entry(f"cast_{_s(i)}_{_s(o)}", "map_to", (("In", i), ("Out", o)),
                         k.COEF[o], k.cast_ident))
    out.append(Entry("idx_xor_u64", "map_indexed", (("T", np.uint64),), k.COEF[np.uint64],
                     k.idx_xor))
    out.append(Entry("idx_tofloat_f32", "map_indexed", (("T", np.float32),),
                     k.COEF[np.float32], k.idx_to_float))
    out.append(Entry("map_bs1_i32", "map", (("T", np.int32),), k.COEF[np.int32],
                     k.map_affine, block_size=1))
    out.append(Entry("map_bs1024_f32", "map", (("T", np.float32),), k.COEF[np.float32],
                     k.map_affine, block_size=1024))
    out += _reduce_entries()
    for n, (t, idx) in enumerate(_GATHER_TYPES):
        out.append(Entry(f"gather_{_s(t)}_{_s(idx)}", "gather", (("T", t), ("Idx", idx)),
                         block_size=(256, 128, 64)[n % 3]))
        scat_idx = _GATHER_TYPES[(n + 5) % len(_GATHER_TYPES)][1]
        out.append(Entry(f"scatter_{_s(t)}_{_s(scat_idx)}", "scatter",
                         (("T", t), ("Idx", scat_idx)), block_size=(64, 256, 128)[n % 3]))
    return out


def _reduce_entries() -> list[Entry]:
    from . import kernels as k

    out: list[Entry] = []
    for t in NUMERIC_TYPES:
        zero = t(0)
        for preset in ("sum", "min", "max"):
            out.append(Entry(f"{preset}_{_s(t)}", preset, (("T", t),), k.COEF[t]))
        out.append(Entry(f"rfirst_{_s(t)}", "reduce", (("T", t),), k.COEF[t],
                         k.first_nonzero, zero))
        out.append(Entry(f"rlast_{_s(t)}", "reduce", (("T", t),), k.COEF[t],
                         k.last_nonzero, zero, block_size=96))
        if t in INT_TYPES:
            out.append(Entry(f"rxor_{_s(t)}", "reduce", (("T", t),), k.COEF[t],
                             k.xor_combine, zero, pre=k.pre_affine))
        else:
            out.append(Entry(f"rmax_{_s(t)}", "reduce", (("T", t),), k.COEF[t],
                             k.max_combine, t(-np.inf), pre=k.pre_absdiff))
            out.append(Entry(f"rsum_{_s(t)}", "reduce", (("T", t),), k.COEF[t],
                             lambda a, b: a + b, zero))
    for t in INT_TYPES:
        for preset in ("any", "all"):
            out.append(Entry(f"{preset}_{_s(t)}", preset, (("T", t),), k.COEF[t]))
    out.append(Entry("rparity_bool", "reduce", (("T", np.bool_),), k.COEF[np.bool_],
                     k.bool_parity, np.bool_(False)))
    out.append(Entry("sumsq_f32", "sum", (("T", np.float32),), k.COEF[np.float32],
                     pre=k.pre_square, block_size=128))
    out.append(Entry("sumpre_i32", "sum", (("T", np.int32),), k.COEF[np.int32],
                     pre=k.pre_affine, block_size=1024))
    out.append(Entry("minabs_f64", "min", (("T", np.float64),), k.COEF[np.float64],
                     pre=k.pre_absdiff, block_size=32))
    return out


_ZIP_MIXED: tuple[tuple[type, type, type], ...] = (
    (np.int8, np.int16, np.int32), (np.uint8, np.float32, np.float64),
    (np.int64, np.float64, np.float32), (np.uint32, np.int32, np.int64),
    (np.uint16, np.uint64, np.uint8), (np.bool_, np.int8, np.int16),
    (np.float16, np.float32, np.float16), (np.uint64, np.int64, np.float64),
)
_CASTS: tuple[tuple[type, type], ...] = (
    (np.bool_, np.int32), (np.int8, np.int64), (np.int16, np.uint8), (np.int32, np.float32),
    (np.int64, np.float64), (np.uint8, np.float16), (np.uint16, np.int16),
    (np.uint32, np.float64), (np.uint64, np.float32), (np.float16, np.float64),
    (np.float32, np.int32), (np.float64, np.float32), (np.float64, np.uint8),
    (np.float32, np.bool_), (np.int32, np.bool_), (np.float64, np.float16),
    (np.float32, np.uint16), (np.float16, np.int16), (np.int64, np.int8),
    (np.uint64, np.int32),
)
_GATHER_TYPES: tuple[tuple[type, type], ...] = (
    (np.bool_, np.int32), (np.int8, np.int64), (np.int16, np.uint32), (np.int32, np.uint64),
    (np.int64, np.int16), (np.uint8, np.uint16), (np.uint16, np.int8), (np.uint32, np.uint8),
    (np.uint64, np.int32), (np.float16, np.int64), (np.float32, np.uint32),
    (np.float64, np.int64),
)


def _language_entries() -> list[Entry]:
    """Kernel-language semantics, math, params shapes and fusion."""
    from . import kernels as k
    from . import kernels_params as kp

    out: list[Entry] = []
    for t in INT_TYPES:
        out.append(Entry(f"intops_{_s(t)}", "zip", (("A", t), ("B", t), ("Out", t)),
                         k.IntOpSel, k.int_ops))
        out.append(Entry(f"weakint_{_s(t)}", "map", (("T", t),), k.COEF[t], k.weak_int))
    for t in FLOAT_TYPES:
        out.append(Entry(f"floatops_{_s(t)}", "zip", (("A", t), ("B", t), ("Out", t)),
                         k.FloatOpSel, k.float_ops))
        out.append(Entry(f"math_{_s(t)}", "zip", (("A", t), ("B", t), ("Out", t)),
                         k.MathSel, k.math_fns))
        out.append(Entry(f"fhelpers_{_s(t)}", "map", (("T", t),), k.Ctl, k.float_helpers))
        out.append(Entry(f"arrtup_{_s(t)}", "map", (("T", t),), k.Ctl, k.arrays_tuples,
                         extra_types=(np.float64,)))
    for t in (np.int32, np.int64):
        out.append(Entry(f"loops_{_s(t)}", "map", (("T", t),), k.Ctl, k.loops))
    for i in (np.int8, np.uint16, np.int32, np.uint64):
        out.append(Entry(f"weakfloat_{_s(i)}", "map_to", (("In", i), ("Out", np.float64)),
                         k.COEF[np.float64], k.weak_float_from_int))
    out.append(Entry("casts_i32", "map_to", (("In", np.int32), ("Out", np.float64)),
                     k.COEF[np.float64], k.explicit_casts,
                     extra_types=(np.float32, np.int16, np.int64, np.uint8)))
    out.append(Entry("params_ints", "map_indexed", (("T", np.uint64),), kp.AllScalars,
                     kp.all_ints))
    out.append(Entry("params_floats", "map_indexed", (("T", np.float64),), kp.AllScalars,
                     kp.all_floats))
    out.append(Entry("params_halves", "map_indexed", (("T", np.float32),), kp.Halves,
                     kp.half_fields))
    out.append(Entry("params_nested", "map_indexed", (("T", np.float32),), kp.NestOuter,
                     kp.nested))
    out.append(Entry("mapfn_f32", "map", (("T", np.float32),), k.COEF[np.float32],
                     k.annotated, ctor="map_fn"))
    out.append(Entry("noparams_i16", "map", (("T", np.int16),), None, k.no_params))
    out.append(Entry("params_boundary", "map", (("T", np.float32),), kp.Polar, kp.rotate))
    for t in (np.float32, np.float64, np.float16, np.int32, np.uint8, np.int64):
        out.append(Entry(f"fused_{_s(t)}", "map", (("T", t),), k.COEF[t],
                         kp.fused_pipeline(t)))
    out.append(Entry("fusedsum_f64", "sum", (("T", np.float64),), k.COEF[np.float64],
                     pre=kp.fused_pipeline(np.float64)))
    out.append(Entry("fusedmax_i16", "max", (("T", np.int16),), k.COEF[np.int16],
                     pre=kp.fused_pipeline(np.int16)))
    return [dataclasses.replace(e, group="language") for e in out]


_ENTRIES: dict[str, Entry] = {}


def entries() -> dict[str, Entry]:
    """Every catalogue entry by key (built on first call; needs the frontend and ABI)."""
    if not _ENTRIES:
        for e in _kinds_entries() + _language_entries():
            if e.key in _ENTRIES:
                raise RuntimeError(f"duplicate conformance entry {e.key!r}")
            _ENTRIES[e.key] = e
    return _ENTRIES


def entry(key: str) -> Entry:
    """The catalogue entry called ``key``."""
    return entries()[key]


def select(*kinds: str, group: str = "kinds") -> list[Entry]:
    """Entries of ``group`` whose kind is one of ``kinds`` (a preset name selects that preset)."""
    return [e for e in entries().values() if e.kind in kinds and e.group == group]


def iter_specs(exclude_types: tuple[str, ...] = ()) -> list[Any]:
    """Every conformance spec, skipping those touching a type in ``exclude_types``.

    ``exclude_types`` are short names (``"f16"``, ``"f64"``), e.g. a backend's
    ``BackendInfo.unsupported_types``.
    """
    excluded = set(exclude_types)
    return [e.spec() for e in entries().values() if not excluded & set(e.type_names())]

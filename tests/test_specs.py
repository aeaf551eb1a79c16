"""Spec constructors: attributes, validation errors, presets, lowering and the host fold."""

from __future__ import annotations

import gc
import itertools
import pickle
import weakref

import numpy as np
import pytest

import gompute_core as g
from gompute_core.errors import InvalidArgument
from gompute_core.specs import registered_kernel, registered_names, registered_spec, specs_in

_ids = itertools.count()


def uname(base: str = "k") -> str:
    """A spec name unused in this process."""
    return f"{base}_{next(_ids)}"


def double(x, p):
    return x * 2


def add(a, b, p):
    return a + b


@g.params
class Scale:
    scale: g.f32


MODULE_LEVEL = g.map("specs_module_level_double", g.f32, None, double)
"""Kept alive by this module: found by name, and pickled by reference."""


def test_map_attributes() -> None:
    name = uname("map")
    s = g.map(name, g.f32, None, double, block_size=128)
    assert (s.name, s.kind, s.block_size, s.T, s.params, s.fn) == (
        name, "map", 128, np.float32, None, double)
    assert s.In is s.Out is s.A is s.B is s.Idx is None
    assert s.value_types == (("T", np.float32),)
    assert registered_spec(name) is s
    assert "test_specs.py" in s.defined_at
    with pytest.raises(AttributeError):
        s.name = "other"  # type: ignore[misc]


def test_default_block_size_and_bool() -> None:
    s = g.map(uname(), bool, None, lambda x, p: not x)
    assert s.block_size == 256 and s.T is np.bool_


def test_kinds_value_types() -> None:
    assert g.map_to(uname(), g.u8, g.f32, None, double).value_types == (
        ("In", np.uint8), ("Out", np.float32))
    assert g.zip(uname(), g.i32, g.f64, g.f64, None, add).value_types == (
        ("A", np.int32), ("B", np.float64), ("Out", np.float64))
    assert g.map_indexed(uname(), g.i64, None, lambda x, i, p: x + i).kind == "map_indexed"
    gs = g.gather(uname(), g.f32, g.i32)
    assert (gs.kind, gs.T, gs.Idx, gs.params) == ("gather", np.float32, np.int32, None)
    assert g.scatter(uname(), g.u16, g.u64).value_types == (("T", np.uint16), ("Idx", np.uint64))


@pytest.mark.parametrize("bad", ["1abc", "a-b", "", "with space", "for", "int", "a__b", 3])
def test_bad_names(bad: object) -> None:
    with pytest.raises(InvalidArgument, match="name"):
        g.map(bad, g.f32, None, double)  # type: ignore[arg-type]


def test_duplicate_name_names_first_definition() -> None:
    name = uname("dup")
    first = g.map(name, g.f32, None, double)  # held: a live spec's name is taken
    with pytest.raises(InvalidArgument, match=r"already used by a map defined at .*test_specs"):
        g.sum(name, g.f32)
    assert registered_spec(name) is first


@pytest.mark.parametrize("bad", [0, 1025, -1, 2.0, True, "256"])
def test_bad_block_size(bad: object) -> None:
    with pytest.raises(InvalidArgument, match="block_size"):
        g.map(uname(), g.f32, None, double, block_size=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [int, float, np.complex64, "f32", None, np.dtype("U3")])
def test_bad_value_types(bad: object) -> None:
    with pytest.raises(InvalidArgument, match="T must be a Gompute scalar type"):
        g.map(uname(), bad, None, double)


def test_index_type_must_be_integer() -> None:
    with pytest.raises(InvalidArgument, match="Idx must be an integer"):
        g.gather(uname(), g.f32, g.f32)
    with pytest.raises(InvalidArgument, match="Idx"):
        g.scatter(uname(), g.f32, bool)


def test_params_must_be_params_class() -> None:
    class Plain:
        scale: float

    with pytest.raises(InvalidArgument, match="@g.params class"):
        g.map(uname(), g.f32, Plain, double)
    assert g.map(uname(), g.f32, Scale, double).params is Scale


def test_arity() -> None:
    with pytest.raises(InvalidArgument, match=r"takes 3 argument\(s\); expected 1 or 2"):
        g.map(uname(), g.f32, None, add)
    with pytest.raises(InvalidArgument, match="expected 2"):
        g.map(uname(), g.f32, Scale, lambda x: x)
    with pytest.raises(InvalidArgument, match="expected 2 or 3"):
        g.zip(uname(), g.f32, g.f32, g.f32, None, lambda x: x)
    with pytest.raises(InvalidArgument, match="exactly 2"):
        g.reduce(uname(), g.f32, None, lambda a, b, c: a, 0)
    with pytest.raises(InvalidArgument, match=r"\*args"):
        g.map(uname(), g.f32, None, lambda *xs: xs[0])
    with pytest.raises(InvalidArgument, match="Python function"):
        g.map(uname(), g.f32, None, 3)  # type: ignore[arg-type]
    assert g.map(uname(), g.f32, None, lambda x: x).fn is not None


def test_fused_objects_use_eval_arity() -> None:
    class Op:
        @staticmethod
        def eval(x, p):
            return x + 1

    assert g.map(uname(), g.f32, None, Op).fn is Op
    with pytest.raises(InvalidArgument, match="takes 1"):
        g.map(uname(), g.f32, Scale, type("Bad", (), {"eval": staticmethod(lambda x: x)}))


def test_reduce_identity_conversion() -> None:
    s = g.reduce(uname(), g.u8, None, lambda a, b: a | b, 0)
    assert s.identity == 0 and s.kind == "reduce" and s.preset is None
    with pytest.raises(InvalidArgument, match="does not fit u8"):
        g.reduce(uname(), g.u8, None, lambda a, b: a, 256)
    with pytest.raises(InvalidArgument, match="not an integer"):
        g.reduce(uname(), g.i32, None, lambda a, b: a, 0.5)
    with pytest.raises(InvalidArgument, match="overflows f16"):
        g.reduce(uname(), g.f16, None, lambda a, b: a, 1e10)
    with pytest.raises(InvalidArgument, match="must be a number"):
        g.reduce(uname(), g.f32, None, lambda a, b: a, "0")
    assert g.reduce(uname(), g.f32, None, lambda a, b: a, float("inf")).identity == np.inf
    assert g.reduce(uname(), g.i64, None, lambda a, b: a, 2.0).identity == 2


def test_preset_identities() -> None:
    assert g.sum(uname(), g.f32).identity == 0
    assert g.min(uname(), g.f64).identity == np.inf
    assert g.max(uname(), g.f16).identity == -np.inf
    assert g.min(uname(), g.i8).identity == 127
    assert g.max(uname(), g.u32).identity == 0
    assert g.max(uname(), g.i64).identity == -(2**63)
    assert g.any(uname(), g.i32).identity == 0
    assert g.all(uname(), g.u8).identity == 1
    assert g.sum(uname(), g.f32).preset == "sum"


def test_preset_type_rules() -> None:
    with pytest.raises(InvalidArgument, match="integer"):
        g.any(uname(), g.f32)
    with pytest.raises(InvalidArgument, match="integer"):
        g.all(uname(), g.f64)
    with pytest.raises(InvalidArgument, match="bool"):
        g.sum(uname(), bool)
    with pytest.raises(InvalidArgument, match="pre"):
        g.sum(uname(), g.f32, Scale, lambda x: x)


@pytest.mark.parametrize(("preset", "T"), [
    ("sum", g.i8), ("sum", g.f32), ("min", g.f32), ("max", g.i16), ("min", g.u64),
    ("max", g.f64), ("any", g.i32), ("all", g.u8),
])
def test_fold_matches_python_oracle(preset: str, T: type) -> None:
    spec = getattr(g, preset)(uname(), T)
    rng = np.random.default_rng(5)
    for size in (0, 1, 7, 1024):
        if np.issubdtype(T, np.integer):
            info = np.iinfo(T)
            partials = rng.integers(info.min, info.max, size, dtype=T, endpoint=True)
            if preset in ("any", "all"):
                partials = (partials % 2).astype(T)
        else:
            partials = rng.standard_normal(size).astype(T)
        expect = T(spec.identity)
        with np.errstate(all="ignore"):
            for x in partials:
                expect = T(spec.combine(expect, x))
        got = spec.fold(partials)
        assert type(got) is T
        if preset == "sum" and T is g.f32:
            assert got == pytest.approx(expect, rel=1e-5, abs=1e-5)
        else:
            assert got == expect


def test_fold_custom_combine_and_non_reduce() -> None:
    spec = g.reduce(uname(), g.u32, None, lambda a, b: a * b, 1)
    partials = np.array([3, 5, 7], np.uint32)
    assert spec.fold(partials) == np.uint32(105)
    assert spec.fold(partials[:0]) == np.uint32(1)
    with pytest.raises(InvalidArgument, match="not a reduce"):
        g.map(uname(), g.f32, None, double).fold(partials)


def test_map_fn_reads_annotations() -> None:
    def scaled(x: g.f32, p: Scale) -> g.f32:
        return x * p.scale

    def plain(x: g.i32):
        return x + 1

    s = g.map_fn(uname(), scaled)
    assert (s.T, s.params, s.kind) == (np.float32, Scale, "map")
    assert g.map_fn(uname(), plain).params is None


def test_map_fn_errors() -> None:
    def no_annotation(x, p: Scale):
        return x

    def no_p_annotation(x: g.f32, p):
        return x

    def wrong_return(x: g.f32) -> g.f64:
        return x

    with pytest.raises(InvalidArgument, match="no annotation for 'x'"):
        g.map_fn(uname(), no_annotation)
    with pytest.raises(InvalidArgument, match="no annotation for 'p'"):
        g.map_fn(uname(), no_p_annotation)
    with pytest.raises(InvalidArgument, match="map_to"):
        g.map_fn(uname(), wrong_return)
    with pytest.raises(InvalidArgument, match="annotated Python function"):
        g.map_fn(uname(), Scale)  # type: ignore[arg-type]


def test_registry_holds_specs_weakly() -> None:
    """A dropped spec (lowered, so holding its IR) is freed and its name can be defined
    again; while it lives, another definition of the name is refused."""
    name = uname("weak")
    spec = g.map(name, g.f32, None, double)
    lowered = weakref.ref(spec.lower())
    with pytest.raises(InvalidArgument, match="already used by a map"):
        g.sum(name, g.f32)
    gone = weakref.ref(spec)
    del spec
    gc.collect()
    assert gone() is None and lowered() is None
    assert registered_spec(name) is None and name not in registered_names()
    again = g.sum(name, g.f32)
    assert registered_spec(name) is again and again.preset == "sum"


def test_registry_holds_raw_kernels_weakly() -> None:
    """Raw kernels share the registry and its rules: a live one refuses a spec of its name,
    a dropped one frees the name."""
    name = uname("weak_raw")

    def define() -> object:
        @g.raw_kernel(name=name)
        def fill(out: g.GlobalPtr[g.f32]):
            out[g.builtins.global_id(0)] = 1

        return fill

    raw = define()
    assert registered_kernel(name) is raw
    with pytest.raises(InvalidArgument, match="already used by a raw kernel"):
        g.map(name, g.f32, None, double)
    gone = weakref.ref(raw)
    del raw
    gc.collect()
    assert gone() is None and registered_kernel(name) is None
    assert registered_spec(name) is None
    assert g.map(name, g.f32, None, double).kind == "map"


def test_module_level_spec_stays_registered_and_pickles_by_reference() -> None:
    gc.collect()
    assert registered_spec("specs_module_level_double") is MODULE_LEVEL
    assert pickle.loads(pickle.dumps(MODULE_LEVEL)) is MODULE_LEVEL


def test_specs_in_collects_module_level_specs() -> None:
    a = g.sum(uname(), g.f32)
    ns = {"a": a, "alias": a, "other": 3, "b": g.gather(uname(), g.f32, g.i32)}
    assert specs_in(ns) == [a, ns["b"]]


def test_lower_map_builds_kernel_ir() -> None:
    s = g.map(uname("lowered"), g.f32, Scale, lambda x, p: x * p.scale)
    kir = s.lower()
    assert kir is s.lower()
    assert (kir.name, kir.kind, kir.block_size) == (s.name, "map", 256)
    assert kir.value_types == (("T", np.float32),)
    assert kir.params is not None and kir.element == f"{s.name}_fn"
    main = kir.function(kir.element)
    assert [t for _, t in main.args] == [np.float32, kir.params]
    assert main.ret is np.float32


def test_lower_without_params_drops_p() -> None:
    s = g.map(uname(), g.i32, None, double)
    main = s.lower().function(f"{s.name}_fn")
    assert [t for _, t in main.args] == [np.int32]


def test_lower_reduce_presets() -> None:
    s = g.min(uname(), g.f32, None, lambda x, p: abs(x))
    kir = s.lower()
    assert kir.reassociate and kir.element == f"{s.name}_combine"
    assert kir.pre == f"{s.name}_pre"
    assert kir.identity == g.min(uname(), g.f32).lower().identity
    assert kir.identity.type is np.float32 and kir.identity.value == np.inf
    custom = g.reduce(uname(), g.i32, None, lambda a, b: a + b, 0).lower()
    assert not custom.reassociate and custom.pre is None


def test_lower_gather_has_no_functions() -> None:
    kir = g.gather(uname(), g.f64, g.u32).lower()
    assert kir.functions == () and kir.element is None
    assert kir.value_types == (("T", np.float64), ("Idx", np.uint32))


def test_fused_function_must_match_spec_types() -> None:
    pipeline = g.Fused(g.f32, Scale, [g.Unary(g.f32, Scale, lambda x, p: x * p.scale)])
    assert g.map(uname(), g.f32, Scale, pipeline).fn is pipeline
    with pytest.raises(InvalidArgument, match="works on f32, the spec's T is f64"):
        g.map(uname(), g.f64, Scale, pipeline)
    with pytest.raises(InvalidArgument, match="takes params"):
        g.map(uname(), g.f32, None, pipeline)

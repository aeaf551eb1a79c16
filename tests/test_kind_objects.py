"""Kinds as objects: the registry, a spec's kind object, and the core driven by it."""

from __future__ import annotations

import dataclasses
import itertools
import pickle

import numpy as np
import pytest
from pybackend import PyBackend

import gompute_core as g
from gompute_core import kinds, specs
from gompute_core.abi.entry_args import arg_layout
from gompute_core.backend import hookimpl
from gompute_core.errors import InvalidArgument, Unsupported
from gompute_core.ir import kernel as ir_kernel
from gompute_core.kinds import support
from gompute_core.plugins import manager
from gompute_core.plugins.records import BackendInfo

_ids = itertools.count()


def uname(base: str = "ko") -> str:
    """A spec name unused in this process."""
    return f"{base}_{next(_ids)}"


def twice(x):
    return x * 2


def plus(a, b):
    return a + b


def one_of_each() -> list[g.Spec]:
    """A spec of every built-in kind."""
    return [g.map(uname(), g.f32, None, twice), g.map_indexed(uname(), g.u32, None,
                                                                lambda x, i: x + i),
            g.map_to(uname(), g.i32, g.f64, None, twice),
            g.zip(uname(), g.f32, g.f32, g.f32, None, plus),
            g.reduce(uname(), g.i64, None, plus, 0), g.gather(uname(), g.f32, g.i32),
            g.scatter(uname(), g.f32, g.i32), g.scan(uname(), g.i32, None, plus, 0)]


def test_every_spec_carries_its_registered_kind() -> None:
    made = one_of_each()
    # elementwise launches raw kernels it writes (tests/test_elementwise.py)
    assert {s.kind for s in made} == set(kinds.kind_names()) - {"elementwise"}
    for s in made:
        k = s.kind_object
        assert k is kinds.kind_named(s.kind)
        assert isinstance(s.kind, str) and s.kind == k and k == s.kind  # equal to its name
        assert hash(k) == hash(s.kind) and str(k) == s.kind
        assert tuple(r for r, _ in s.value_types) == k.roles
        assert s.lower().kind == s.kind


def test_kind_lists_are_derived_from_the_registry() -> None:
    assert ir_kernel.KINDS == kinds.kind_names()
    assert ir_kernel.ENTRY_ARGS == {k.name: k.entry_args for k in kinds.kinds()}
    with pytest.raises(AttributeError):
        _ = ir_kernel.NO_SUCH_NAME


def test_entry_layout_follows_the_kind() -> None:
    for s in one_of_each():
        layout = arg_layout(s.lower())
        assert [(slot.name, slot.kind) for slot in layout.slots] == \
            [(name, "pointer" if arg == "pointer" else "scalar")
             for name, arg in s.kind_object.entry_args]
        assert all(slot.size == 8 and slot.code == "Q" for slot in layout.slots)


def test_unknown_kind_is_named() -> None:
    with pytest.raises(InvalidArgument, match=r"no spec kind 'prefix'.*map"):
        kinds.kind_named("prefix")


def test_a_kind_name_registers_once() -> None:
    with pytest.raises(InvalidArgument, match="registered twice"):
        kinds.base.register(kinds.map.MapKind())


def test_old_constructor_names_still_resolve() -> None:
    assert specs.map is g.map is kinds.map.map
    assert specs.sum is g.sum and specs.scatter is g.scatter
    with pytest.raises(AttributeError):
        _ = specs.no_such_constructor


def test_defined_at_is_the_callers_line() -> None:
    s = g.sum(uname(), g.f32)
    assert s.defined_at.startswith(__file__ + ":")


def test_fold_belongs_to_the_reduce_kind() -> None:
    m = g.map(uname(), g.f32, None, twice)
    with pytest.raises(InvalidArgument, match="is a map, not a reduce: no fold"):
        m.fold(np.ones(3, np.float32))
    r = g.reduce(uname(), g.i32, None, lambda a, b: a * 2 + b, 0)  # not commutative
    parts = np.array([1, 2, 3], np.int32)
    want = np.int32(0)
    for x in parts:
        want = np.int32(want * 2 + x)
    assert r.fold(parts) == want == 11


def test_a_kind_pickles_to_an_equal_kind() -> None:
    again = pickle.loads(pickle.dumps(kinds.kind_named("zip")))
    assert again == "zip" and again == kinds.ZIP and again.roles == ("A", "B", "Out")


@pytest.mark.parametrize("host_memory", [True, False])
def test_launch_and_run_are_the_kinds_front_ends(host_memory: bool) -> None:
    """``Kernel.launch`` is the kind's front end bound to the program (no extra frame)
    and ``run`` goes through the kind's host plan, on the reference backend."""
    with manager.isolated():
        manager.register(PyBackend("kindref", host_memory=host_memory))
        spec = g.map(uname(), g.f32, None, twice)
        with g.Kernel(spec, "kindref") as k:
            assert k.launch.__self__ is k.program
            assert k.launch.__func__ is kinds.map._launch_map
            assert k.program.kind is spec.kind_object
            data = np.arange(5, dtype=np.float32)
            k.run(data)
            np.testing.assert_array_equal(data, np.arange(5, dtype=np.float32) * 2)
            buf = k.alloc(5)
            buf.upload(data)
            k.launch(buf, 5)
            k.context.synchronize()
            buf.download(data)
            np.testing.assert_array_equal(data, np.arange(5, dtype=np.float32) * 4)
            assert k.alloc(2).nbytes == 8  # default role T
        zspec = g.map_to(uname(), g.i32, g.f64, None, twice)
        with g.Kernel(zspec, "kindref") as k:
            assert k.alloc(2).nbytes == 16  # map_to allocates Out by default


# ---------------------------------------------------------------- kernel features (step 2)
def info(kinds_: tuple[str, ...] = (), features: tuple[str, ...] | None = None) -> BackendInfo:
    """A ``BackendInfo`` declaring ``kinds_`` (deprecated) and ``features``."""
    return BackendInfo("feat", "0", 3, 1, kinds_, features=features)


def test_features_decide_the_kinds() -> None:
    every = set(kinds.kind_names())
    on_raw = {"scan", "elementwise"}  # kinds whose device programs are raw kernels
    assert set(support.supported_kinds(info(features=("entries",)))) == every - on_raw
    assert set(support.supported_kinds(info(features=("entries", "raw")))) == every | {"raw"}
    assert support.supported_kinds(info(features=("raw",))) == ("scan", "elementwise", "raw")
    assert support.supported_kinds(info(features=())) == ()
    assert support.runs_raw(info(features=("raw",)))


def test_kind_names_alone_still_work_deprecated() -> None:
    """A backend with no ``features`` runs exactly the kinds it names (and raw kernels
    with their builtins when it names "raw")."""
    old = info(("map", "reduce"))
    assert support.supported_kinds(old) == ("map", "reduce")
    assert not support.runs(old, kinds.ZIP) and not support.runs_raw(old)
    assert support.backend_features(info(("map", "raw"))) == support.RAW_FEATURES
    assert support.supported_kinds(info(("map", "raw"))) == ("map", "scan", "elementwise",
                                                              "raw")


def test_an_unknown_feature_is_named() -> None:
    with pytest.raises(InvalidArgument, match=r"'feat' declares unknown kernel feature\(s\) "
                                              r"warp_shuffle"):
        support.backend_features(info(features=("entries", "warp_shuffle")))


def test_a_backend_without_a_feature_refuses_the_kind() -> None:
    """``g.Kernel`` refuses a spec whose kind needs a feature the backend lacks, before
    compiling; the conformance suite reads the same decision."""
    class NoFeatures(PyBackend):
        @hookimpl
        def gompute_backend_info(self) -> BackendInfo:
            return dataclasses.replace(super().gompute_backend_info(), features=())

    with manager.isolated():
        manager.register(NoFeatures("nofeat"))
        with pytest.raises(Unsupported, match="backend 'nofeat' does not support map kernels"):
            g.Kernel(g.map(uname(), g.f32, None, twice), "nofeat")


# ---------------------------------------------------------------- the scan kind
def test_scan_constructors_validate() -> None:
    with pytest.raises(InvalidArgument, match=r"g.scan\('\w+'\): combine .* takes 1"):
        g.scan(uname(), g.f32, None, twice, 0)
    with pytest.raises(InvalidArgument, match="inclusive must be True or False"):
        g.cumsum(uname(), g.f32, inclusive=1)
    with pytest.raises(InvalidArgument, match="cannot be bool"):
        g.cummax(uname(), bool)
    with pytest.raises(InvalidArgument, match="does not fit i8"):
        g.scan(uname(), g.i8, None, plus, 300)
    s = g.cummin(uname(), g.u16, inclusive=False)
    assert (s.kind, s.preset, s.identity, s.inclusive) == ("scan", "cummin", 65535, False)
    assert g.cumprod(uname(), g.f64).identity == 1.0
    assert g.cummax(uname(), g.f32).identity == float("-inf")


def test_scan_reference_is_the_documented_order() -> None:
    """The oracle: integers equal NumPy's scan; runs, groups and tiles (16, 512 and 4096
    f32 elements at the default block size) show in a float scan as the documented
    regrouping."""
    from gompute_core.kinds.scan import reference, tiling

    spec = g.cumsum(uname(), g.f32)
    shape = tiling(spec)
    assert (shape.threads, shape.items, shape.tile) == (256, 16, 4096)
    assert tiling(g.cumsum(uname(), g.f64)).items == 8
    assert tiling(g.cumsum(uname(), g.f64, block_size=1024)).items == 2  # 16 KiB tiles
    x = np.arange(1, 9000, dtype=np.int32)
    np.testing.assert_array_equal(reference(g.cumsum(uname(), g.i32), x), np.cumsum(x))
    ex = reference(g.cumsum(uname(), g.i32, inclusive=False), x)
    np.testing.assert_array_equal(ex, np.concatenate([[0], np.cumsum(x)[:-1]]))
    f = np.random.default_rng(0).uniform(-1, 1, 9000).astype(np.float32)
    y = reference(spec, f)
    f32 = np.float32
    run = np.cumsum(f[16:32], dtype=f32)             # run 1, folded from its own start
    np.testing.assert_array_equal(y[16:32], np.cumsum(f[:16], dtype=f32)[-1] + run)
    w = np.float32(0)  # group 1's first run: carry Q_1 = G_0, the left fold of 32 runs
    for r in range(32):
        total = np.cumsum(f[16 * r:16 * r + 16], dtype=f32)[-1]
        w = total if r == 0 else f32(w + total)
    np.testing.assert_array_equal(y[512:528], w + np.cumsum(f[512:528], dtype=f32))
    a0 = np.float32(0)  # tile 1: carry P_0 = A_0, the fold of the 8 groups' totals
    for g0 in range(0, 4096, 512):
        gt = np.float32(0)
        for r in range(g0, g0 + 512, 16):
            total = np.cumsum(f[r:r + 16], dtype=f32)[-1]
            gt = total if r == g0 else f32(gt + total)
        a0 = gt if g0 == 0 else f32(a0 + gt)
    np.testing.assert_array_equal(y[4096:4112], a0 + np.cumsum(f[4096:4112], dtype=f32))
    assert not np.array_equal(y, np.cumsum(f, dtype=f32))  # the grouping shows


def test_a_backend_without_raw_kernels_refuses_a_scan() -> None:
    with manager.isolated():
        manager.register(PyBackend("noraw", host_memory=False))  # features: entries only
        with pytest.raises(Unsupported, match="backend 'noraw' does not support scan kernels"):
            g.Kernel(g.cumsum(uname(), g.f32), "noraw")


def affine_compose(f, h):
    """``x -> a*x + b`` maps (packed ``a << 32 | b``) composed: associative, not
    commutative."""
    a1 = f >> 32
    b1 = f & 0xFFFFFFFF
    a2 = h >> 32
    b2 = h & 0xFFFFFFFF
    return (((a2 * a1) & 0xFFFFFFFF) << 32) | ((a2 * b1 + b2) & 0xFFFFFFFF)


@g.params
class Offset:
    by: g.f32


def minus(x, p):
    return x - p.by


@pytest.mark.parametrize("n", [1, 31, 33, 1025])
def test_scan_on_the_reference_backend(n: int) -> None:
    """The scan's core-generated raw kernels run on the reference backend too (its raw
    kernels are the Python function, thread by thread): the documented order, bit for
    bit, for a float cumsum with ``pre`` and params and for a non-commutative combine,
    through ``run`` and ``launch``."""
    from gompute_core.kinds.scan import reference

    rng = np.random.default_rng(n)
    with manager.isolated():
        manager.register(PyBackend("scanref"))
        fs = g.cumsum(uname(), g.f32, Offset, minus, inclusive=False)
        x = rng.uniform(-2, 2, n).astype(np.float32)
        with g.Kernel(fs, "scanref") as k:
            got = x.copy()
            k.run(got, Offset(by=0.25))
            want = reference(fs, x, Offset(by=0.25))
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
        aff = g.scan(uname(), g.u64, None, affine_compose, 1 << 32)
        y = rng.integers(0, 2**64, n, dtype=np.uint64)
        with g.Kernel(aff, "scanref") as k:
            buf = k.alloc(n)
            buf.upload(y)
            k.launch(buf, n)
            got = np.empty_like(y)
            buf.download(got)
        acc, want = None, []
        with np.errstate(all="ignore"):
            for v in y:
                acc = v if acc is None else np.uint64(affine_compose(acc, v))
                want.append(acc)
        np.testing.assert_array_equal(got, np.array(want, np.uint64))


def test_a_scan_has_no_entry_to_compile_ahead_of_time() -> None:
    with pytest.raises(Unsupported, match="is a scan, whose device program is raw kernels"):
        g.compile(g.cumsum(uname(), g.f32), "cpu", arch="host")

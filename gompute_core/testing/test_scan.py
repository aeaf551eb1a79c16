"""The scan kind: every preset over every numeric type, a custom non-commutative
combine, ``pre`` with params, inclusive and exclusive, sizes around run, group and
tile boundaries (and many tiles: the carries fold), through ``run`` and through ``launch``
on a device buffer.

The oracle is the fold in order as plain Python on NumPy scalars
(:func:`gompute_core.kinds.scan.reference`: the documented order of operations,
which for integers and exact combines is the plain left fold; for integer
presets NumPy's ``cumsum``/``cumprod``/``maximum.accumulate`` check it again).
Results are compared bit for bit (value for ``cummax``/``cummin``, where a device
may return either zero of a ``-0.0``/``0.0`` tie).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gompute_core as g

from ..kinds.scan import reference
from ..types import FLOAT_TYPES, INT_TYPES, short_name, u64
from ._support import mark, rng_for

TIER = "scan"
NUMERIC = INT_TYPES + FLOAT_TYPES
PRESETS = ("cumsum", "cumprod", "cummax", "cummin")
SIZES = (0, 1, 7, 8, 9, 15, 16, 17, 255, 256, 257, 511, 512, 513, 2047, 2048, 2049, 4095,
         4096, 4097, 3 * 4096 + 5)
"""Around a run (8 or 16 elements at the default block size), a group (32 runs), a tile
(256 runs: 2048 or 4096 elements), and four tiles."""
MANY = 40 * 4096 + 3
"""Forty tiles of the default block size (a long carry chain, every tile boundary)."""
BIG = 2 ** 21 + 3
"""Hundreds of tiles (fewer cases: the oracle is Python)."""


def _spec(preset: str, t: type, inclusive: bool) -> g.Spec:
    name = f"conf_scan_{preset}_{short_name(t)}_{'inc' if inclusive else 'exc'}"
    return getattr(g, preset)(name, t, inclusive=inclusive)


SPECS = {(p, t, inc): _spec(p, t, inc) for p in PRESETS for t in NUMERIC
         for inc in (True, False)}


def affine_compose(f: Any, h: Any) -> Any:
    """Apply ``f`` then ``h`` to ``x`` (``(a, b)``: ``x -> a*x + b`` mod 2**32, packed
    ``a << 32 | b`` in a u64): associative, not commutative."""
    a1 = f >> 32
    b1 = f & 0xFFFFFFFF
    a2 = h >> 32
    b2 = h & 0xFFFFFFFF
    a = (a2 * a1) & 0xFFFFFFFF
    b = (a2 * b1 + b2) & 0xFFFFFFFF
    return (a << 32) | b


AFFINE = {inc: g.scan(f"conf_scan_affine_{'inc' if inc else 'exc'}", u64, None,
                      affine_compose, 1 << 32, inclusive=inc) for inc in (True, False)}


@g.params
class Shift:
    """``pre``'s params."""

    by: g.i32


def shifted(x: Any, p: Any) -> Any:
    return x - p.by


PRE = g.cumsum("conf_scan_pre_i32", g.i32, Shift, shifted)
SMALL_TILES = g.cumsum("conf_scan_small_tiles_i64", g.i64, block_size=32)
"""Tiles of 512 elements (32 threads x 16): a tile's worth of totals, what the by-blocks
carries kernel folds per round, is 512 of them, so a few hundred thousand elements take
several rounds."""


def data_for(t: type, n: int, preset: str, key: str) -> np.ndarray:
    """Inputs whose scan stays finite for floats (-0.0 first: the sign survives)."""
    rng = rng_for(key, n)
    if t in INT_TYPES:
        info = np.iinfo(t)
        out = rng.integers(info.min, info.max, n, endpoint=True, dtype=t)
        if preset == "cumprod":
            out |= t(1)  # odd factors: the product never collapses to 0
        return out
    lo, hi = (0.9, 1.1) if preset == "cumprod" else (-2.0, 2.0)
    out = rng.uniform(lo, hi, n).astype(t)
    if n:
        out[0] = -0.0
    return out


def plain_fold(spec: g.Spec, x: np.ndarray) -> np.ndarray:
    """The plain left fold (Python on NumPy scalars), inclusive or exclusive."""
    T, out, acc = spec.T, np.empty_like(x), spec.T(spec.identity)
    with np.errstate(all="ignore"):
        for i, v in enumerate(x):
            if spec.inclusive:
                acc = v if i == 0 else T(spec.combine(acc, v))
                out[i] = acc
            else:
                out[i] = acc
                acc = T(spec.combine(acc, v))
    return out


def check(spec: g.Spec, got: np.ndarray, want: np.ndarray, context: str) -> None:
    if spec.preset in ("cummax", "cummin"):
        bad = np.flatnonzero(got != want)
    else:
        bad = np.flatnonzero(got.view(f"u{got.itemsize}") != want.view(f"u{want.itemsize}"))
    if bad.size:
        i = int(bad[0])
        raise AssertionError(f"{context}: {bad.size} element(s) differ, first at {i}: got "
                             f"{got[i]!r}, want {want[i]!r}")


def _cases() -> list[Any]:
    return [pytest.param(key, id=f"{key[0]}_{short_name(key[1])}_"
                         f"{'inc' if key[2] else 'exc'}",
                         marks=mark("scan", (key[1],))) for key in SPECS]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("key", _cases())
def test_presets(key: tuple[str, type, bool], n: int, gompute_kernels: Any) -> None:
    """``run`` of every preset, type and mode equals the documented order."""
    spec = SPECS[key]
    x = data_for(spec.T, n, key[0], spec.name)
    got = x.copy()
    assert gompute_kernels.get(spec).run(got) is got
    check(spec, got, reference(spec, x), f"{spec.name} n={n}")


@pytest.mark.parametrize("key", [pytest.param(k, marks=mark("scan", (k[1],)),
                                              id=f"{k[0]}_{short_name(k[1])}")
                                 for k in SPECS if k[1] in INT_TYPES and k[2]])
def test_integer_presets_equal_numpy(key: tuple[str, type, bool], gompute_kernels: Any
                                     ) -> None:
    """Integers wrap, so any order is the plain fold: NumPy's own scans agree."""
    spec = SPECS[key]
    n = MANY
    x = data_for(spec.T, n, key[0], spec.name)
    got = x.copy()
    gompute_kernels.get(spec).run(got)
    numpy_scan = {"cumsum": lambda a: np.cumsum(a, dtype=spec.T),
                  "cumprod": lambda a: np.cumprod(a, dtype=spec.T),
                  "cummax": np.maximum.accumulate, "cummin": np.minimum.accumulate}
    check(spec, got, numpy_scan[key[0]](x), f"{spec.name} n={n}")


@pytest.mark.parametrize("inclusive", [True, False], ids=["inc", "exc"])
@pytest.mark.parametrize("n", (*SIZES, BIG))
@mark("scan", (u64,))
def test_non_commutative_combine(inclusive: bool, n: int, gompute_kernels: Any) -> None:
    """Affine maps composed in order: any reordering of operands shows."""
    spec = AFFINE[inclusive]
    rng = rng_for(spec.name, n)
    x = rng.integers(0, 2 ** 64, n, dtype=np.uint64, endpoint=False)
    got = x.copy()
    gompute_kernels.get(spec).run(got)
    check(spec, got, plain_fold(spec, x), f"{spec.name} n={n}")


@pytest.mark.parametrize("n", (MANY, BIG))
@mark("scan", (np.float32,))
def test_float_order_at_scale(n: int, gompute_kernels: Any) -> None:
    """f32 cumsum over many tiles: the documented order, bit for bit."""
    spec = SPECS[("cumsum", np.float32, True)]
    x = data_for(np.float32, n, "cumsum", f"big{n}")
    got = x.copy()
    gompute_kernels.get(spec).run(got)
    check(spec, got, reference(spec, x), f"{spec.name} n={n}")


@mark("scan", (np.int32,))
def test_pre_with_params(gompute_kernels: Any) -> None:
    x = np.arange(4099, dtype=np.int32)
    got = x.copy()
    gompute_kernels.get(PRE).run(got, Shift(by=5))
    check(PRE, got, np.cumsum(x - 5, dtype=np.int32), "pre")
    with pytest.raises(g.errors.InvalidArgument, match="takes a Shift"):
        gompute_kernels.get(PRE).run(got)


@pytest.mark.parametrize("n", (1, 33, MANY))
@mark("scan", (np.int64,))
def test_launch_on_a_device_buffer(n: int, gompute_kernels: Any) -> None:
    """``launch(data, n, p)`` scans a device buffer in place; a second launch scans the
    result again (the scratch is reused); the tail past ``n`` is untouched."""
    spec = SPECS[("cumsum", np.int64, True)]
    k = gompute_kernels.get(spec)
    x = data_for(np.int64, n + 3, "cumsum", f"launch{n}")
    buf = k.alloc(n + 3)
    buf.upload(x)
    k.launch(buf, n)
    k.launch(buf, n)
    k.context.synchronize()
    got = np.empty_like(x)
    buf.download(got)
    buf.free()
    want = x.copy()
    want[:n] = np.cumsum(np.cumsum(x[:n], dtype=np.int64), dtype=np.int64)
    check(spec, got, want, f"launch n={n}")


@mark("scan", (np.float32,))
def test_bad_launches_are_refused(gompute_kernels: Any) -> None:
    spec = SPECS[("cumsum", np.float32, True)]
    k = gompute_kernels.get(spec)
    buf = k.alloc(10)
    with pytest.raises(g.errors.InvalidArgument, match="holds 10 elements, the launch needs 11"):
        k.launch(buf, 11)
    with pytest.raises(g.errors.InvalidArgument, match="n: expected a non-negative int"):
        k.launch(buf, -1)
    with pytest.raises(g.errors.InvalidArgument, match="has no params"):
        k.launch(buf, 10, Shift(by=1))
    buf.free()
    with pytest.raises(g.errors.InvalidArgument, match="used after free"):
        k.launch(buf, 10)
    with pytest.raises(g.errors.InvalidArgument, match="dtype"):
        k.run(np.zeros(4, np.float64))


@pytest.mark.parametrize("n", (33, MANY))
@pytest.mark.parametrize("which", ["f32_exclusive", "affine"])
@mark("scan", (np.float32, u64))
def test_both_plans_agree(which: str, n: int, gompute_kernels: Any) -> None:
    """The plan by blocks (what GPUs run: a block per tile through shared memory) and the
    plan by threads (host devices) both give the documented order, whichever this device
    runs by default; by blocks runs wherever the backend has barriers and shared memory.
    A second launch reuses the scratch."""
    from ..kinds.scan_program import BY_BLOCKS_FEATURES, ScanProgram
    from ..kinds.support import backend_features
    from ..plugins import manager

    spec = AFFINE[True] if which == "affine" else SPECS[("cumsum", np.float32, False)]
    device = gompute_kernels.get(spec).context
    if which == "affine":
        x = rng_for(spec.name, n).integers(0, 2 ** 64, n, dtype=np.uint64, endpoint=False)
        want = plain_fold(spec, x)
    else:
        x = data_for(np.float32, n, "cumsum", f"plans{n}")
        want = reference(spec, x)
    features = backend_features(manager.record(device.backend).info)
    for by_blocks in (True, False) if BY_BLOCKS_FEATURES <= features else (False,):
        program = ScanProgram(device, spec, by_blocks=by_blocks)
        buf = program._kernels[0].alloc(n, spec.T)
        for _ in range(2):
            buf.upload(x)
            program.launch(buf, n)
            device.synchronize()
            got = np.empty_like(x)
            buf.download(got)
            check(spec, got, want, f"by_blocks={by_blocks} n={n}")
        buf.free()
        program.close()


@mark("scan", (np.float32,))
def test_launches_on_another_stream_wait_for_the_first(gompute_kernels: Any) -> None:
    """Changing ``k.stream`` between two launches on one buffer keeps them in order: the
    second waits for the first (both use the program's scratch), so the buffer holds the
    scan of the scan."""
    spec = SPECS[("cumsum", np.float32, True)]
    k = gompute_kernels.get(spec)
    device = k.context
    if not device.has("streams"):
        pytest.skip(f"{device!r} has one stream")
    n = MANY
    x = data_for(np.float32, n, "cumsum", "streams")
    first, second = device.create_stream(), device.create_stream()
    buf = k.alloc(n)
    old = k.stream
    try:
        buf.upload(x)
        k.stream = first
        k.launch(buf, n)
        k.stream = second
        k.launch(buf, n)
        second.synchronize()
    finally:
        k.stream = old
    got = np.empty_like(x)
    buf.download(got)
    buf.free()
    check(spec, got, reference(spec, reference(spec, x)), f"two streams n={n}")


@mark("scan", (np.int64,))
def test_the_carries_fold_over_several_rounds(gompute_kernels: Any) -> None:
    """More tiles than one round of the by-blocks carries fold holds (600 tiles of 512,
    rounds of 512 totals), on both plans where the device runs them: equal to NumPy's
    scan (integers: any order is the plain fold)."""
    from ..kinds.scan_program import BY_BLOCKS_FEATURES, ScanProgram
    from ..kinds.support import backend_features
    from ..plugins import manager

    spec = SMALL_TILES
    device = gompute_kernels.get(spec).context
    n = 600 * 512 + 7
    x = data_for(np.int64, n, "cumsum", "rounds")
    want = np.cumsum(x, dtype=np.int64)
    features = backend_features(manager.record(device.backend).info)
    for by_blocks in (True, False) if BY_BLOCKS_FEATURES <= features else (False,):
        program = ScanProgram(device, spec, by_blocks=by_blocks)
        buf = program._kernels[0].alloc(n, spec.T)
        buf.upload(x)
        program.launch(buf, n)
        device.synchronize()
        got = np.empty_like(x)
        buf.download(got)
        buf.free()
        program.close()
        check(spec, got, want, f"by_blocks={by_blocks} n={n}")

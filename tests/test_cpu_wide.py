"""CPU kernels wider than one Python call takes in numba: a raw kernel with 40 parameters
(and more than 30 parameters for its per-block function), a helper with 32 parameters,
and spec kernels whose params record has 35 fields; each against NumPy or plain Python.

CPython compiles a call of more than 30 arguments through a list (numba's inliner
rejects it as a ``*args`` call), so the rendered code passes them as nested tuples. The
kernels are generated here, written to a file and imported (the frontend reads a
kernel's source), so that their width stays a parameter of the test."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from test_cpu_raw import mode as mode  # the serial / threaded-blocks fixture

import gompute_core as g

K = 13
"""Inputs, coefficients and outputs of the wide raw kernel: 3 * 13 + 1 = 40 parameters."""
BLOCK = 32
HELPER_ARGS = 32
FIELDS = 35


def _wide_source() -> str:
    params = [*(f"a{j}: g.GlobalPtr[g.f64]" for j in range(K)),
              *(f"c{j}: g.f64" for j in range(K)),
              *(f"o{j}: g.GlobalPtr[g.f64]" for j in range(K)), "n: g.u64"]
    scaled = "\n".join(f"    v{j} = a{j}[i] * c{j}" for j in range(K))
    stored = "\n".join(f"        o{j}[i] = v{j} + s[(lid + {j + 1}) % {BLOCK}]"
                       for j in range(K))
    helper_params = ", ".join(f"x{j}" for j in range(HELPER_ARGS))
    helper_sum = " + ".join(f"x{j} * {j + 1}" for j in range(HELPER_ARGS))
    helper_args = ", ".join(f"g.f64(x + {j})" for j in range(HELPER_ARGS))
    fields = "\n".join(f"    c{j}: g.f64" for j in range(FIELDS))
    weighted = " + ".join(f"p.c{j} * {j + 1}" for j in range(FIELDS))
    return f'''\
import gompute_core as g

B = g.builtins


@g.raw_kernel(block={BLOCK})
def cpu_wide({", ".join(params)}):
    """Thirteen values live across a barrier (a slot per thread each), a shared array."""
    s = B.shared_array(g.f64, {BLOCK})
    lid = B.local_id(0)
    i = B.global_id(0)
    if i >= n:
        i = g.i64(n) - 1
{scaled}
    s[lid] = v0 - v{K - 1}
    B.barrier()
    if B.global_id(0) < n:
{stored}


def weigh({helper_params}):
    return {helper_sum}


@g.raw_kernel
def cpu_wide_helper(out: g.GlobalPtr[g.f64], n: g.u64):
    i = B.global_id(0)
    x = g.f64(i)
    if i < n:
        out[i] = weigh({helper_args})


@g.params
class ManyFields:
{fields}


def weighted(x, p):
    return x + {weighted}


def add(a, b):
    return a + b
'''


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The generated kernels, imported from a file."""
    path = Path(tmp_path_factory.mktemp("wide")) / "cpu_wide_kernels.py"
    path.write_text(_wide_source())
    spec = importlib.util.spec_from_file_location("cpu_wide_kernels", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("n", [1, 100, 1000])
def test_raw_kernel_with_40_parameters(wide: ModuleType, mode: str, n: int) -> None:
    rng = np.random.default_rng(n)
    a = [rng.standard_normal(n) for _ in range(K)]
    c = [float(rng.standard_normal()) for _ in range(K)]
    o = [np.full(n, np.nan) for _ in range(K)]
    blocks = -(-n // BLOCK)
    g.RawKernel(wide.cpu_wide, "cpu").launch(blocks, BLOCK, [*a, *c, *o, n])
    v = [a[j] * c[j] for j in range(K)]
    clamped = np.minimum(np.arange(blocks * BLOCK), n - 1)  # threads past n read a[n - 1]
    s = (a[0][clamped] * c[0] - a[K - 1][clamped] * c[K - 1]).reshape(blocks, BLOCK)
    for j in range(K):
        neighbour = np.roll(s, -(j + 1), axis=1).reshape(-1)[:n]
        np.testing.assert_array_equal(o[j], v[j] + neighbour)


def test_helper_with_32_parameters(wide: ModuleType) -> None:
    n = 300
    out = np.zeros(n)
    g.RawKernel(wide.cpu_wide_helper, "cpu").launch(-(-n // 64), 64, [out, n])
    x = np.arange(n, dtype=np.float64)
    want = np.zeros(n)
    for j in range(HELPER_ARGS):  # left to right, as the kernel adds
        want = want + (x + j) * (j + 1)
    np.testing.assert_array_equal(out, want)


def test_spec_params_with_35_fields(wide: ModuleType) -> None:
    """A map's function and a reduce's ``pre`` take the record as 35 leaves."""
    p = wide.ManyFields(**{f"c{j}": 0.5 * j - 3 for j in range(FIELDS)})
    x = np.random.default_rng(1).standard_normal(1000)
    want = x.copy()
    for j in range(FIELDS):  # left to right, as the function adds
        want = want + (0.5 * j - 3) * (j + 1)
    with g.Kernel(g.map("wide_map", g.f64, wide.ManyFields, wide.weighted), "cpu") as k:
        y = x.copy()
        k.run(y, p)
    np.testing.assert_array_equal(y, want)
    halves = np.arange(1000, dtype=np.float64)  # every sum exact, in any order
    spec = g.reduce("wide_sum", g.f64, wide.ManyFields, wide.add, 0.0, pre=wide.weighted)
    shift = sum((0.5 * j - 3) * (j + 1) for j in range(FIELDS))
    with g.Kernel(spec, "cpu") as k:
        assert k.run(halves, p) == (halves + shift).sum()

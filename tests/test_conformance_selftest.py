"""The conformance suite tested: its comparisons, its plugin, and that it catches broken backends.

A "mutant" backend (``conformance_mutant.py``, loaded with ``-p``) reuses the CPU backend's compiler
and device but corrupts results (the last output element's lowest bit, or
the last element of a reduction); the suite, run with pytester against it,
must fail exactly where the corruption shows. The same backend declares
``f64`` unsupported and no ``scatter`` kind, and the suite must deselect those
tests (not skip them by name). An "asyncmutant" with truly asynchronous
streams passes the buffers, launch, streams, devices and threads tiers, and
each of seven breakages of it (``GOMPUTE_MUTANT_BREAK``) fails the tier that
covers it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from gompute_core.testing._support import (
    assert_bits,
    sum_tolerance,
    ulp_distance,
    values,
    with_payload_nans,
)

pytest_plugins = ["pytester"]

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")


# ---------------------------------------------------------------- comparisons
def test_assert_bits_sees_signed_zero_and_payloads() -> None:
    """-0.0 differs from 0.0; computed NaNs match any NaN unless payloads are required."""
    with pytest.raises(pytest.fail.Exception, match="1 of 2"):
        assert_bits(np.array([1.0, 0.0], np.float32), np.array([1.0, -0.0], np.float32))
    a = with_payload_nans(np.zeros(4, np.float64), np.random.default_rng(1))
    b = np.full(4, np.nan)
    assert_bits(a, b)
    with pytest.raises(pytest.fail.Exception, match="differ"):
        assert_bits(a, b, nan_payload=True)


def test_ulp_distance() -> None:
    """Adjacent floats are 1 ulp apart across zero and at the extremes; NaN-to-NaN is 0."""
    x = np.array([1.0, 0.0, -0.0, np.finfo(np.float32).max, np.nan], np.float32)
    y = np.array([np.nextafter(np.float32(1), np.float32(2)), -0.0, np.float32(1e-45),
                  np.inf, np.nan], np.float32)
    assert ulp_distance(x, y).tolist() == [1.0, 0.0, 1.0, 1.0, 0.0]


def test_sum_tolerance_holds_for_naive_order() -> None:
    """Left-to-right f32 summation stays inside the documented bound."""
    v = values(np.float32, 5000, np.random.default_rng(2), lo=-10, hi=10)
    acc = np.float32(0)
    for x in v:
        acc = np.float32(acc + x)
    exact, bound = sum_tolerance(v)
    assert abs(float(acc) - exact) <= bound
    assert bound < 1e-2 * float(np.abs(v).sum())


def test_values_cover_edges() -> None:
    """Integer data starts with 0, 1, max, min; float data with +-0, +-inf and NaN on request."""
    ints = values(np.uint64, 10, np.random.default_rng(3))
    assert ints[:4].tolist() == [0, 1, 2 ** 64 - 1, 0]
    floats = values(np.float64, 14, np.random.default_rng(3), nan=True)
    assert np.signbit(floats[1]) and np.isinf(floats[4]) and np.isnan(floats).any()


def test_plugin_import_is_light() -> None:
    """The pytest11 module loads in every pytest run: it must not import numba or the registry."""
    code = ("import sys, gompute_core.testing.plugin; "
            "bad = [m for m in ('numba', 'gompute_core.plugins.manager', 'gompute_core.specs') "
            "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ---------------------------------------------------------------- the suite, run for real
# The suite runs in a subprocess: pytester's in-process mode unloads the modules a run
# imported, and numba cannot be imported twice in one process.
HERE = os.path.dirname(os.path.abspath(__file__))
MUTANT = os.path.join(HERE, "conformance_mutant.py")


def _run_suite(pytester: pytest.Pytester, *args: str, mutant: bool = True) -> pytest.RunResult:
    pytest.importorskip("gompute_cpu")
    shutil.copy(MUTANT, pytester.path / "conformance_mutant.py")
    shutil.copy(os.path.join(HERE, "pybackend.py"), pytester.path / "pybackend.py")
    plugin = ("-p", "conformance_mutant") if mutant else ()
    return pytester.runpytest_subprocess(*plugin, "--pyargs", "gompute_core.testing", "-p",
                                         "no:cacheprovider", *args, timeout=600)


def test_suite_catches_a_corrupting_backend(pytester: pytest.Pytester) -> None:
    """Every corrupted result fails; empty inputs (nothing to corrupt) pass."""
    result = _run_suite(pytester, "--gompute-backend=mutant", "-q",
                        "-k", "(test_map and map_i32-) or (test_reduce and sum_i64-)")
    outcomes = result.parseoutcomes()
    result.stdout.fnmatch_lines(["*FAILED*test_map?map_i32-1?*",
                                 "*FAILED*test_reduce?sum_i64-2^20+3?*"])
    assert outcomes.get("passed", 0) >= 2  # map_i32-0 and sum_i64-0/1
    assert outcomes.get("failed", 0) >= 10


def test_suite_deselects_what_the_backend_declares(pytester: pytest.Pytester) -> None:
    """Unsupported types (also inside params or bodies) and kinds are deselected."""
    result = _run_suite(pytester, "--gompute-backend=mutant", "--collect-only", "-q")
    text = result.stdout.str()
    assert "test_map[map_f32-1]" in text
    for gone in ("test_map[map_f64-1]", "test_scatter[", "test_weak_float_and_casts[casts_i32]",
                 "test_map[map_f16-1]", "test_float_ops[floatops_f64-"):
        assert gone not in text, gone
    assert "deselected" in text
    assert "unsupported types f16, f64" in text


def test_unknown_backend_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """A backend name nobody installed stops the run and lists what is installed."""
    result = _run_suite(pytester, "--gompute-backend=no_such_backend", "--collect-only",
                        "-k", "test_map and map_i32-1", mutant=False)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "no_such_backend" in result.stderr.str() + result.stdout.str()


# ---------------------------------------------------------------- each tier catches its breakage
TIER_TESTS = "test_buffers or test_launch_checks or test_streams or test_devices or test_threads"

CAUGHT_BY = {
    "": (),
    "unchecked": ("test_buffers.py::test_past_the_end_is_refused[upload_at]",
                  "test_buffers.py::test_use_after_free_is_refused[download]"),
    "offset": ("test_buffers.py::test_upload_at_and_download_at[333-1000]",),
    "copy_from": ("test_buffers.py::test_copy_from",),
    "addr0": ("test_buffers.py::test_device_addresses",),
    "query": ("test_launch_checks.py::test_query_does_not_report_pending_work_as_done",
              "test_streams.py::test_query_on_a_created_stream"),
    "stream": ("test_streams.py::test_assigned_stream_is_honoured",),
    "create_stream": ("test_streams.py::test_create_stream",),
}
"""Per breakage of the asyncmutant (none: the baseline), tests that must fail."""


@pytest.mark.parametrize("breakage", list(CAUGHT_BY), ids=lambda b: b or "baseline")
def test_each_tier_catches_its_breakage(pytester: pytest.Pytester,
                                        monkeypatch: pytest.MonkeyPatch, breakage: str) -> None:
    """The unbroken asyncmutant passes the tiers; each breakage fails where it should."""
    monkeypatch.setenv("GOMPUTE_MUTANT_BREAK", breakage)
    result = _run_suite(pytester, "--gompute-backend=asyncmutant", "-q", "-rf",
                        "-k", TIER_TESTS)
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) >= 30, result.stdout.str()[-3000:]
    if not breakage:
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
        return
    text = result.stdout.str()
    for test in CAUGHT_BY[breakage]:
        assert re.search(rf"^FAILED \S*{re.escape(test)}", text, re.M), \
            f"{breakage}: {test} did not fail:\n{text[-3000:]}"

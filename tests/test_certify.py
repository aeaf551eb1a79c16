"""``gompute certify``: identity, a table per tier, a verdict, the exit code, JUnit XML.

Run on a slice of the suite (``-k``) against the CPU backend, and against an
installed-but-unavailable backend; the whole suite runs in ``scripts/test.sh``.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gompute_core.certify import Tally, verdict

pytest.importorskip("gompute_cpu")


def _certify(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gompute_core.cli", "certify", *args],
                          capture_output=True, text=True, timeout=600)


def test_certify_cpu_slice(tmp_path: Path) -> None:
    """A passing slice: identity lines, tier rows, the fewer-capabilities verdict (the CPU
    declares no f16 and no graphs), exit 0, and a JUnit report."""
    xml = tmp_path / "cpu.xml"
    done = _certify("cpu", "--junit-xml", str(xml), "--", "-k",
                    "test_devices or test_streams or test_runtime or map_f16")
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    for line in ("backend:      cpu", "distribution: entry point cpu", "compiler:     numba",
                 "device 0:"):
        assert line in out
    assert "devices" in out and "streams" in out and "runtime" in out
    assert "CERTIFIED FOR FEWER CAPABILITIES: without types f16; capabilities graphs" in out
    suites = ET.parse(xml).getroot()
    assert int(suites.find("testsuite").get("tests")) >= 3  # type: ignore[union-attr]


def test_unknown_backend() -> None:
    """A name nobody installed: exit 2 and the installed ones listed."""
    done = _certify("no_such_backend")
    assert done.returncode == 2 and "installed:" in done.stdout


def test_verdicts() -> None:
    """Failures and skips are never certified; n/a only by declaration."""
    t = Tally()
    t.add("kinds", "passed")
    assert verdict(t) == (True, "CERTIFIED")
    t.add("buffers", "n/a")
    t.missing_capabilities.add("events")
    ok, sentence = verdict(t)
    assert ok and "FEWER" in sentence and "events" in sentence
    t.add("launch", "skipped")
    assert not verdict(t)[0]
    t.add("launch", "failed")
    assert verdict(t) == (False, "NOT CERTIFIED: 1 test(s) failed")
    assert not verdict(Tally())[0]

"""Run the HIP renderer's output on an NVIDIA GPU: the whole conformance suite, HIP source
compiled by NVRTC behind a small name-mapping header, launched by the CUDA backend.

No AMD GPU is available to this project; this executes the HIP code's semantics
(indexing, grid-stride loops, the reduce tree, the params layout, f16) on real
hardware against the conformance suite's NumPy/Python oracles.

Usage (on the GPU machine, from the repository root, gompute-core/-cuda installed):

    python bench/hip_on_nvrtc.py

Prints a PASS/FAIL table per conformance test, writes it to
``bench/results/hip_on_nvrtc-<date>-<device>.txt`` and exits non-zero when any
test failed or no CUDA device is available.
"""

from __future__ import annotations

import datetime
import re
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
try:
    import gompute_hip  # noqa: F401
except ImportError:  # run from a checkout where gompute-hip is not installed
    sys.path.insert(0, str(ROOT / "backends" / "hip"))
sys.path.insert(0, str(ROOT / "tests"))  # the harness lives with the tests, not the package

from hip_on_cuda.on_nvrtc import NAME, register  # noqa: E402

from gompute_core.plugins import manager  # noqa: E402


class Table:
    """A pytest plugin tallying outcomes per conformance test function."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.failures: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Count the call phase, a skip at setup, and any failing phase of every test."""
        if not (report.when == "call" or report.failed
                or (report.skipped and report.when == "setup")):
            return
        name = report.nodeid.split("::")[-1].split("[")[0]
        outcome = "skipped" if report.skipped else report.outcome
        self.rows[name][outcome] += 1
        if report.failed:
            self.failures.append(report.nodeid)

    def render(self, header: str) -> str:
        """The table: one row per test function, then the failing test ids."""
        lines = [header, f"{'test':40} {'passed':>7} {'failed':>7} {'skipped':>8}  result"]
        for name in sorted(self.rows):
            r = self.rows[name]
            verdict = "FAIL" if r["failed"] else ("PASS" if r["passed"] else "SKIP")
            lines.append(f"{name:40} {r['passed']:7} {r['failed']:7} {r['skipped']:8}  {verdict}")
        total = {k: sum(r[k] for r in self.rows.values()) for k in ("passed", "failed", "skipped")}
        lines.append(f"{'TOTAL':40} {total['passed']:7} {total['failed']:7} "
                     f"{total['skipped']:8}  {'FAIL' if total['failed'] else 'PASS'}")
        lines += [f"FAILED {f}" for f in self.failures]
        return "\n".join(lines) + "\n"


def main() -> int:
    """Run the suite against ``hip_nvrtc``; 0 only when everything ran and passed."""
    register()
    avail = manager.probe(NAME)
    if not avail.available:
        print(f"hip_on_nvrtc: no CUDA device to run on: {avail.reason}", file=sys.stderr)
        return 2
    device = avail.devices[0]
    table = Table()
    code = pytest.main(["-q", "-p", "no:cacheprovider", "--pyargs", "gompute_core.testing",
                        f"--gompute-backend={NAME}"], plugins=[table])
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    header = (f"HIP-rendered conformance kernels compiled by {avail.compiler} and run on "
              f"{device.name} ({device.arch}), {stamp}; pytest exit code {int(code)}")
    text = table.render(header)
    print(text)
    safe = re.sub(r"[^A-Za-z0-9]+", "-", device.name).strip("-")
    out = ROOT / "bench" / "results" / f"hip_on_nvrtc-{stamp}-{safe}.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"written to {out}")
    passed = sum(r["passed"] for r in table.rows.values())
    return 0 if int(code) == 0 and not table.failures and passed else 1


if __name__ == "__main__":
    sys.exit(main())

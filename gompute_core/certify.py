"""``gompute certify BACKEND``: run the conformance suite against one backend and judge it.

Prints the backend's identity (distribution, version, plugin API, compiler,
device), one row per tier (passed, failed, skipped, not applicable by
declared capability) and a verdict:

* **certified**: every test ran and passed;
* **certified for fewer capabilities**: every test that ran passed, and the
  tests left out were left out only because the backend declares it lacks a
  kind, a type or a device capability (named in the verdict);
* **not certified**: a test failed or errored, a test was skipped (the
  backend is unavailable here, say), or nothing ran.

The exit code is 0 only for the first two. ``--junit-xml`` writes pytest's
JUnit report for CI. The suite runs once, in this process.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from .plugins import manager

OUTCOMES = ("passed", "failed", "skipped", "n/a")


@dataclass
class Tally:
    """Results per tier, and why tests were left out."""

    counts: dict[str, Counter[str]] = field(default_factory=dict)
    missing_kinds: set[str] = field(default_factory=set)
    missing_types: set[str] = field(default_factory=set)
    missing_capabilities: set[str] = field(default_factory=set)
    failures: list[str] = field(default_factory=list)
    skip_reasons: set[str] = field(default_factory=set)

    def add(self, tier: str, outcome: str) -> None:
        """Count one test of ``tier``."""
        self.counts.setdefault(tier, Counter())[outcome] += 1

    def total(self, outcome: str) -> int:
        """Tests with ``outcome`` over every tier."""
        return sum(c[outcome] for c in self.counts.values())


class Collector:
    """A pytest plugin recording each conformance test's tier and outcome."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.tally = Tally()
        self._tiers: dict[str, str] = {}
        self._outcome: dict[str, str] = {}
        self._declared: frozenset[str] | None = None

    def pytest_deselected(self, items: Sequence[Any]) -> None:
        """Conformance tests left out for what the backend declares are not applicable
        (record what they needed); tests a ``-k`` or ``-m`` left out are not counted."""
        from .kinds.support import supported_kinds
        from .testing.plugin import _capabilities, _requirements, tier_of

        info = manager.record(self.backend).info
        if info is None:
            return
        if self._declared is None:
            self._declared = _capabilities(self.backend) or frozenset()
        for item in items:
            if item.get_closest_marker("gompute") is None:
                continue
            kinds, types, caps = _requirements(item)
            kinds -= set(supported_kinds(info))
            types &= set(info.unsupported_types)
            caps -= self._declared
            if kinds or types or caps:
                self.tally.add(tier_of(item), "n/a")
                self.tally.missing_kinds |= kinds
                self.tally.missing_types |= types
                self.tally.missing_capabilities |= caps

    def pytest_collection_finish(self, session: Any) -> None:
        """Remember the tier of every test that will run."""
        from .testing.plugin import tier_of

        for item in session.items:
            if item.get_closest_marker("gompute") is not None:
                self._tiers[item.nodeid] = tier_of(item)

    def pytest_runtest_logreport(self, report: Any) -> None:
        """Fold setup/call/teardown reports into one outcome per test."""
        if report.nodeid not in self._tiers:
            return
        if report.failed:
            self._outcome[report.nodeid] = "failed"
            self.tally.failures.append(report.nodeid)
        elif report.skipped and self._outcome.get(report.nodeid) != "failed":
            self._outcome[report.nodeid] = "skipped"
            reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else ""
            self.tally.skip_reasons.add(str(reason))
        elif report.when == "call" and report.passed:
            self._outcome.setdefault(report.nodeid, "passed")

    def finish(self) -> Tally:
        """The tally once the session is over."""
        for nodeid, tier in self._tiers.items():
            self.tally.add(tier, self._outcome.get(nodeid, "failed"))
        return self.tally


def identity_lines(backend: str) -> list[str]:
    """What is being certified: distribution, version, plugin API, compiler, devices."""
    rec = manager.record(backend)
    lines = [f"backend:      {backend}", f"distribution: {rec.source}"]
    if rec.info is not None:
        lines.append(f"version:      {rec.info.version} (plugin API {rec.info.api_version}, "
                     f"priority {rec.info.priority})")
    if not rec.loaded:
        lines.append(f"refused:      {rec.error}")
        return lines
    avail = manager.probe(backend)
    lines.append(f"compiler:     {avail.compiler or '-'}")
    if not avail.available:
        lines.append(f"unavailable:  {avail.reason}")
    for d in avail.devices:
        lines.append(f"device {d.ordinal}:     {d.name} (arch {d.arch})")
    return lines


def verdict(tally: Tally) -> tuple[bool, str]:
    """``(certified, sentence)`` for a finished run."""
    failed, skipped = tally.total("failed"), tally.total("skipped")
    passed, na = tally.total("passed"), tally.total("n/a")
    if failed:
        return False, f"NOT CERTIFIED: {failed} test(s) failed"
    if skipped:
        reasons = "; ".join(sorted(tally.skip_reasons))[:500]
        return False, f"NOT CERTIFIED: {skipped} test(s) skipped ({reasons})"
    if not passed:
        return False, "NOT CERTIFIED: no conformance test ran"
    if not na:
        return True, "CERTIFIED"
    fewer = []
    if tally.missing_kinds:
        fewer.append("kinds " + ", ".join(sorted(tally.missing_kinds)))
    if tally.missing_types:
        fewer.append("types " + ", ".join(sorted(tally.missing_types)))
    if tally.missing_capabilities:
        fewer.append("capabilities " + ", ".join(sorted(tally.missing_capabilities)))
    return True, ("CERTIFIED FOR FEWER CAPABILITIES: without " + "; ".join(fewer)
                  + f" ({na} test(s) not applicable)")


def table(tally: Tally) -> list[str]:
    """One row per tier (in :data:`~gompute_core.testing.plugin.TIERS` order), and a total."""
    from .testing.plugin import TIERS

    tiers = [t for t in TIERS if t in tally.counts] + \
        sorted(t for t in tally.counts if t not in TIERS)
    rows = [f"{'tier':<10}" + "".join(f"{o:>9}" for o in OUTCOMES)]
    for tier in tiers:
        rows.append(f"{tier:<10}" + "".join(f"{tally.counts[tier][o]:>9}" for o in OUTCOMES))
    rows.append(f"{'total':<10}" + "".join(f"{tally.total(o):>9}" for o in OUTCOMES))
    return rows


def certify(backend: str, *, junit_xml: str | None = None, pytest_args: Sequence[str] = (),
            out: TextIO = sys.stdout) -> int:
    """Run the suite against ``backend``, print identity, tiers and verdict; the exit code
    (0 only when certified)."""
    import pytest

    from .errors import UnsupportedBackend

    try:
        lines = identity_lines(backend)
    except UnsupportedBackend as exc:
        print(f"gompute certify: {exc}", file=out)
        return 2
    print("\n".join(lines), file=out, flush=True)
    collector = Collector(backend)
    args = ["--pyargs", "gompute_core.testing", f"--gompute-backend={backend}",
            "-p", "no:cacheprovider", "-q", "--no-header", "-rfE",
            "-W", "ignore::pytest.PytestAssertRewriteWarning"]
    if junit_xml:
        args.append(f"--junit-xml={junit_xml}")
    code = pytest.main([*args, *pytest_args], plugins=[collector])
    tally = collector.finish()
    print("", file=out)
    print("\n".join(table(tally)), file=out)
    ok, sentence = verdict(tally)
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        ok, sentence = False, f"NOT CERTIFIED: the suite did not run to the end (pytest {code})"
    print(f"\n{backend}: {sentence}", file=out)
    return 0 if ok else 1

"""pytest11 entry point of the Gompute conformance suite.

Loaded in every pytest run, so it stays import-light: pytest only at import
time; the backend registry is touched only when a collected test carries the
``gompute`` marker (i.e. when the conformance suite itself is collected).

What it adds:

* ``--gompute-backend=NAME`` (default ``cpu``): the backend under test.
* the ``gompute(kind=..., types=..., capability=...)`` marker. Every
  conformance test carries it; after collection, tests whose ``types``
  include one of the backend's ``BackendInfo.unsupported_types``, whose
  ``kind`` is not in ``BackendInfo.kinds`` or whose ``capability`` device 0
  does not declare (``Device.capabilities``) are *deselected* (reported in
  the summary), never skipped by name. Each test module names its *tier*
  (module attribute ``TIER``, default ``"kinds"``): :func:`tier_of`, which
  ``gompute certify`` tabulates. When the backend is installed but unavailable here, every
  conformance test is skipped with the probe's reason; an unknown backend
  name is a usage error listing the installed ones.
* fixtures: ``gompute_backend`` (the name), ``gompute_info`` (its
  ``BackendInfo``), ``gompute_kernels`` (a session cache of open
  ``g.Kernel`` handles, one per spec, closed at the end) and
  ``gompute_long_work`` (a launch sized to take a while on the backend).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator
from typing import Any

import pytest

# the suite's helper modules assert with messages; let pytest rewrite them for rich diffs
pytest.register_assert_rewrite("gompute_core.testing._support", "gompute_core.testing._reduce")

_HERE = os.path.dirname(os.path.abspath(__file__))
_SUMMARY = pytest.StashKey[list[str]]()
_FUZZ_SEED = pytest.StashKey[int]()

FUZZ_COUNT = 300
"""Random kernels per run of the fuzz tier unless ``--gompute-fuzz-count`` says otherwise."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--gompute-backend=NAME`` (default: ``cpu``)."""
    parser.addoption(
        "--gompute-backend", action="store", default="cpu",
        help="backend the Gompute conformance suite runs against (default: cpu)",
    )
    parser.addoption(
        "--gompute-fuzz-count", action="store", type=int, default=FUZZ_COUNT,
        help=f"random kernels the differential fuzz tier runs (default: {FUZZ_COUNT})",
    )
    parser.addoption(
        "--gompute-fuzz-seed", action="store", type=int, default=None,
        help="seed of the fuzz tier's kernels (default: a fresh one, printed in the header)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``gompute`` marker."""
    config.addinivalue_line(
        "markers",
        "gompute(kind=None, types=(), capability=None): a Gompute conformance test for spec "
        "kind `kind` over scalar types `types` (short names) needing device capability "
        "`capability`; deselected when the backend does not declare them",
    )


def fuzz_seed(config: pytest.Config) -> int:
    """The fuzz tier's seed: ``--gompute-fuzz-seed``, else one drawn once per run."""
    if _FUZZ_SEED not in config.stash:
        given = config.getoption("gompute_fuzz_seed", None)
        config.stash[_FUZZ_SEED] = int.from_bytes(os.urandom(4), "little") if given is None \
            else int(given)
    return config.stash[_FUZZ_SEED]


def pytest_report_header(config: pytest.Config) -> str:
    """Print the fuzz seed, so that any run can be repeated."""
    return (f"gompute fuzz: --gompute-fuzz-seed={fuzz_seed(config)} "
            f"--gompute-fuzz-count={config.getoption('gompute_fuzz_count')}")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize the fuzz tier's ``fuzz_index`` over ``--gompute-fuzz-count`` kernels."""
    if "fuzz_index" in metafunc.fixturenames:
        count = metafunc.config.getoption("gompute_fuzz_count")
        metafunc.parametrize("fuzz_index", range(count), ids=lambda k: f"kernel{k}")


@pytest.fixture(scope="session")
def gompute_fuzz_seed(request: pytest.FixtureRequest) -> int:
    """The fuzz tier's seed (``--gompute-fuzz-seed`` or a fresh one, printed in the header)."""
    return fuzz_seed(request.config)


def pytest_collect_file(file_path: Any, parent: pytest.Collector) -> pytest.Module | None:
    """Collect the suite's ``test_*.py`` modules even where ``python_files`` would not."""
    path = str(file_path)
    name = os.path.basename(path)
    if os.path.dirname(os.path.abspath(path)) != _HERE or not name.startswith("test_"):
        return None
    if not name.endswith(".py"):
        return None
    patterns = parent.config.getini("python_files")
    if any(fnmatch.fnmatch(name, pat) for pat in patterns):
        return None  # pytest's own python plugin collects it
    return pytest.Module.from_parent(parent, path=file_path)


TIERS = ("kinds", "buffers", "launch", "streams", "runtime", "compile", "devices", "threads",
         "names", "raw", "checked", "scan")
"""The conformance tiers, in the order ``gompute certify`` reports them."""


def tier_of(item: pytest.Item) -> str:
    """The tier of a collected conformance test (its module's ``TIER``)."""
    module = getattr(item, "module", None)
    return str(getattr(module, "TIER", "kinds"))


def _requirements(item: pytest.Item) -> tuple[set[str], set[str], set[str]]:
    """The kinds, type names and capabilities the ``gompute`` markers of ``item`` declare."""
    kinds: set[str] = set()
    types: set[str] = set()
    capabilities: set[str] = set()
    for mark in item.iter_markers("gompute"):
        kind = mark.kwargs.get("kind")
        if kind:
            kinds.add(kind)
        types.update(mark.kwargs.get("types", ()))
        capability = mark.kwargs.get("capability")
        if capability:
            capabilities.add(capability)
    return kinds, types, capabilities


def _capabilities(name: str) -> frozenset[str] | None:
    """What device 0 of ``name`` declares; None when it cannot be opened (the tests then
    fail or skip on their own, with the reason)."""
    from gompute_core.plugins import manager

    try:
        return frozenset(manager.open_device(name, 0).capabilities)
    except Exception:
        return None


def _backend_record(name: str) -> Any:
    """The registry record of ``name``; a usage error when no such backend is installed."""
    from gompute_core.errors import UnsupportedBackend
    from gompute_core.plugins import manager

    try:
        return manager.record(name)
    except UnsupportedBackend as exc:
        raise pytest.UsageError(f"--gompute-backend={name}: {exc}") from None


def pytest_collection_modifyitems(config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    """Deselect what the backend declares unsupported; skip all when it is unavailable."""
    suite = [it for it in items if it.get_closest_marker("gompute") is not None]
    if not suite:
        return
    name = config.getoption("gompute_backend")
    rec = _backend_record(name)
    summary: list[str] = []
    config.stash[_SUMMARY] = summary
    if not rec.loaded:
        reason = f"gompute backend {name!r} is not usable: {rec.error}"
        for it in suite:
            it.add_marker(pytest.mark.skip(reason=reason))
        summary.append(reason)
        return
    from gompute_core.kinds.support import supported_kinds

    info = rec.info
    unsupported = set(info.unsupported_types)
    kinds = set(supported_kinds(info))
    available = rec.availability.available
    declared = _capabilities(name) if available else frozenset()
    deselected: list[pytest.Item] = []
    for it in suite:
        need_kinds, need_types, need_caps = _requirements(it)
        if need_types & unsupported or need_kinds - kinds or \
                (declared is not None and need_caps - declared):
            deselected.append(it)
    if deselected:
        gone = {id(it) for it in deselected}
        items[:] = [it for it in items if id(it) not in gone]
        config.hook.pytest_deselected(items=deselected)
    summary.append(
        f"gompute conformance: backend {name!r} {info.version} (api {info.api_version}); "
        f"kinds {', '.join(supported_kinds(info))}; unsupported types "
        f"{', '.join(info.unsupported_types) or 'none'}; capabilities "
        f"{', '.join(sorted(declared or ())) or 'none'}; {len(deselected)} test(s) deselected")
    avail = rec.availability
    if not avail.available:
        reason = f"gompute backend {name!r} is unavailable here: {avail.reason}"
        for it in suite:
            it.add_marker(pytest.mark.skip(reason=reason))
        summary.append(reason)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int,
                            config: pytest.Config) -> None:
    """Say which backend was certified and what was deselected for it."""
    for line in config.stash.get(_SUMMARY, []):
        terminalreporter.write_line(line)
    if _FUZZ_SEED in config.stash:
        terminalreporter.write_line(
            f"gompute fuzz: --gompute-fuzz-seed={config.stash[_FUZZ_SEED]} "
            f"--gompute-fuzz-count={config.getoption('gompute_fuzz_count')}")


@pytest.fixture(scope="session")
def gompute_backend(request: pytest.FixtureRequest) -> str:
    """The name of the backend under test (``--gompute-backend``)."""
    return str(request.config.getoption("gompute_backend"))


@pytest.fixture(scope="session")
def gompute_info(gompute_backend: str) -> Any:
    """The backend's :class:`~gompute_core.plugins.records.BackendInfo`."""
    from gompute_core.plugins import manager

    return manager.require(gompute_backend).info


class KernelCache:
    """Open ``g.Kernel`` handles of one backend, one per spec name (compiled once)."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self._kernels: dict[str, Any] = {}

    def get(self, spec: Any) -> Any:
        """The open handle of ``spec`` (a Spec, or a catalogue Entry) on the backend."""
        spec = spec.spec() if hasattr(spec, "spec") and callable(spec.spec) else spec
        k = self._kernels.get(spec.name)
        if k is None:
            import gompute_core as g

            k = g.Kernel(spec, self.backend)
            self._kernels[spec.name] = k
        return k

    def close(self) -> None:
        """Close every handle."""
        kernels, self._kernels = list(self._kernels.values()), {}
        for k in kernels:
            k.close()


@pytest.fixture(scope="session")
def gompute_kernels(gompute_backend: str) -> Iterator[KernelCache]:
    """A session cache of open kernel handles on the backend under test."""
    cache = KernelCache(gompute_backend)
    yield cache
    cache.close()


@pytest.fixture(scope="session")
def gompute_long_work(gompute_backend: str) -> Any:
    """A launch that takes a while on the backend under test (sized once per session; see
    :mod:`gompute_core.testing._tiers`)."""
    from gompute_core.testing._tiers import long_work

    return long_work(gompute_backend)

"""The backend registry: in-process plugins, entry points, API version, probe, ordering."""

from __future__ import annotations

import importlib.metadata as metadata
import threading
import time
from collections.abc import Iterator

import pytest
from pybackend import PyBackend, PyDevice

from gompute_core.errors import BackendUnavailable, NoDevice, UnsupportedBackend
from gompute_core.plugins import manager
from gompute_core.plugins.records import PLUGIN_API_VERSION


@pytest.fixture()
def registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An empty registry (no entry points) for the test; rediscovered afterwards."""
    monkeypatch.delenv(manager.ENV_BACKENDS, raising=False)
    with manager.isolated():
        yield


def test_register_and_describe(registry: None) -> None:
    rec = manager.register(PyBackend("alpha"))
    assert rec.loaded and rec.error == ""
    assert rec.info is not None and rec.info.name == "alpha"
    assert rec.info.api_version == PLUGIN_API_VERSION
    assert [r.name for r in manager.backends()] == ["alpha"]
    assert manager.get_plugin_manager().is_registered(rec.plugin)


def test_probe_is_cached_per_process(registry: None) -> None:
    plugin = PyBackend("alpha")
    manager.register(plugin)
    first = manager.probe("alpha")
    second = manager.probe("alpha")
    assert first.available and first is second
    assert plugin.probes == 1


def test_devices_are_cached_per_backend_and_ordinal(registry: None) -> None:
    manager.register(PyBackend("alpha"))
    d0 = manager.open_device("alpha", 0)
    assert isinstance(d0, PyDevice)
    assert manager.open_device("alpha", 0) is d0
    with pytest.raises(NoDevice, match="ordinal 3"):
        manager.open_device("alpha", 3)
    manager.close_devices()
    assert d0.closed
    assert manager.open_device("alpha", 0) is not d0


def test_unknown_backend_lists_installed(registry: None) -> None:
    manager.register(PyBackend("alpha"))
    manager.register(PyBackend("beta"))
    with pytest.raises(UnsupportedBackend, match="'gamma'.*alpha, beta"):
        manager.probe("gamma")
    with pytest.raises(UnsupportedBackend):
        manager.open_device("gamma", 0)


def test_unavailable_backend_reports_reason(registry: None) -> None:
    manager.register(PyBackend("alpha", available=False, reason="libpy.so.1 not found"))
    avail = manager.probe("alpha")
    assert not avail.available and avail.reason == "libpy.so.1 not found"
    with pytest.raises(BackendUnavailable, match="libpy.so.1 not found"):
        manager.open_device("alpha", 0)


def test_probe_that_raises_is_unavailable_not_fatal(registry: None) -> None:
    manager.register(PyBackend("alpha", probe_error="driver exploded"))
    manager.register(PyBackend("beta"))
    avail = manager.probe("alpha")
    assert not avail.available
    assert "RuntimeError: driver exploded" in avail.reason
    assert manager.probe("beta").available


def test_api_version_mismatch_is_refused(registry: None) -> None:
    plugin = PyBackend("future", api_version=PLUGIN_API_VERSION + 1)
    rec = manager.register(plugin)
    assert not rec.loaded
    assert f"plugin API version {PLUGIN_API_VERSION + 1}" in rec.error
    assert not manager.get_plugin_manager().is_registered(plugin)
    assert "future" not in manager.ordered_backends()
    assert manager.probe("future").reason == rec.error
    with pytest.raises(BackendUnavailable, match="API version"):
        manager.open_device("future", 0)


def test_broken_entry_point_is_recorded_and_not_fatal(registry: None) -> None:
    manager.register(PyBackend("alpha"))
    ep = metadata.EntryPoint(name="broken", value="gompute_no_such_module_xyz:plugin",
                             group=manager.ENTRY_POINT_GROUP)
    rec = manager.load_entry_point(ep)
    assert not rec.loaded and rec.name == "broken"
    assert rec.error == ("import failed: ModuleNotFoundError: No module named "
                         "'gompute_no_such_module_xyz'")
    assert {r.name for r in manager.backends()} == {"alpha", "broken"}
    assert manager.probe("alpha").available
    assert not manager.probe("broken").available


def test_entry_point_loads_a_real_plugin_object(registry: None) -> None:
    ep = metadata.EntryPoint(name="pyep", value="test_plugins:ENTRY_PLUGIN",
                             group=manager.ENTRY_POINT_GROUP)
    rec = manager.load_entry_point(ep)
    assert rec.loaded and rec.name == "pyep"
    assert "entry point pyep" in rec.source


ENTRY_PLUGIN = PyBackend("pyep")


def test_duplicate_backend_name_is_refused(registry: None) -> None:
    manager.register(PyBackend("alpha"))
    second = manager.register(PyBackend("alpha"))
    assert "already provided" in second.error
    assert manager.record("alpha").loaded


def test_priority_orders_backends(registry: None) -> None:
    manager.register(PyBackend("low", priority=10))
    manager.register(PyBackend("high", priority=300))
    manager.register(PyBackend("mid", priority=100))
    assert manager.ordered_backends() == ["high", "mid", "low"]


def test_env_restricts_and_orders(registry: None, monkeypatch: pytest.MonkeyPatch) -> None:
    manager.register(PyBackend("low", priority=10))
    manager.register(PyBackend("high", priority=300))
    manager.register(PyBackend("mid", priority=100))
    monkeypatch.setenv(manager.ENV_BACKENDS, "low, high,absent")
    assert manager.ordered_backends() == ["low", "high"]
    avail = manager.probe("mid")
    assert not avail.available and "GOMPUTE_BACKENDS" in avail.reason
    with pytest.raises(BackendUnavailable, match="GOMPUTE_BACKENDS"):
        manager.open_device("mid", 0)


def test_plugin_without_info_hook_is_refused(registry: None) -> None:
    class NoInfo:
        @manager.hookimpl
        def gompute_probe(self) -> None:
            return None

    rec = manager.register(NoInfo(), name="noinfo")
    assert not rec.loaded and "gompute_backend_info" in rec.error


def test_isolated_restores_the_previous_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(manager.ENV_BACKENDS, raising=False)
    outer = manager.backends()
    with manager.isolated():
        assert manager.backends() == []
        manager.register(PyBackend("inner"))
        device = manager.open_device("inner", 0)
    assert device.closed
    assert manager.backends() == outer
    assert "inner" not in [r.name for r in manager.backends()]


def test_threads_wait_for_the_first_discovery(monkeypatch: pytest.MonkeyPatch) -> None:
    """Threads that need the registry while another thread discovers the entry points
    wait for the discovery and see every installed backend (they once saw a registry
    with none yet: "no installed backend is called 'cpu'")."""
    monkeypatch.delenv(manager.ENV_BACKENDS, raising=False)
    load = manager.load_entry_point

    def slow_load(ep: metadata.EntryPoint) -> object:
        time.sleep(0.05)  # widen the window in which other threads arrive
        return load(ep)

    monkeypatch.setattr(manager, "load_entry_point", slow_load)
    names = sorted(ep.name for ep in metadata.entry_points(group=manager.ENTRY_POINT_GROUP))
    assert names, "no backend installed as an entry point"
    start, seen, errors = threading.Barrier(8), [], []

    def look() -> None:
        start.wait()
        try:
            seen.append(sorted(r.name for r in manager.backends()))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    with manager.isolated(discover=True):
        threads = [threading.Thread(target=look) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert not errors and len(seen) == 8
    assert all(s == seen[0] for s in seen) and set(names) <= set(seen[0]), seen

"""Tier ``devices``: ``NoDevice`` for a bad ordinal; a probe that never raises."""

from __future__ import annotations

import pytest

import gompute_core as g

from ._support import mark

TIER = "devices"
pytestmark = mark()


def test_bad_ordinal_is_no_device(gompute_backend: str) -> None:
    """The plugin's own ``gompute_device`` refuses an ordinal past its devices."""
    from gompute_core.plugins import manager

    count = len(manager.probe(gompute_backend).devices)
    with pytest.raises(g.NoDevice):
        manager.record(gompute_backend).call("gompute_device", ordinal=count + 1000)


def test_probe_never_raises(gompute_backend: str) -> None:
    """The plugin's own ``gompute_probe``, called again, answers an ``Availability``
    naming the backend, with devices when available."""
    from gompute_core.plugins import manager
    from gompute_core.plugins.records import Availability

    for _ in range(2):
        avail = manager.record(gompute_backend).call("gompute_probe")
        assert isinstance(avail, Availability)
        assert avail.backend == gompute_backend
        assert avail.available and avail.devices or avail.reason


def test_device_describes_itself(gompute_backend: str) -> None:
    """Device 0 has the probed arch, its backend's name and only known capabilities."""
    from gompute_core.backend import CAPABILITIES
    from gompute_core.plugins import manager

    device = manager.open_device(gompute_backend, 0)
    assert device.backend == gompute_backend and device.ordinal == 0
    assert device.arch == manager.probe(gompute_backend).devices[0].arch
    assert set(device.capabilities) <= CAPABILITIES, set(device.capabilities) - CAPABILITIES

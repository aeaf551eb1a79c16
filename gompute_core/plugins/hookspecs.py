"""Hook specifications of the ``gompute`` plugin system (pluggy project ``"gompute"``).

A backend is a distribution exposing a module (or object) under the
entry-point group ``gompute.backends`` whose functions are marked with
``gompute_core.hookimpl``. The registry calls each plugin's OWN
implementations directly (never a broadcast through ``pm.hook``): a plugin
answers only for the backend it describes, and one plugin raising or
misbehaving cannot affect another. ``gompute_backend_info``,
``gompute_probe``, ``gompute_compiler`` and ``gompute_device`` are all
required. Plugin API version 3 (:data:`~gompute_core.plugins.records.PLUGIN_API_VERSION`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

from .records import Availability, BackendInfo

if TYPE_CHECKING:
    from ..backend.compiler import Compiler
    from ..backend.device import Device

hookspec = pluggy.HookspecMarker("gompute")


@hookspec
def gompute_backend_info() -> BackendInfo:
    """Describe the backend this plugin provides.

    Called once per plugin when the registry is built. Must be cheap and must
    not touch a driver. ``api_version`` is a number the plugin states (never
    the core's ``PLUGIN_API_VERSION`` read back). The core refuses a plugin
    whose ``api_version`` or hook shapes (:mod:`~gompute_core.plugins.apishape`)
    are another API's and reports why in ``gompute info``.
    """


@hookspec
def gompute_probe() -> Availability:
    """Say whether the backend can run here, and on which devices.

    Should never raise (the registry turns an exception into an
    unavailability naming it): a missing library or driver is an
    ``Availability(available=False, reason=...)`` naming what was looked for
    (``"libcuda.so.1 not found"``, ``"no AMD GPU (hipInit: 100)"``). Cached by
    the core per process.
    """


@hookspec
def gompute_compiler() -> Compiler:
    """Return the backend's :class:`~gompute_core.backend.compiler.Compiler`.

    Called once per process; the core renders, keys and caches through it.
    Must work without a device (compiling for a named ``arch``).
    """


@hookspec
def gompute_device(ordinal: int) -> Device:
    """Open and return the backend's :class:`~gompute_core.backend.device.Device` ``ordinal``.

    Called once per ordinal per process; the core caches the device. Raises
    ``BackendUnavailable`` or ``NoDevice`` with the reason when it cannot be
    opened.
    """

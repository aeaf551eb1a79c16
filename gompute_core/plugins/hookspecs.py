"""Hook specifications of the ``gompute`` plugin system (pluggy project ``"gompute"``).

A backend is a distribution exposing a module (or object) under the
entry-point group ``gompute.backends`` whose functions are marked with
``gompute_core.hookimpl``. Every hook receives the backend name it is asked
about; a plugin answers only for its own backend and returns ``None``
otherwise, so ``firstresult`` hooks stop at the right plugin.
"""

from __future__ import annotations

import pluggy

from .records import Artifact, Availability, BackendInfo, CompileRequest

hookspec = pluggy.HookspecMarker("gompute")


@hookspec
def gompute_backend_info() -> BackendInfo:
    """Describe the backend this plugin provides.

    Called once per plugin when the registry is built; all results are
    collected. Must be cheap and must not touch a driver. The core refuses a
    plugin whose ``api_version`` differs from ``PLUGIN_API_VERSION`` and
    reports why in ``gompute info``.
    """


@hookspec(firstresult=True)
def gompute_probe(backend: str) -> Availability | None:
    """Say whether ``backend`` can run here, and on which devices.

    Stops at the first non-None result. Never raises: a missing library or
    driver is an ``Availability(available=False, reason=...)`` naming what was
    looked for (``"libcuda.so.1 not found"``, ``"no AMD GPU (hipInit: 100)"``).
    Cached by the core per process.
    """


@hookspec(firstresult=True)
def gompute_compile(request: CompileRequest) -> Artifact | None:
    """Render and compile ``request.kernel`` for ``request.arch``.

    Stops at the first non-None result. Works without a device when ``arch``
    is given. Raises ``CompileFailed`` (with the compiler log) when generated
    code is rejected, ``InvalidArgument`` for an unknown ``arch``,
    ``BackendUnavailable`` when no compiler is present.
    """


@hookspec(firstresult=True)
def gompute_device(backend: str, ordinal: int) -> object | None:
    """Return the runtime :class:`gompute_core.runtime.protocols.Device` for ``ordinal``.

    Stops at the first non-None result. Called once per (backend, ordinal)
    per process; the core caches the device. Raises ``BackendUnavailable`` or
    ``NoDevice`` with the reason when it cannot be opened.
    """

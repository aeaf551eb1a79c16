"""Which plugin API a plugin was written for, read from the hooks it implements.

A plugin states the API version it was written for as a literal in its
``BackendInfo`` (``api_version=3``). Two checks keep that statement honest:

* the *shape* of its hooks: API 1 hooks took the backend name
  (``gompute_probe(backend)``, ``gompute_device(backend, ordinal)``) and
  compiled through ``gompute_compile(request)``; a plugin with any of these
  was written for API 1, whatever it declares;
* the declaration itself: a ``gompute_backend_info`` whose code reads
  ``PLUGIN_API_VERSION`` (imported from the core) echoes the installed
  core's version instead of stating the plugin's, so a version mismatch could
  never be seen; such a plugin is refused and told to write the number.

Both refusals name the section of ``plugins.md`` that says what to do.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

from .records import PLUGIN_API_VERSION

PORTING_SECTION = "plugins.md, section 11 'Porting a plugin from an earlier plugin API'"
"""Where a refused plugin of an earlier API is sent."""

VERSION_SECTION = "plugins.md, section 4 ('api_version')"
"""Where a plugin echoing the core's version is sent."""

_API1_HOOKS = {
    "gompute_compile": "it implements gompute_compile(request)",
}
_API1_BACKEND_PARAMETER = ("gompute_probe", "gompute_device", "gompute_compiler")


def api_of_shape(plugin: Any) -> tuple[int, str]:
    """The plugin API ``plugin``'s hooks were written for, and the evidence for API 1
    (empty for the current API)."""
    for hook, evidence in _API1_HOOKS.items():
        if callable(getattr(plugin, hook, None)):
            return 1, evidence
    for hook in _API1_BACKEND_PARAMETER:
        function = getattr(plugin, hook, None)
        if not callable(function):
            continue
        try:
            parameters = inspect.signature(function).parameters
        except (TypeError, ValueError):  # a builtin without a signature: nothing to read
            continue
        if "backend" in parameters:
            return 1, f"its {hook} takes a 'backend' argument"
    return PLUGIN_API_VERSION, ""


def _names_read(code: types.CodeType) -> set[str]:
    """Every global and attribute name ``code`` and the code nested in it read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_read(const)
    return names


def echoes_core_version(describe: Any) -> bool:
    """True when the ``gompute_backend_info`` implementation ``describe`` reads
    ``PLUGIN_API_VERSION`` (the core's constant) instead of stating a number."""
    function = getattr(describe, "__func__", describe)
    code = getattr(function, "__code__", None)
    return code is not None and "PLUGIN_API_VERSION" in _names_read(code)


def written_for_api1(evidence: str) -> str:
    """The refusal of a plugin whose hooks have the API-1 shape."""
    return (f"the plugin was written for plugin API 1 ({evidence}); this gompute-core "
            f"implements plugin API {PLUGIN_API_VERSION}: port it as {PORTING_SECTION} "
            "describes, or install a gompute-core of plugin API 1")


def echoes_version() -> str:
    """The refusal of a plugin whose ``api_version`` is the core's constant."""
    return ("gompute_backend_info sets api_version from the core's PLUGIN_API_VERSION, "
            "which always equals the installed core's version, so a mismatch could never "
            f"be detected: write the plugin API version the plugin was written for as a "
            f"number (api_version={PLUGIN_API_VERSION} for this core), see {VERSION_SECTION}")


def other_version(declared: int) -> str:
    """The refusal of a plugin declaring another version with the current hook shapes."""
    advice = (f"port it as {PORTING_SECTION} describes" if declared < PLUGIN_API_VERSION
              else "install a gompute-core that implements it")
    return (f"the plugin implements plugin API version {declared}; this gompute-core "
            f"expects API version {PLUGIN_API_VERSION} ({advice})")

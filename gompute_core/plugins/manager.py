"""The backend registry: pluggy discovery, API-version check, probe and device caches.

Backends are found through the entry-point group ``gompute.backends`` (each
entry point loads a module or object whose hooks are marked with
:data:`hookimpl`) and through :func:`register` for in-process plugins. A
plugin that fails to import, describes itself wrongly, lacks a required hook
or declares another plugin API version is recorded with the reason and never
affects the others. Hooks are routed: the registry calls the implementation
of the plugin that provides the backend asked about, never a broadcast, so
no plugin sees (or can break) another backend's requests.
``GOMPUTE_BACKENDS=cuda,cpu`` restricts and orders what
:func:`ordered_backends` (``AutoKernel``, ``Compute``) tries.
"""

from __future__ import annotations

import contextlib
import importlib.metadata as metadata
import os
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pluggy

from ..errors import (
    BackendUnavailable,
    GomputeError,
    InvalidArgument,
    NoDevice,
    UnsupportedBackend,
)
from . import apishape, hookspecs
from .records import PLUGIN_API_VERSION, Availability, BackendInfo

ENTRY_POINT_GROUP = "gompute.backends"
ENV_BACKENDS = "GOMPUTE_BACKENDS"

hookimpl = pluggy.HookimplMarker("gompute")
"""Marker for a plugin's hook implementations (``@g.hookimpl``)."""


@dataclass(frozen=True)
class BackendRecord:
    """One installed plugin: its ``info``, or the ``error`` that keeps it out.

    ``hooks`` maps each hook name to the plugin's own implementation.

    ``name`` is the backend name (the entry point's name when the plugin could
    not describe itself); ``source`` says where it came from (``"entry point
    gompute-cpu 0.1.0"`` or ``"registered in-process"``).
    """

    name: str
    info: BackendInfo | None
    error: str
    source: str
    plugin: Any = None
    hooks: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def call(self, hook: str, **kwargs: Any) -> Any:
        """Call this plugin's own implementation of ``hook`` (and no other plugin's)."""
        return self.hooks[hook](**kwargs)

    @property
    def loaded(self) -> bool:
        """True when the plugin is registered and answers hooks."""
        return self.info is not None and not self.error

    @property
    def availability(self) -> Availability:
        """The cached probe result (see :func:`probe`)."""
        return probe(self.name)


class _Registry:
    """Process-wide state: the plugin manager, records, probe and device caches."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager("gompute")
        self.pm.add_hookspecs(hookspecs)
        self.records: dict[str, BackendRecord] = {}
        self.probes: dict[str, Availability] = {}
        self.devices: dict[tuple[str, int], Any] = {}
        self.compilers: dict[str, Any] = {}
        self.compile_caches: dict[str, Any] = {}  # name -> CompileCache
        self.ready = True
        """False while entry points are being discovered into this registry."""


_lock = threading.RLock()
_state: _Registry | None = None


def _registry() -> _Registry:
    """The process's registry, its entry points discovered on first use. Discovery holds
    ``_lock``: the discovering thread re-enters (each plugin registers into the registry
    being filled), every other thread waits for it to finish instead of seeing a registry
    with some backends still missing."""
    global _state
    state = _state
    if state is not None and state.ready:
        return state
    with _lock:
        if _state is None:
            state = _Registry()
            state.ready = False
            _state = state
            try:
                for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
                    load_entry_point(ep)
            finally:
                state.ready = True
        return _state


@contextlib.contextmanager
def isolated(*, discover: bool = False) -> Iterator[None]:
    """Run the ``with`` body against a fresh registry, then restore the previous one.

    The fresh registry is empty (in-process plugins only, e.g. for tests), or
    discovers entry points again with ``discover=True``. Devices opened inside
    are closed on exit; the previous registry's plugins, probes and devices
    are untouched.
    """
    global _state
    with _lock:
        saved = _state
        _state = None if discover else _Registry()
    try:
        yield
    finally:
        close_devices()
        with _lock:
            _state = saved


def get_plugin_manager() -> pluggy.PluginManager:
    """The ``pluggy.PluginManager("gompute")`` holding every loaded plugin."""
    return _registry().pm


def _last_line(exc: BaseException) -> str:
    return traceback.format_exception_only(type(exc), exc)[-1].strip()


REQUIRED_HOOKS = ("gompute_backend_info", "gompute_probe", "gompute_compiler", "gompute_device")


def _own_hooks(pm: pluggy.PluginManager, plugin: Any) -> dict[str, Any]:
    """``plugin``'s own implementation of each hook, by hook name."""
    hooks: dict[str, Any] = {}
    for name in REQUIRED_HOOKS:
        for impl in getattr(pm.hook, name).get_hookimpls():
            if impl.plugin is plugin:
                hooks[name] = impl.function
    return hooks


def _describe(plugin: Any) -> BackendInfo:
    """Call ``plugin``'s own ``gompute_backend_info`` (before registering it, so a plugin of
    another API version is refused by version, not by a hook-signature mismatch)."""
    describe = getattr(plugin, "gompute_backend_info", None)
    if describe is None:
        raise InvalidArgument("the plugin has no gompute_backend_info hook")
    info = describe()
    if not isinstance(info, BackendInfo):
        raise InvalidArgument(f"gompute_backend_info returned {info!r}, not a BackendInfo")
    return info


def _refuse(record: BackendRecord) -> BackendRecord:
    _registry().records.setdefault(record.name, record)
    return record


def _add(plugin: Any, fallback_name: str, source: str) -> BackendRecord:
    """Register ``plugin`` and record it (or the reason it was refused)."""
    state = _registry()
    shape_api, evidence = apishape.api_of_shape(plugin)
    try:
        info = _describe(plugin)
    except Exception as exc:
        if shape_api != PLUGIN_API_VERSION:  # an API-1 plugin may fail to describe itself
            return _refuse(BackendRecord(fallback_name, None,
                                         apishape.written_for_api1(evidence), source))
        return _refuse(BackendRecord(fallback_name, None,
                                     f"gompute_backend_info failed: {_last_line(exc)}", source))
    if shape_api != PLUGIN_API_VERSION:
        return _refuse(BackendRecord(info.name, info, apishape.written_for_api1(evidence),
                                     source))
    if apishape.echoes_core_version(plugin.gompute_backend_info):
        return _refuse(BackendRecord(info.name, info, apishape.echoes_version(), source))
    if info.api_version != PLUGIN_API_VERSION:
        return _refuse(BackendRecord(info.name, info, apishape.other_version(info.api_version),
                                     source))
    existing = state.records.get(info.name)
    if existing is not None and existing.loaded:
        if existing.source.startswith("entry point") and source.startswith("entry point"):
            # two installed distributions claim one name: which one wins would depend on
            # discovery order, so neither does, and the name says why
            state.pm.unregister(existing.plugin)
            state.probes.pop(info.name, None)
            record = BackendRecord(info.name, existing.info, (
                f"backend name {info.name!r} is already provided by {existing.source}, and "
                f"also by {source}: uninstall one of them"), f"{existing.source}; {source}")
            state.records[info.name] = record
            return record
        return _refuse(BackendRecord(info.name, info, f"backend name {info.name!r} is already "
                                     f"provided by {existing.source}", source))
    pm = state.pm
    try:
        pm.register(plugin, name=f"{fallback_name}@{id(plugin):x}")
    except Exception as exc:
        return _refuse(BackendRecord(info.name, info, f"cannot register: {_last_line(exc)}",
                                     source))
    hooks = _own_hooks(pm, plugin)
    missing = [h for h in REQUIRED_HOOKS if h not in hooks]
    if missing:
        pm.unregister(plugin)
        return _refuse(BackendRecord(info.name, info, "the plugin does not implement "
                                     f"{', '.join(missing)}", source))
    record = BackendRecord(info.name, info, "", source, plugin, hooks)
    state.records[info.name] = record
    state.probes.pop(info.name, None)
    return record


def load_entry_point(ep: metadata.EntryPoint) -> BackendRecord:
    """Load one ``gompute.backends`` entry point; failures are recorded, never raised."""
    dist = getattr(ep, "dist", None)
    source = f"entry point {ep.name} = {ep.value}"
    if dist is not None:
        source += f" ({dist.name} {dist.version})"
    with _lock:
        try:
            plugin = ep.load()
        except Exception as exc:
            state = _registry()
            record = BackendRecord(ep.name, None, f"import failed: {_last_line(exc)}", source)
            state.records.setdefault(ep.name, record)
            return record
        return _add(plugin, ep.name, source)


def register(plugin: Any, name: str | None = None) -> BackendRecord:
    """Register an in-process plugin (a module or object with ``@hookimpl`` functions).

    Returns its record; check ``record.error`` for a refusal (API version,
    duplicate name, broken ``gompute_backend_info``).
    """
    with _lock:
        return _add(plugin, name or getattr(plugin, "__name__", type(plugin).__name__),
                    "registered in-process")


def backends() -> list[BackendRecord]:
    """Every installed plugin, working or not, highest priority first."""
    records = list(_registry().records.values())
    return sorted(records, key=lambda r: (-(r.info.priority if r.info else -1), r.name))


def env_order() -> list[str] | None:
    """The backend names listed in ``GOMPUTE_BACKENDS``, or None when it is unset/empty."""
    raw = os.environ.get(ENV_BACKENDS, "").strip()
    if not raw:
        return None
    return [n.strip() for n in raw.split(",") if n.strip()]


def ordered_backends() -> list[str]:
    """Names of loaded backends in the order ``AutoKernel``/``Compute`` try them.

    ``GOMPUTE_BACKENDS`` (comma-separated) restricts and orders; otherwise
    the order is ``BackendInfo.priority``, highest first.
    """
    loaded = [r.name for r in backends() if r.loaded]
    env = env_order()
    if env is None:
        return loaded
    return [n for n in env if n in loaded]


def record(name: str) -> BackendRecord:
    """The record of backend ``name``; ``UnsupportedBackend`` listing what is installed."""
    records = _registry().records
    rec = records.get(name)
    if rec is None:
        installed = ", ".join(sorted(records)) or "none (pip install gompute-cpu adds the CPU)"
        raise UnsupportedBackend(f"no installed backend is called {name!r}; "
                                 f"installed: {installed}")
    return rec


def require(name: str) -> BackendRecord:
    """The record of a loaded backend ``name``, or ``UnsupportedBackend``/``BackendUnavailable``."""
    rec = record(name)
    if not rec.loaded:
        raise BackendUnavailable(f"backend {name!r} ({rec.source}) is not usable: {rec.error}")
    return rec


def probe(name: str) -> Availability:
    """Whether ``name`` can run here (cached per process; never raises for installed ones).

    A backend left out of ``GOMPUTE_BACKENDS`` is reported unavailable with
    that reason (not cached: the variable is read on each call).
    """
    rec = record(name)
    if not rec.loaded:
        return Availability(name, False, reason=rec.error)
    env = env_order()
    if env is not None and name not in env:
        return Availability(name, False,
                            reason=f"not listed in {ENV_BACKENDS}={os.environ[ENV_BACKENDS]}")
    state = _registry()
    cached = state.probes.get(name)
    if cached is not None:
        return cached
    try:
        result = rec.call("gompute_probe")
    except Exception as exc:
        result = Availability(name, False, reason=f"probe raised {_last_line(exc)}")
    if not isinstance(result, Availability):
        result = Availability(name, False,
                              reason=f"gompute_probe returned {result!r}, not an Availability")
    state.probes[name] = result
    return result


def _guarded(rec: BackendRecord, hook: str, **kwargs: Any) -> Any:
    """``rec``'s own ``hook``; an exception that is not a Gompute error (a plugin bug)
    becomes ``BackendUnavailable`` naming the backend, the hook and the exception."""
    try:
        return rec.call(hook, **kwargs)
    except GomputeError:
        raise
    except Exception as exc:
        raise BackendUnavailable(f"backend {rec.name!r} ({rec.source}): {hook} raised "
                                 f"{_last_line(exc)}") from exc


def compiler(name: str) -> Any:
    """The :class:`~gompute_core.backend.compiler.Compiler` of loaded backend ``name``
    (asked of its plugin once per process)."""
    rec = require(name)
    state = _registry()
    with _lock:
        comp = state.compilers.get(name)
        if comp is None:
            from ..backend.compiler import Compiler

            comp = _guarded(rec, "gompute_compiler")
            if not isinstance(comp, Compiler):
                raise UnsupportedBackend(f"backend {name!r}: gompute_compiler returned "
                                         f"{comp!r}, not a gompute_core.backend.Compiler")
            state.compilers[name] = comp
        return comp


def compile_cache(name: str, make: Callable[[str], Any]) -> Any:
    """This registry's compile cache of backend ``name``, made by ``make(name)`` on first use
    (the compile layer's :class:`~gompute_core.compilation.CompileCache`: the registry only
    keeps it, so an isolated registry starts with empty memory levels)."""
    state = _registry()
    with _lock:
        cache = state.compile_caches.get(name)
        if cache is None:
            cache = state.compile_caches[name] = make(name)
        return cache


def open_device(name: str, ordinal: int = 0) -> Any:
    """The cached :class:`~gompute_core.backend.Device` ``ordinal`` of ``name``.

    ``BackendUnavailable`` (with the probe's reason) when the backend cannot
    run here, ``NoDevice`` for an ordinal the probe did not report.
    """
    if isinstance(ordinal, bool) or not isinstance(ordinal, int) or ordinal < 0:
        raise InvalidArgument(f"device: expected a non-negative int ordinal, got {ordinal!r}")
    require(name)
    state = _registry()
    key = (name, ordinal)
    with _lock:
        device = state.devices.get(key)
        if device is not None:
            return device
        avail = probe(name)
        if not avail.available:
            raise BackendUnavailable(f"backend {name!r} is unavailable: {avail.reason}")
        if avail.devices and ordinal >= len(avail.devices):
            raise NoDevice(f"backend {name!r} has {len(avail.devices)} device(s); "
                           f"ordinal {ordinal} does not exist")
        from ..backend.device import Device

        device = _guarded(record(name), "gompute_device", ordinal=ordinal)
        if not isinstance(device, Device):
            raise UnsupportedBackend(f"backend {name!r}: gompute_device returned {device!r}, "
                                     "not a gompute_core.backend.Device")
        state.devices[key] = device
        return device


def close_devices() -> None:
    """Close every cached device (those with a ``close`` method) and forget them."""
    with _lock:
        if _state is None:
            return
        devices = list(_state.devices.values())
        _state.devices.clear()
    for device in devices:
        close = getattr(device, "close", None)
        if close is not None:
            close()


__all__ = [
    "BackendRecord", "ENTRY_POINT_GROUP", "ENV_BACKENDS", "REQUIRED_HOOKS", "backends",
    "close_devices", "compile_cache", "compiler", "env_order", "get_plugin_manager",
    "hookimpl", "isolated",
    "load_entry_point", "open_device", "ordered_backends", "probe", "record", "register",
    "require",
]

"""The backend SDK: everything a backend implements, and nothing it must re-implement.

A backend is a distribution with an entry point in the ``gompute.backends``
group naming a module (or object) with four hooks marked
:data:`hookimpl` (see :mod:`gompute_core.plugins.hookspecs`):

=========================  ==================================================
``gompute_backend_info()``  a :class:`BackendInfo`: name, version, the plugin
                            API version it implements, priority, the kinds it
                            supports (listed explicitly), unsupported types
``gompute_probe()``         an :class:`Availability`: devices, or why none
``gompute_compiler()``      a :class:`Compiler`: identity, render, build
``gompute_device(ordinal)`` a :class:`Device`: ``_alloc``, ``_load``,
                            ``synchronize``, ``stream``; optional streams,
                            events, pinned memory, host memory
=========================  ==================================================

Buffers subclass :class:`Buffer` and implement ``_copyin``, ``_copyout``,
``_copy_device``, ``_fill`` and ``_release``. The core does the rest once for
every backend: argument checks, the per-kind launch with its argument buffer
(:class:`ArgBuffer`), ``run`` (pipelined on devices with streams), the compile
cache and its key, the reduce block cap and every error message. Streams,
events and graphs subclass :class:`Stream`, :class:`Event`, :class:`Graph` and
:class:`GraphExec`; every one of these objects has ``close()``. ``__all__`` is
the whole SDK (``plugins.md`` section 9 lists it, a test compares the two); the
reference backend in ``tests/pybackend.py`` shows the minimum.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..plugins.manager import hookimpl
from ..plugins.records import (
    PLUGIN_API_VERSION,
    Artifact,
    Availability,
    BackendInfo,
    CompileRequest,
    DeviceInfo,
)

if TYPE_CHECKING:  # at run time the SDK's classes load on first use (a plugin's import of
    # this package, at discovery, must not import NumPy: see bench/startup.py)
    from ..abi.entry_args import (
        ArgBuffer,
        ArgLayout,
        Slot,
        arg_layout,
        entry_signature,
        has_params,
        signature_layout,
    )
    from .addresses import AddressMap
    from .buffer import Buffer
    from .compiler import Built, Compiler, backend_identity
    from .device import CAPABILITIES, CAPABILITY_METHODS, Device, Launcher
    from .launch_params import ParamsCache
    from .pinning import HostPinning, pinned_array
    from .storage import (
        cache_root,
        clear_squatter,
        private_cache_dir,
        warn_dropped,
        warn_once,
        write_atomically,
    )
    from .streams import Event, Graph, GraphExec, ImmediateEvent, ImmediateStream, Stream

_LAZY = {
    "ArgBuffer": "..abi.entry_args", "ArgLayout": "..abi.entry_args",
    "Slot": "..abi.entry_args", "arg_layout": "..abi.entry_args",
    "has_params": "..abi.entry_args", "entry_signature": "..abi.entry_args",
    "signature_layout": "..abi.entry_args",
    "AddressMap": "addresses", "Buffer": "buffer", "Built": "compiler", "Compiler": "compiler",
    "backend_identity": "compiler",
    "CAPABILITIES": "device", "CAPABILITY_METHODS": "device",
    "Device": "device", "Launcher": "device",
    "ParamsCache": "launch_params", "HostPinning": "pinning", "pinned_array": "pinning",
    "cache_root": "storage", "clear_squatter": "storage", "private_cache_dir": "storage",
    "warn_dropped": "storage",
    "warn_once": "storage", "write_atomically": "storage",
    "Event": "streams", "Graph": "streams", "GraphExec": "streams",
    "ImmediateEvent": "streams", "ImmediateStream": "streams", "Stream": "streams",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'gompute_core.backend' has no attribute {name!r}")
    relative = module if module.startswith("..") else f".{module}"
    value = getattr(importlib.import_module(relative, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    # records and the hook marker
    "PLUGIN_API_VERSION", "Artifact", "Availability", "BackendInfo", "CompileRequest",
    "DeviceInfo", "hookimpl",
    # the compiler
    "Built", "Compiler", "backend_identity",
    # the device, its buffers and queues
    "CAPABILITIES", "CAPABILITY_METHODS", "Buffer", "Device", "Event", "Graph", "GraphExec",
    "ImmediateEvent", "ImmediateStream", "Launcher", "Stream",
    # the argument buffers
    "ArgBuffer", "ArgLayout", "ParamsCache", "Slot", "arg_layout", "entry_signature",
    "has_params", "signature_layout",
    # host memory, addresses and files
    "AddressMap", "HostPinning", "pinned_array", "cache_root", "clear_squatter",
    "private_cache_dir", "warn_dropped",
    "warn_once", "write_atomically",
]

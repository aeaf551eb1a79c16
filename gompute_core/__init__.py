"""Gompute for Python: write a scalar kernel once, run it on any backend.

The public names below are the package's stable API. Submodules (and NumPy,
through the scalar types) are imported lazily so that ``import gompute_core``
stays cheap (no NumPy, no numba, no driver).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    AbiError,
    AllocFailed,
    BackendUnavailable,
    BarrierDivergence,
    CacheUnsafe,
    CaptureFailed,
    CompileFailed,
    ContextFailed,
    CopyFailed,
    DataRace,
    EventFailed,
    GomputeError,
    GomputeWarning,
    GraphFailed,
    InitFailed,
    InvalidArgument,
    KernelNotFound,
    KernelSyntaxError,
    LaunchFailed,
    ModuleLoadFailed,
    NoDevice,
    OutOfBounds,
    SyncFailed,
    Unsupported,
    UnsupportedBackend,
    last_driver_error,
)

if TYPE_CHECKING:  # type checkers see the real classes; at run time they resolve lazily
    from .types import f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64  # noqa: F401

__version__ = "0.1.0"

# public name -> "module:attribute", resolved on first access
_LAZY: dict[str, str] = {
    # scalar types (NumPy's scalar classes: lazy, so importing the package, e.g. as the
    # pytest11 plugin's parent in every pytest run, does not import NumPy)
    **{t: f"gompute_core.types:{t}" for t in
       ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64")},
    # params ABI
    "params": "gompute_core.abi.params:params",
    "Array": "gompute_core.abi.params:Array",
    "Enum": "gompute_core.abi.params:Enum",
    # kernel language helpers
    "math": "gompute_core.frontend.kmath:math",
    "Fused": "gompute_core.fusion:Fused",
    "Unary": "gompute_core.fusion:Unary",
    "local_array": "gompute_core.raw.builtins:local_array",
    # specs
    "map": "gompute_core.kinds.map:map",
    "map_fn": "gompute_core.kinds.map:map_fn",
    "map_to": "gompute_core.kinds.map_to:map_to",
    "zip": "gompute_core.kinds.zip:zip",
    "map_indexed": "gompute_core.kinds.map:map_indexed",
    "reduce": "gompute_core.kinds.reduce:reduce",
    "sum": "gompute_core.kinds.reduce:sum",
    "min": "gompute_core.kinds.reduce:min",
    "max": "gompute_core.kinds.reduce:max",
    "any": "gompute_core.kinds.reduce:any",
    "all": "gompute_core.kinds.reduce:all",
    "gather": "gompute_core.kinds.move:gather",
    "scatter": "gompute_core.kinds.move:scatter",
    "scan": "gompute_core.kinds.scan:scan",
    "cumsum": "gompute_core.kinds.scan:cumsum",
    "cumprod": "gompute_core.kinds.scan:cumprod",
    "cummax": "gompute_core.kinds.scan:cummax",
    "cummin": "gompute_core.kinds.scan:cummin",
    "elementwise": "gompute_core.kinds.elementwise:elementwise",
    "Scalar": "gompute_core.kinds.elementwise:Scalar",
    "Spec": "gompute_core.specs:Spec",
    # handles
    "Kernel": "gompute_core.runtime.kernel:Kernel",
    "AutoKernel": "gompute_core.runtime.kernel:AutoKernel",
    "compile": "gompute_core.runtime.compile:compile",
    "Dim3": "gompute_core.runtime.dim3:Dim3",
    # raw kernels
    "raw_kernel": "gompute_core.raw.kernel:raw_kernel",
    "RawKernel": "gompute_core.raw.launch:RawKernel",
    "raw_kernel_by_name": "gompute_core.raw.launch:raw_kernel_by_name",
    "GlobalPtr": "gompute_core.raw.types:GlobalPtr",
    "builtins": "gompute_core.raw.builtins:",
    "runtime": "gompute_core.runtime:",
    # interop
    "as_buffer": "gompute_core.interop:as_buffer",
    "from_dlpack": "gompute_core.interop:from_dlpack",
    # plugins
    "hookimpl": "gompute_core.plugins.manager:hookimpl",
    "Artifact": "gompute_core.plugins.records:Artifact",
    "BackendInfo": "gompute_core.plugins.records:BackendInfo",
    "Availability": "gompute_core.plugins.records:Availability",
    "backends": "gompute_core.plugins.manager:backends",
}

# lazy names that need an optional extra: left out of __all__ so that ``import *`` works
# without it
_OPTIONAL: dict[str, str] = {
    "dask": "gompute_core.dask:",  # pip install "gompute-core[dask]"
}

__all__ = [
    "AbiError", "AllocFailed", "BackendUnavailable", "BarrierDivergence", "CacheUnsafe",
    "CaptureFailed",
    "CompileFailed",
    "ContextFailed", "CopyFailed", "DataRace", "EventFailed", "GomputeError", "GomputeWarning",
    "GraphFailed", "InitFailed", "InvalidArgument", "KernelNotFound", "KernelSyntaxError",
    "LaunchFailed", "ModuleLoadFailed", "NoDevice", "OutOfBounds", "SyncFailed", "Unsupported",
    "UnsupportedBackend", "last_driver_error",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name) or _OPTIONAL.get(name)
    if target is None:
        raise AttributeError(f"module 'gompute_core' has no attribute {name!r}")
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    value = getattr(module, attr) if attr else module
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)

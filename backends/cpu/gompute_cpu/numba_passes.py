"""Keep numba from leaking LLVM pass pipelines on function declarations.

numba (0.6x, new pass manager) optimizes every IR module it adds to a code
library function by function: for each function of the module it creates an
llvmlite ``PassBuilder`` and builds a function simplification pipeline, then
runs it. llvmlite returns at once for a declaration (nothing to optimize),
but building the pipeline has already cost about 16 KB of native memory that
is never given back (the builder's instrumentation callbacks are not freed).
A numba module declares some 30 runtime functions for each one it defines,
so a compiled CPU kernel (two numba functions) kept about 1.1 MB of such
pipelines for the life of the process, most of its 1.9 MB.

:func:`install` replaces ``CPUCodeLibrary._optimize_functions`` with the same
loop that skips declarations before building anything. The code LLVM emits
is the same (declarations were never optimized); only the leak goes. It
installs only when numba's method reads the names this replacement relies
on, so a numba that changed it keeps its own. The replacement is process-wide
(any numba code in the process gets it: the same code, without the leak);
``GOMPUTE_CPU_NUMBA_PASSES=numba`` in the environment keeps numba's own method.

It also gives llvmlite's pass managers back their disposal. llvmlite (0.45 to at
least 0.50) lists ``ffi.ObjectRef`` before ``NewPassManager`` among the bases of
``ModulePassManager`` and ``FunctionPassManager``, so ``ObjectRef._dispose`` (which
does nothing) shadows the ``_dispose`` that frees the native pass manager: every
pipeline numba built (its passes and their tables) stayed allocated, about 250 KB
per compiled CPU kernel. Each class gets ``NewPassManager._dispose`` while its own is
still the shadowed no-op (a fixed llvmlite is left as it is). Freeing a pass manager
after its run is safe: llvmlite builds the analysis managers inside each run, so
nothing refers to the passes once it returns.
"""

from __future__ import annotations

import os
import threading
from typing import Any

_EXPECTED_NAMES = frozenset({"_codegen", "_data_layout", "data_layout", "functions",
                             "_function_pass_manager", "_recorded_timings", "record", "run"})
"""Names numba's own ``_optimize_functions`` uses; the replacement does the same steps."""

_lock = threading.Lock()
_installed = False


def _optimize_defined_functions(self: Any, ll_module: Any) -> None:
    """numba's function-level optimization of ``ll_module``, declarations skipped."""
    ll_module.data_layout = self._codegen._data_layout
    for func in ll_module.functions:
        if func.is_declaration:
            continue
        fpm, pb = self._codegen._function_pass_manager()
        with self._recorded_timings.record(f"Function passes on {func.name!r}", pb):
            fpm.run(func, pb)


def compatible(original: Any) -> bool:
    """Whether ``original`` (numba's ``_optimize_functions``) is the loop this module
    replaces: a method of the library and the module, reading the expected names."""
    code = getattr(original, "__code__", None)
    return code is not None and code.co_argcount == 2 and \
        _EXPECTED_NAMES <= set(code.co_names)


def install() -> bool:
    """Replace numba's ``CPUCodeLibrary._optimize_functions`` (once per process, unless
    ``GOMPUTE_CPU_NUMBA_PASSES=numba``); returns whether the replacement is in place."""
    global _installed
    with _lock:
        if _installed:
            return True
        if os.environ.get("GOMPUTE_CPU_NUMBA_PASSES") == "numba":
            return False
        from numba.core.codegen import CPUCodeLibrary

        if not compatible(CPUCodeLibrary.__dict__.get("_optimize_functions")):
            return False
        CPUCodeLibrary._optimize_functions = _optimize_defined_functions  # type: ignore[method-assign]
        _dispose_pass_managers()
        _installed = True
        return True


def _dispose_pass_managers() -> None:
    """Give llvmlite's module and function pass managers the ``_dispose`` of their
    ``NewPassManager`` base where ``ObjectRef``'s no-op shadows it (see the module's
    docstring)."""
    from llvmlite.binding import ffi, newpassmanagers

    base = vars(newpassmanagers).get("NewPassManager")
    dispose = vars(base).get("_dispose") if base is not None else None
    if dispose is None:
        return
    for name in ("ModulePassManager", "FunctionPassManager"):
        cls = getattr(newpassmanagers, name, None)
        if cls is not None and issubclass(cls, base) and cls._dispose is ffi.ObjectRef._dispose:
            cls._dispose = dispose

"""Where JAX arrays into ``Kernel.run`` on CUDA fail (CUresult 400), step by step.

Run on a GPU machine with JAX (CUDA) and CuPy:
    python scripts/gpu/jax_diag.py

Each step prints OK or the exception (type, message, the last driver error), then the
main thread's current CUDA context: which device it belongs to and whether it is the
context Gompute keeps pushed (``ours``). The hypothesis it tests: XLA makes its own
context current with ``cuCtxSetCurrent`` and leaves it there (its
``ScopedActivateContext`` does not restore at depth 0); with several GPUs that is
another device's primary context, so a module Gompute loads afterwards (the test's new
kernel) belongs to that context, and every launch of it answers
CUDA_ERROR_INVALID_HANDLE, even after the launcher makes our context current again.
(The fix: the CUDA driver table checks the current context before every call but
launches, and a launch refused for the context makes ours current and launches again.)
Also printed: what JAX's ``__cuda_array_interface__`` reports (version 2: no stream),
which context JAX's memory and its external-ready-events stream belong to, and both
ways in (CUDA Array Interface, DLPack) and out (``jax.dlpack.from_dlpack``).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

CU_POINTER_ATTRIBUTE_CONTEXT = 1
CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9


def main() -> None:
    argparse.ArgumentParser(description=__doc__).parse_args()
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

    from gompute_cuda.driver import driver

    import gompute_core as g
    from gompute_core.errors import last_driver_error
    from gompute_core.plugins import manager

    lib = driver().lib
    dev = manager.open_device("cuda", 0)
    dev.synchronize()
    ours = dev.native_context.value
    count = ctypes.c_int()
    lib.cuDeviceGetCount(ctypes.byref(count))
    version = ctypes.c_int()
    lib.cuDriverGetVersion(ctypes.byref(version))
    print(f"driver {version.value}, {count.value} GPU(s); Gompute device 0 context "
          f"{ours:#x}; CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')}")
    primaries = {}
    for i in range(count.value):
        flags, active = ctypes.c_uint(), ctypes.c_int()
        lib.cuDevicePrimaryCtxGetState(i, ctypes.byref(flags), ctypes.byref(active))
        handle = ctypes.c_void_p()
        code = lib.cuDevicePrimaryCtxRetain(ctypes.byref(handle), i)
        primaries[handle.value] = i
        print(f"  GPU {i} {driver().props(i).name}: primary context {handle.value or 0:#x} (retain "
              f"{code}), flags {flags.value:#x}, active {active.value}")
        lib.cuDevicePrimaryCtxRelease_v2(i)

    def context_of(handle: int | None) -> str:
        if not handle:
            return "none"
        name = "ours" if handle == ours else (
            f"primary of GPU {primaries[handle]}" if handle in primaries else "NOT A PRIMARY")
        return f"{handle:#x} ({name})"

    def current() -> str:
        h = ctypes.c_void_p()
        code = lib.cuCtxGetCurrent(ctypes.byref(h))
        return f"current context {context_of(h.value)} (cuCtxGetCurrent {code})"

    failures = []

    def step(name: str, fn: Callable[[], Any]) -> Any:
        print(f"-- {name}", flush=True)
        try:
            value = fn()
        except BaseException as exc:  # noqa: BLE001 - every failure is the report
            failures.append(name)
            print(f"   FAILED {type(exc).__name__}: {exc}")
            print(f"   last driver error: {last_driver_error()}")
            traceback.print_exc(limit=4, file=sys.stdout)
            value = None
        else:
            shown = repr(value)
            print(f"   OK {shown[:300]}")
        print(f"   {current()}", flush=True)
        return value

    def pointer_context(addr: int) -> str:
        h, o = ctypes.c_void_p(), ctypes.c_int(-1)
        c1 = lib.cuPointerGetAttribute(ctypes.byref(h), CU_POINTER_ATTRIBUTE_CONTEXT,
                                       ctypes.c_uint64(addr))
        c2 = lib.cuPointerGetAttribute(ctypes.byref(o), CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                       ctypes.c_uint64(addr))
        return f"memory of context {context_of(h.value)} ({c1}), ordinal {o.value} ({c2})"

    def stream_context(stream: int) -> str:
        h = ctypes.c_void_p()
        code = lib.cuStreamGetCtx(ctypes.c_void_p(stream), ctypes.byref(h))
        return f"stream {stream:#x} of context {context_of(h.value)} (cuStreamGetCtx {code})"

    print(current())
    if step("import jax; jax.devices('gpu')", lambda: __import__("jax").devices("gpu")) is None:
        return
    import jax
    import jax.numpy as jnp

    step("versions", lambda: (jax.__version__, __import__("jaxlib").__version__))
    gpu = jax.devices("gpu")[0]
    x = step("x = jax.device_put(arange(100), gpu).block_until_ready()",
             lambda: jax.device_put(jnp.arange(100, dtype=jnp.float32), gpu)
             .block_until_ready())
    cai = step("x.__cuda_array_interface__", lambda: x.__cuda_array_interface__)
    if cai:
        step("context of x's memory", lambda: pointer_context(cai["data"][0]))
    ext = step("gpu.get_stream_for_external_ready_events()",
               lambda: gpu.get_stream_for_external_ready_events())
    if ext:
        step("context of JAX's external-ready-events stream", lambda: stream_context(ext))
    step("context of Gompute's stream", lambda: stream_context(dev.stream.handle))
    step("Gompute: make_current() (cuCtxSetCurrent when another context is current)",
         dev.make_current)
    print(current())
    if cai:  # put XLA's context back where it left it, for the steps that follow
        step("x.__cuda_array_interface__ again (XLA activates its context)",
             lambda: x.__cuda_array_interface__["version"])

    def twice(v):
        return v * 2

    k = step("Gompute: compile and load a new kernel (the test's map_to)",
             lambda: g.Kernel(g.map_to("jaxdiag_twice", g.f32, g.f32, None, twice), "cuda"))
    if k is None:
        return
    import cupy as cp

    out = cp.zeros(100, cp.float32)
    step("k.run(x, out) [JAX input, CuPy output]", lambda: (k.run(x, out), k.context.synchronize(),
                                                          cp.asnumpy(out)[:4])[-1])
    step("g.as_buffer(x) (CUDA Array Interface)", lambda: g.as_buffer(x).addr)
    step("g.from_dlpack(x, 'cuda') (DLPack, our stream passed)",
         lambda: g.from_dlpack(x, "cuda").addr)
    if ext:
        step("dev.order_streams(JAX's stream, ours)",
             lambda: dev.order_streams(ext, dev.stream.handle))
    buf = step("buf = k.alloc(100); upload", lambda: k.alloc(100))
    if buf is not None:
        buf.upload(np.arange(100, dtype=np.float32))
        y = step("y = jax.dlpack.from_dlpack(buf)", lambda: jax.dlpack.from_dlpack(buf))
        if y is not None:
            step("np.asarray(y)[:4]", lambda: np.asarray(y)[:4])
    z = step("jax computation after ours: (x + 1).block_until_ready()",
             lambda: (x + 1).block_until_ready())
    if z is not None:
        step("k.run(x + 1, out) [a pending JAX result]",
             lambda: (k.run(x + 1, out), cp.asnumpy(out)[:4])[-1])
    k.close()
    print(f"== {len(failures)} step(s) failed: {failures}")


if __name__ == "__main__":
    main()

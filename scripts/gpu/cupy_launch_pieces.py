"""Where the extra host time of ``launch`` taking a CuPy array goes, on a real GPU.

Run on a CUDA machine with CuPy:  python scripts/gpu/cupy_launch_pieces.py

Times (min over batches, ns per call) the native-buffer launch, the CuPy-array launch,
and each CuPy attribute or call the foreign path may touch, so that the probe reads
only what is cheap. ``bench/interop.py`` is the number; this is the diagnosis.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "bench"))
from benchkit import per_call  # noqa: E402

sys.path[:] = [p for p in sys.path if not p.endswith("bench")]

import gompute_core as g  # noqa: E402
from gompute_core.kinds import foreign  # noqa: E402


def add_half(x):
    return x + 0.5


def main() -> None:
    import cupy as cp

    k = g.Kernel(g.map("pieces_add_half", g.f32, None, add_half), "cuda")
    dev, program = k.context, k.program
    small = 1 << 10
    xs, bs = cp.zeros(small, cp.float32), k.alloc(small)
    probe = foreign.probe_for(xs)
    current = cp.cuda.get_current_stream
    mem = xs.data
    pieces = {
        "launch, native buffer": (lambda: k.launch(bs, small), dev.synchronize),
        "launch, CuPy array": (lambda: k.launch(xs, small), dev.synchronize),
        "xs.device": (lambda: xs.device, None),
        "xs.data": (lambda: xs.data, None),
        "xs.data.ptr": (lambda: xs.data.ptr, None),
        "xs.data.device_id": (lambda: xs.data.device_id, None),
        "mem.ptr (held MemoryPointer)": (lambda: mem.ptr, None),
        "xs.size": (lambda: xs.size, None),
        "get_current_stream()": (lambda: current(), None),
        "get_current_stream().ptr": (lambda: current().ptr, None),
        "get_current_stream(0).ptr": (lambda: current(0).ptr, None),
        "xs.__cuda_array_interface__": (lambda: xs.__cuda_array_interface__, None),
        "probe(xs)": (lambda: probe(xs), None),
        "foreign._cache.get(id(xs))": (lambda: foreign._cache.get(id(xs)), None),
        "probed_operand(...)": (lambda: foreign.probed_operand(
            program, xs, probe, "buf", small, program._t_dtype, True), None),
        "type(xs) in PROBES": (lambda: type(xs) in foreign.PROBES, None),
        "empty lambda": (lambda: None, None),
    }
    for name, (fn, sync) in pieces.items():
        t = per_call(fn, calls=5000, sync=sync, pick=min)
        print(f"{name:40s} {t * 1e9:8.0f} ns", flush=True)


if __name__ == "__main__":
    main()

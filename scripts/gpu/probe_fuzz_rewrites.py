"""Run CUDA fuzz cases with their rendered source rewritten, to find a spelling NVRTC compiles
right (a device-side diagnosis, not a test).

Usage: ``python scripts/gpu/probe_fuzz_rewrites.py`` on a machine with the CUDA backend.
Each case (2026120611:6267, the float floor division by an infinite divisor; 2026120509:4365,
an i8 wrap) is rendered as the backend renders it, rewritten one way at a time, compiled
through the backend's own NVRTC and options (``g.RawKernel.from_source`` with the zip
entry's signature), run on the fuzz tier's inputs and compared with the tier's oracle.
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections.abc import Callable

import numpy as np

import gompute_core as g
from gompute_core.plugins import manager
from gompute_core.testing.test_fuzz import backend_types, compare, defined_inputs, generate

SEXT = ("static __device__ __forceinline__ int gp_sext(unsigned x, int bits) {\n"
        "  int r;\n"
        "  if (bits == 8) asm(\"cvt.s32.s8 %0, %1;\" : \"=r\"(r) : \"r\"(x));\n"
        "  else asm(\"cvt.s32.s16 %0, %1;\" : \"=r\"(r) : \"r\"(x));\n"
        "  return r;\n}\n")


def shifts_to(replace: Callable[[str, int], str]) -> Callable[[str], str]:
    """A rewrite of every ``((gp_i32)(((gp_u32)(X)) << S)) >> S)`` (an i8/i16 wrap) into
    ``replace(X, 32 - S)``."""
    head = "((gp_i32)(((gp_u32)("

    def rewrite(src: str) -> str:
        out, at = [], 0
        while True:
            k = src.find(head, at)
            if k < 0:
                return "".join(out) + src[at:]
            depth, j = 1, k + len(head)
            while depth:
                depth += {"(": 1, ")": -1}.get(src[j], 0)
                j += 1
            x = src[k + len(head):j - 1]
            m = re.match(r"\) << (\d+)\)\) >> \1\)", src[j:])
            if m is None:
                out.append(src[at:k + 1])
                at = k + 1
                continue
            # the match also closed the parenthesis opened before the head: put it back
            out.append(src[at:k] + replace(x, 32 - int(m.group(1))) + ")")
            at = j + m.end()

    return rewrite


REWRITES: dict[str, Callable[[str], str]] = {
    "as rendered": lambda s: s,
    "helpers __noinline__": lambda s: s.replace("__forceinline__", "__noinline__"),
    "fmod skipped for an infinite divisor": lambda s: s.replace(
        "double mod = fmod(a, b);",
        "double mod = (isinf(b) && isfinite(a)) ? a : fmod(a, b);"),
    "wrap by cvt.s32.s8/s16 (inline PTX)": lambda s: SEXT + shifts_to(
        lambda x, bits: f"(gp_sext((gp_u32)({x}), {bits}))")(s),
    "wrap by xor": shifts_to(
        lambda x, bits: f"(((gp_i32)(((gp_u32)({x})) & {(1 << bits) - 1}U) ^ "
                        f"{1 << (bits - 1)}) - {1 << (bits - 1)})"),
}


def run_case(seed: int, index: int, names: list[str]) -> None:
    case = generate(seed, index, backend_types(manager.require("cuda").info))
    fn = case.load(tempfile.mkdtemp())
    spec = g.zip(case.name, case.A, case.B, case.Out, None, fn)
    kir = spec.lower()
    source = manager.compiler("cuda").render(kir, "sm_90")
    entry = re.search(r'extern "C"\s*__global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\(',
                      source)
    a, b, want, computed_in = defined_inputs(case, fn)
    for k, name in enumerate(names):
        text = REWRITES[name](source)
        kname = f"{entry.group(1)}_v{k}" if entry else f"probe_{index}_{k}"
        text = text.replace(entry.group(1), kname) if entry else text
        try:
            raw = g.RawKernel.from_source(kname, text, "cuda",
                                          [g.GlobalPtr[case.A], g.GlobalPtr[case.B],
                                           g.GlobalPtr[case.Out], g.u64])
        except g.GomputeError as exc:
            print(f"{seed}:{index} {name}: {type(exc).__name__}: {str(exc)[:300]}")
            continue
        bufs = [raw.alloc(max(a.size, 1), case.A), raw.alloc(max(b.size, 1), case.B),
                raw.alloc(max(a.size, 1), case.Out)]
        bufs[0].upload(a)
        bufs[1].upload(b)
        raw.launch(max(1, -(-a.size // 256)), 256, [*bufs, a.size])
        raw.synchronize()
        got = np.zeros(a.size, case.Out)
        bufs[2].download(got)
        bad = compare(got, want, computed_in)
        shown = "; ".join(f"a={a[j]!r} b={b[j]!r} got {got[j]!r} want {want[j]!r}"
                          for j in bad[:2])
        print(f"{seed}:{index} {name}: {len(bad)} of {a.size} differ {shown}", flush=True)


def main() -> None:
    from gompute_cuda.nvrtc import load_nvrtc

    print(f"compiler: {load_nvrtc().name}", flush=True)
    run_case(2026120611, 6267, ["as rendered", "helpers __noinline__",
                                "fmod skipped for an infinite divisor"])
    run_case(2026120509, 4365, ["as rendered", "helpers __noinline__",
                                "wrap by cvt.s32.s8/s16 (inline PTX)", "wrap by xor"])


if __name__ == "__main__":
    sys.exit(main())

"""Re-run fuzz cases on one backend and print each disagreement in full.

Usage: ``python scripts/gpu/fuzz_case.py BACKEND SEED:INDEX [SEED:INDEX ...]``
(e.g. ``cuda 2026120501:3511 2026120509:4365``). For each case: how many elements
differ from the oracle (as the fuzz tier compares them), the first six with their inputs,
and, when any differ on a C-family backend, the kernel's rendered source before its entry
point (the functions where the difference comes from). The case is generated for every
scalar type the backend supports, as the fuzz tier does.
"""

from __future__ import annotations

import sys
import tempfile

import gompute_core as g
from gompute_core.plugins import manager
from gompute_core.testing.test_fuzz import backend_types, disagreements, generate


def run_case(backend: str, seed: int, index: int) -> int:
    """Print case ``seed:index`` on ``backend``; the number of differing elements (0 for a
    kernel rejected with a ``KernelSyntaxError``)."""
    case = generate(seed, index, backend_types(manager.require(backend).info))
    fn = case.load(tempfile.mkdtemp())
    spec = g.zip(case.name, case.A, case.B, case.Out, None, fn)
    try:
        k = g.Kernel(spec, backend)
    except g.KernelSyntaxError as exc:  # what the fuzz tier counts as a clear rejection
        print(f"seed {seed} index {index} on {backend}: rejected ({exc})", flush=True)
        return 0
    with k:
        a, b, got, want, bad = disagreements(case, fn, k)
        print(f"seed {seed} index {index} on {backend}: {len(bad)} of {a.size} differ", flush=True)
        for j in bad[:6]:
            print(f"  a={a[j]!r} b={b[j]!r}: got {got[j]!r}, want {want[j]!r}")
        if bad:
            print(case.source)
            source = manager.compiler(backend).render(spec.lower(), k.device.arch)
            entry = max(source.find("__global__"), source.find("__kernel"))
            print(source[:entry] if entry > 0 else source)
    return len(bad)


def main(argv: list[str]) -> int:
    backend, cases = argv[0], [c.split(":") for c in argv[1:]]
    return int(sum(run_case(backend, int(s), int(i)) for s, i in cases) > 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

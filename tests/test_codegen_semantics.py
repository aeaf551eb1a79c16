"""The C renderer's arithmetic against the Python oracle, executed on the host.

A host dialect of :class:`CRenderer` (plain C++: ``static inline`` functions, libm)
renders the IR functions of small zip kernels; g++ compiles them with a harness
that evaluates every input pair and prints result bits, which must equal the
kernel function run as Python on NumPy scalars: integer wrap, floor division and
modulo (division by zero, ``i_min // -1``), shifts out of range, float floor
division/modulo with zeros, infinities and NaN, Python's ``min``/``max``, and
``range`` loops with negative and overflowing steps. No GPU needed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

import gompute_core as g
from gompute_core.codegen import CRenderer
from gompute_core.codegen.ctypes_ import INT_TYPEDEFS, reg_type

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not found")


class HostRenderer(CRenderer):
    """Plain C++ for the host: the dialect knobs a CPU needs."""

    name: ClassVar[str] = "host-c++"
    prelude: ClassVar[str] = (
        "#include <cmath>\n#include <cstdio>\n#include <cstring>\n"
        "using std::isnan; using std::isinf; using std::isfinite;\n"
        "static inline float gp_bits_f32(int b) { float f; memcpy(&f, &b, 4); return f; }\n"
        "static inline double gp_bits_f64(long long b) "
        "{ double d; memcpy(&d, &b, 8); return d; }\n")
    function_qualifier: ClassVar[str] = "static inline"
    float_from_bits: ClassVar[dict[str, str]] = {"f32": "gp_bits_f32", "f64": "gp_bits_f64"}


def div(a, b):
    return a // b


def mod(a, b):
    return a % b


def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def mul(a, b):
    return a * b


def shl(a, b):
    return a << b


def shr(a, b):
    return a >> b


def neg_abs(a, b):
    return -a + abs(b)


def pymin(a, b):
    return min(a, b)


def pymax(a, b):
    return max(a, b)


def tdiv(a, b):
    return a / b


def loop(a, b):
    s = a - a
    for i in range(a, b, -3):
        s += i
    for j in range(b, a, 7):
        s -= j
    return s


INT_FNS = (div, mod, add, sub, mul, shl, shr, neg_abs, pymin, pymax)
FLOAT_FNS = (div, mod, add, mul, tdiv, pymin, pymax)


def int_values(t: type) -> list[int]:
    info = np.iinfo(t)
    vals = {0, 1, 2, 3, 7, 8, 31, 63, 64, 100, info.max, info.max - 1, info.min}
    if info.min < 0:
        vals |= {-1, -2, -3, -7, -8, -100, info.min + 1}
    return sorted(v for v in vals if info.min <= v <= info.max)


FLOAT_VALUES = [0.0, -0.0, 1.0, -1.0, 1.5, -1.5, 7.0, -7.0, 0.1, 3.0, -3.0, 1e30, -1e-30,
                np.inf, -np.inf, np.nan, 2.5, -2.5]


def run_host(spec: g.Spec, pairs: list[tuple], t: type, tmp: Path) -> list[int]:
    """Evaluate ``spec``'s element function on ``pairs`` through the rendered C++."""
    kir = spec.lower()
    body = HostRenderer().render_functions(kir)
    c = reg_type(t)
    bits = np.dtype(t).itemsize * 8
    ut = f"gp_u{bits}"
    lits = []
    for a, b in pairs:
        if np.dtype(t).kind == "f":
            ia, ib = (int(np.array(v, t).view(f"u{bits // 8}")) for v in (a, b))
            fn = "gp_bits_f64" if bits == 64 else "gp_bits_f32"
            cast = "(long long)" if bits == 64 else "(int)"
            lits.append(f"{{{fn}({cast}{ia}ULL), {fn}({cast}{ib}ULL)}}")
        else:
            lits.append(f"{{({c}){int(a)}LL, ({c}){int(b)}LL}}")
    out = ("{ unsigned long long u = 0; memcpy(&u, &r, sizeof r); printf(\"%llu\\n\", u); }"
           if np.dtype(t).kind == "f" else f"printf(\"%llu\\n\", (unsigned long long)({ut})r);")
    src = (HostRenderer.prelude + INT_TYPEDEFS + body +
           f"struct gp_pair {{ {c} a, b; }};\n"
           f"static const gp_pair cases[] = {{{', '.join(lits)}}};\n"
           "int main() {\n  for (const gp_pair& x : cases) {\n"
           f"    {c} r = f_{kir.element}(x.a, x.b);\n    {out}\n  }}\n  return 0;\n}}\n")
    cpp, exe = tmp / f"{spec.name}.cpp", tmp / spec.name
    cpp.write_text(src)
    subprocess.run(["g++", "-std=c++17", "-O1", "-fno-fast-math", "-ffp-contract=off",
                    "-o", str(exe), str(cpp)], check=True, capture_output=True, text=True)
    res = subprocess.run([str(exe)], check=True, capture_output=True, text=True)
    return [int(x) for x in res.stdout.split()]


def oracle_bits(fn, pairs: list[tuple], t: type) -> list[int]:
    out = []
    with np.errstate(all="ignore"):
        for a, b in pairs:
            r = t(fn(t(a), t(b)))
            out.append(int(np.array(r, t).view(f"u{np.dtype(t).itemsize}")))
    return out


def is_nan(bits: int, t: type) -> bool:
    """True when ``bits`` are a NaN of float type ``t`` (any payload)."""
    if np.dtype(t).kind != "f":
        return False
    return bool(np.isnan(np.array(bits, f"u{np.dtype(t).itemsize}").view(t)))


def check(fn, t: type, values: list, tmp: Path, pairs: list[tuple] | None = None) -> None:
    pairs = pairs or [(a, b) for a in values for b in values]
    name = f"cg_{fn.__name__}_{np.dtype(t).name}"
    spec = g.zip(name, t, t, t, None, fn)
    got = run_host(spec, pairs, t, tmp)
    want = oracle_bits(fn, pairs, t)
    bad = [(pairs[i], got[i], want[i]) for i in range(len(pairs))
           if got[i] != want[i] and not (is_nan(got[i], t) and is_nan(want[i], t))]
    assert not bad, f"{name}: {len(bad)} mismatches, e.g. {bad[:5]}"


@pytest.mark.parametrize("t", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                               np.uint32, np.uint64], ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("fn", INT_FNS, ids=lambda f: f.__name__)
def test_integer_ops_match_python(fn, t: type, tmp_path: Path) -> None:
    if fn is neg_abs and not np.issubdtype(t, np.signedinteger):
        pytest.skip("negation of unsigned values is rejected by the frontend's typing")
    check(fn, t, int_values(t), tmp_path)


@pytest.mark.parametrize("t", [np.float32, np.float64], ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("fn", FLOAT_FNS, ids=lambda f: f.__name__)
def test_float_ops_match_numpy(fn, t: type, tmp_path: Path) -> None:
    check(fn, t, FLOAT_VALUES, tmp_path)


@pytest.mark.parametrize("t", [np.int8, np.int32, np.uint8, np.int64],
                         ids=lambda t: np.dtype(t).name)
def test_range_loops_follow_python(t: type, tmp_path: Path) -> None:
    info = np.iinfo(t)
    hi, lo = int(info.max), int(info.min)
    clusters = [[0, 5, 17, 40], [hi, hi - 2, hi - 10, hi - 40]]  # short spans only:
    if lo < 0:  # the oracle really iterates
        clusters += [[-9, 0, 9, -40], [lo, lo + 1, lo + 10, lo + 40]]
    pairs = [(a, b) for c in clusters for a in c for b in c]
    check(loop, t, [], tmp_path, pairs)

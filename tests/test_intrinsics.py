"""The one table of math intrinsics (``gompute_core.ir.intrinsics``) against everything that
reads it: the IR's ``Intrinsic`` names, ``g.math`` (oracle and lowering), the C renderer and
its CUDA and HIP dialects, and the numba renderer. One tiny kernel per entry and type is
lowered by the frontend and rendered by every renderer, which must spell the entry the way
the table says."""

from __future__ import annotations

import importlib.util
import math
import sys
from types import ModuleType
from typing import get_args

import numpy as np
import pytest

import gompute_core as g
from gompute_core.codegen import CRenderer
from gompute_core.errors import Unsupported
from gompute_core.frontend import kmath
from gompute_core.ir import nodes as ir
from gompute_core.ir.intrinsics import INTRINSICS, MathIntrinsic, g_math_entries, ir_names
from gompute_core.types import is_float, is_signed, short_name

pytest.importorskip("gompute_cuda")
pytest.importorskip("gompute_hip")
pytest.importorskip("gompute_cpu")

from gompute_cpu.kernels import render_module  # noqa: E402
from gompute_cuda.renderer import CUDARenderer  # noqa: E402
from gompute_hip.renderer import HIPRenderer  # noqa: E402

FLOATS = (np.float16, np.float32, np.float64)
INTS = (np.int32, np.uint8)
C_DIALECTS = (CRenderer, CUDARenderer, HIPRenderer)


def _ids(m: MathIntrinsic) -> str:
    return m.name


def test_ir_intrinsic_names_are_the_table() -> None:
    assert get_args(ir.Intrinsic) == ir_names()
    assert len({m.name for m in INTRINSICS}) == len(INTRINSICS)


def test_g_math_is_built_from_the_table() -> None:
    names = {m.name for m in g_math_entries()}
    assert set(kmath.INTRINSICS.values()) == names
    assert kmath.PREDICATES == {m.name for m in INTRINSICS if m.kind == "predicate"}
    assert kmath.BINARY_INTRINSICS == {m.name for m in g_math_entries() if m.arity == 2}
    for name in names:
        assert kmath.intrinsic_of(getattr(g.math, name)) == name


@pytest.mark.parametrize("m", g_math_entries(), ids=_ids)
def test_g_math_oracle_applies_the_table_function(m: MathIntrinsic) -> None:
    """The oracle computes each entry with the NumPy ufunc the table names (or Python's math
    in double, rounded), the function the numba renderer calls too."""
    args = [np.float32(0.75), np.float32(-1.5), np.float32(0.75)][:m.arity]
    got = getattr(g.math, m.name)(*args)
    if m.name == "fma":  # one rounding of the exact value (exact here: -0.375)
        want = np.float32(float(args[0]) * float(args[1]) + float(args[2]))
    elif m.kind == "library":  # the core's kernel-language function on doubles
        from gompute_core.frontend import special

        want = np.float32(getattr(special, f"{m.name}_f64")(np.float64(args[0])))
    elif m.numpy is None:
        want = np.float32(getattr(math, m.name)(*(float(a) for a in args)))
    else:
        want = getattr(np, m.numpy)(*args)
    assert type(got) is type(want) and (got == want or (np.isnan(got) and np.isnan(want)))


# ---- one tiny kernel per entry, lowered by the frontend ----------------------------------
def _call_text(m: MathIntrinsic) -> str:
    args = ["a", "b", "a"][:m.arity]
    if m.kind == "operator":
        return f" {m.operator} ".join(args)
    prefix = "" if m.kind == "builtin" else "g.math."
    return f"{prefix}{m.name}({', '.join(args)})"


@pytest.fixture(scope="module")
def entry_kernels(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """A module with ``k_<name>(a, b)`` applying each table entry (the frontend reads source
    files, so the kernels are written to one)."""
    src = "import gompute_core as g\n" + "".join(
        f"\n\ndef k_{m.name}(a, b):\n    return {_call_text(m)}\n" for m in INTRINSICS)
    path = tmp_path_factory.mktemp("intrinsics") / "intrinsic_kernels.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("intrinsic_kernels", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _types(m: MathIntrinsic) -> tuple[type, ...]:
    return FLOATS + INTS if m.kind == "builtin" else FLOATS


def _lower(kernels: ModuleType, m: MathIntrinsic, t: type) -> object:
    out = np.bool_ if m.kind == "predicate" else t
    spec = g.zip(f"ix_{m.name}_{short_name(t)}", t, t, out, None, getattr(kernels, f"k_{m.name}"))
    return spec.lower()


@pytest.mark.parametrize("m", INTRINSICS, ids=_ids)
def test_frontend_lowers_each_entry_to_its_ir(entry_kernels: ModuleType, m: MathIntrinsic) -> None:
    for t in _types(m):
        kir = _lower(entry_kernels, m, t)
        fn = kir.functions[-1]  # type: ignore[attr-defined]
        assert len(kir.functions) == 1 or m.kind == "library"  # type: ignore[attr-defined]
        (ret,) = fn.body
        e = ret.value
        if m.kind == "operator":
            assert isinstance(e, ir.Binary) and e.op == "pow" and e.type is t
        elif m.kind == "library":  # a call of the one definition, on doubles
            call = e.value if isinstance(e, ir.Cast) else e
            assert isinstance(call, ir.CallFunction) and call.func.endswith(f"_{m.name}_f64")
            assert e.type is t
        else:
            assert isinstance(e, ir.CallIntrinsic) and e.func == m.name and len(e.args) == m.arity
            assert e.type is (np.bool_ if m.kind == "predicate" else t)


def c_spelling(m: MathIntrinsic, t: type) -> str | None:
    """What a C-family rendering of ``m`` on ``t`` contains (None: no call at all)."""
    if m.kind == "library":
        return f"_{m.name}_f64("
    if m.kind == "predicate":
        return f"({m.c}("
    if m.c is None or not is_float(t):
        if m.name == "abs" and not is_signed(t):
            return None
        return f"gp_{m.name}_{short_name(t)}("
    if t is np.float64:
        return f"{m.c}("
    if m.f16_via_f64 and t is np.float16:  # rounded once, from double
        return f"gp_h2f(gp_d2h({m.c}((double)("
    if m.c == "fabs":  # the sign bit cleared (ptxas folded fabsf(nan) >= -0.0f to true)
        return "gp_fabs_f32("
    form = f"(float){m.c}((double)" if m.f32_via_f64 else f"{m.c}f("
    return f"gp_rh({form}" if t is np.float16 else form


def numba_spelling(m: MathIntrinsic, t: type) -> str:
    """What the numba rendering of ``m`` on ``t`` contains."""
    if m.kind == "library":
        return f"_{m.name}_f64("
    if m.name in ("min", "max"):
        return f"_{m.name}_{short_name(t)}("
    if m.name == "abs":
        return "(abs("
    if m.name == "pow":  # the C library's pow, as the oracle's NumPy scalars call it
        return f"_pow_{short_name(t)}("
    if m.name == "fma":  # LLVM's fma intrinsic
        return f"_fma_{short_name(t)}("
    if m.numpy is None:
        return f"(math.{m.name}(np.float64("
    return f"np.{m.numpy}("


@pytest.mark.parametrize("m", INTRINSICS, ids=_ids)
@pytest.mark.parametrize("dialect", C_DIALECTS, ids=lambda d: d.__name__)
def test_every_c_dialect_covers_every_entry(entry_kernels: ModuleType, m: MathIntrinsic,
                                            dialect: type[CRenderer]) -> None:
    for t in _types(m):
        kir = _lower(entry_kernels, m, t)
        if t is np.float16 and not dialect.half_prelude:
            with pytest.raises(Unsupported, match="no f16 support"):
                dialect().render(kir)  # type: ignore[arg-type]
            continue
        src = dialect().render(kir)  # type: ignore[arg-type]
        body = src[src.index(f" f_{kir.element}("):]  # type: ignore[attr-defined]
        want = c_spelling(m, t)
        if want is None:
            assert "return v_a;" in body
        else:
            assert want in body, f"{dialect.__name__} renders {m.name} on {short_name(t)} " \
                                 f"without {want!r}:\n{body}"


@pytest.mark.parametrize("m", INTRINSICS, ids=_ids)
def test_numba_renderer_covers_every_entry(entry_kernels: ModuleType, m: MathIntrinsic) -> None:
    for t in _types(m):
        if t is np.float16:
            continue  # the CPU backend has no f16 arithmetic (Unsupported, tested elsewhere)
        kir = _lower(entry_kernels, m, t)
        src = render_module(kir)  # type: ignore[arg-type]
        body = src[src.index(f"def f_{kir.element}("):]  # type: ignore[attr-defined]
        assert numba_spelling(m, t) in body, body

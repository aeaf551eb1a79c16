"""What the CPU backend generates: packed SIMD loops, one loop per fused map,
reassociation only in reduce presets, f16 refused, compile through the hook."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from gompute_cpu import plugin
from gompute_cpu.kernels import render_module

import gompute_core as g
from gompute_core.cli_kernels import Scale, scale_relu
from gompute_core.compilation import compile_kernel
from gompute_core.errors import InvalidArgument, Unsupported


class ScaleOp:
    @staticmethod
    def eval(x, p: Scale):
        return x * p.scale


def square(x, p: Scale):
    return x * x


@pytest.fixture()
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty compile cache, so numba compiles (cached code cannot be inspected)."""
    monkeypatch.setenv("GOMPUTE_CACHE_DIR", str(tmp_path))
    return tmp_path


def _asm(kernel: g.Kernel, entry: str = "k_serial") -> str:
    dispatcher = getattr(kernel.program.entry.module, entry)
    return dispatcher.inspect_asm(dispatcher.signatures[0])


def test_f32_map_loop_uses_packed_simd(fresh_cache: Path) -> None:
    spec = g.map("cg_scale_relu", g.f32, Scale, scale_relu)
    with g.Kernel(spec, "cpu") as k:
        data = np.linspace(-4, 4, 1000, dtype=np.float32)
        want = np.array([scale_relu(x, Scale(scale=1.5)) for x in data], np.float32)
        k.run(data, Scale(scale=1.5))
        np.testing.assert_array_equal(data, want)
        asm = _asm(k)
    # packed single-precision multiply on xmm/ymm/zmm registers, not only scalar mulss
    assert re.search(r"\bv?mulps\b[^\n]*%[xyz]mm", asm), "no packed f32 multiply in the loop"


def test_sum_preset_vectorizes_with_reassociation(fresh_cache: Path) -> None:
    spec = g.sum("cg_sum_f32", g.f32)
    with g.Kernel(spec, "cpu") as k:
        data = np.arange(1000, dtype=np.float32)
        assert k.run(data) == np.float32(499500)
        asm = _asm(k, "k_fold")
    assert re.search(r"\bv?addps\b[^\n]*%[xyz]mm", asm), "the sum preset did not vectorize"


@pytest.mark.parametrize("preset", ["min", "max"])
def test_float_min_max_presets_vectorize(fresh_cache: Path, preset: str) -> None:
    spec = getattr(g, preset)(f"cg_{preset}_f32", g.f32)
    data = np.random.default_rng(3).standard_normal(1000, dtype=np.float32)
    with g.Kernel(spec, "cpu") as k:
        assert k.run(data) == getattr(np, preset)(data)
        asm = _asm(k, "k_fold")
    assert re.search(r"\bv?(cmp\w*ps|minps|maxps)\b[^\n]*%[xyz]mm", asm), "scalar min/max fold"


def test_fused_map_renders_one_loop_without_temporaries() -> None:
    fused = g.Fused(g.f32, Scale, [ScaleOp, g.Unary(g.f32, Scale, square)])
    spec = g.map("cg_fused", g.f32, Scale, fused.eval)
    source = render_module(spec.lower())
    serial = source[source.index("def k_serial"):source.index("def k_parallel")]
    assert len(re.findall(r"^\s*for ", serial, re.M)) == 1
    assert "np.empty" not in source and "np.zeros" not in source
    with g.Kernel(spec, "cpu") as k:
        data = np.linspace(-3, 3, 257, dtype=np.float32)
        want = np.array([fused.eval(x, Scale(scale=2)) for x in data], np.float32)
        k.run(data, Scale(scale=2))
        np.testing.assert_array_equal(data, want)


def test_reassociation_only_in_presets() -> None:
    preset = render_module(g.sum("cg_sum_i32", g.i32).lower())
    custom = render_module(g.reduce("cg_custom_sum", g.i32, None, lambda a, b: a + b, 0).lower())
    assert re.search(r"@njit\(\*\*_REASSOC\)\ndef k_fold", preset)
    assert "@njit(**_REASSOC)" not in custom
    assert "fastmath" not in custom.replace('_REASSOC = dict(_OPT, fastmath={"reassoc"})', "")


def test_f16_is_refused_and_declared() -> None:
    assert "f16" in plugin.gompute_backend_info().unsupported_types
    with pytest.raises(Unsupported):
        render_module(g.sum("cg_sum_f16", g.f16).lower())


def test_compiler_builds_the_rendered_module() -> None:
    kir = g.map("cg_hook", g.f32, Scale, scale_relu).lower()
    art = compile_kernel(plugin.gompute_compiler(), kir, plugin.host_arch())
    assert art.format == "python" and art.entry == "cg_hook" and art.backend == "cpu"
    assert art.target == plugin.host_arch() and art.image == art.source.encode()
    assert art.digest == kir.digest() and art.compiler.startswith("numba ")
    with pytest.raises(InvalidArgument):
        compile_kernel(plugin.gompute_compiler(), kir, plugin.host_arch(), ("-O0",))


def test_probe_reports_the_host_cpu() -> None:
    avail = plugin.gompute_probe()
    assert avail.available and avail.devices[0].arch == plugin.host_arch()
    assert avail.compiler.startswith("numba ")

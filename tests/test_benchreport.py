"""``BenchReport`` tables and charts, and ``gompute bench --out DIR``."""

from __future__ import annotations

from pathlib import Path

import pytest

from gompute_core.benchreport import ENV_OUT, BenchReport
from gompute_core.cli import main


def sample(out_dir: Path | None) -> BenchReport:
    report = BenchReport("demo", out_dir)
    report.chart("map f32", "elements", "GB/s", log2_x=True)
    for e, ours, peer in ((10, 1.5, 2.0), (12, 3.25, 3.0)):
        report.add("map f32", "ours", 2 ** e, ours)
        report.add("map f32", "peer", 2 ** e, peer)
    report.add("scaling", "ours", 1, 1.0)
    return report


def test_markdown_has_one_table_per_benchmark() -> None:
    text = sample(None).markdown()
    assert "## map f32 (GB/s)" in text
    assert "| elements | ours | peer |" in text
    assert "| 2**10 | 1.5 | 2 |" in text
    assert "| 2**12 | 3.25 | 3 |" in text
    assert "## scaling (y)" in text and "| 1 | 1 |" in text


def test_disabled_report_writes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_OUT, raising=False)
    report = BenchReport.from_env("demo")
    assert not report.enabled
    assert report.write() == []


def test_write_makes_the_table_and_a_png_per_benchmark(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    paths = sample(tmp_path / "out").write()
    names = sorted(p.name for p in paths)
    assert names == ["demo-map-f32.png", "demo-scaling.png", "demo.md"]
    for path in paths:
        if path.suffix == ".png":
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_out_saves_output_and_the_scripts_charts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capfd: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "hip.py").write_text(
        "import sys\n"
        "from gompute_core.benchreport import BenchReport\n"
        "r = BenchReport.from_env('hip')\n"
        "r.add('copy', 'ours', 1, 2.0)\n"
        "r.write()\n"
        "print('bench args', sys.argv[1:])\n")
    monkeypatch.chdir(tmp_path)
    out_dir = tmp_path / "results"
    assert main(["bench", "--out", str(out_dir), "hip", "--size", "10"]) == 0
    out = capfd.readouterr().out
    assert "bench args ['--size', '10']" in out
    assert f"wrote {out_dir / 'hip.md'} and hip-copy.png" in out
    table = (out_dir / "hip.md").read_text()
    assert "## copy (y)" in table and "| 1 | 2 |" in table
    assert "bench args ['--size', '10']" in table.split("## output of")[1]
    assert (out_dir / "hip-copy.png").is_file()


def test_bench_out_without_points_keeps_the_output(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capfd: pytest.CaptureFixture[str]) -> None:
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "cpu.py").write_text("print('a table')\nraise SystemExit(4)\n")
    monkeypatch.chdir(tmp_path)
    assert main(["bench", "--out", str(tmp_path / "r"), "cpu"]) == 4
    assert "no charts" in capfd.readouterr().out
    assert "a table" in (tmp_path / "r" / "cpu.md").read_text()

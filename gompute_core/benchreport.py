"""Benchmark results as a markdown table and, with matplotlib, one PNG chart per benchmark.

A benchmark script adds points (``benchmark``, ``series``, ``x``, ``y``) to a
:class:`BenchReport` and calls :meth:`BenchReport.write`. ``gompute bench
TARGET --out DIR`` sets ``$GOMPUTE_BENCH_OUT`` to ``DIR`` for the script
(:meth:`BenchReport.from_env`); a script run without it writes nothing.
Charts need ``pip install "gompute-core[plot]"`` (matplotlib); without it the
tables are still written.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

ENV_OUT = "GOMPUTE_BENCH_OUT"
"""The folder ``gompute bench --out`` passes to the benchmark script."""


@dataclass(frozen=True)
class Point:
    """One measurement: ``y`` of ``series`` at ``x`` in ``benchmark``."""

    benchmark: str
    series: str
    x: float
    y: float


@dataclass
class Axes:
    """How one benchmark is charted: axis labels and whether x is logarithmic (base 2)."""

    xlabel: str
    ylabel: str
    log2_x: bool = False


@dataclass
class BenchReport:
    """Points of one script's benchmarks, written to ``out_dir`` as ``<name>.md`` and PNGs."""

    name: str
    out_dir: Path | None
    points: list[Point] = field(default_factory=list)
    axes: dict[str, Axes] = field(default_factory=dict)

    @classmethod
    def from_env(cls, name: str) -> BenchReport:
        """A report writing to ``$GOMPUTE_BENCH_OUT`` (or nowhere when it is unset)."""
        out = os.environ.get(ENV_OUT)
        return cls(name, Path(out) if out else None)

    @property
    def enabled(self) -> bool:
        """True when the report will be written (measure chart-only data only then)."""
        return self.out_dir is not None

    def chart(self, benchmark: str, xlabel: str, ylabel: str, *, log2_x: bool = False) -> None:
        """Declare ``benchmark``'s axes (before or after adding its points)."""
        self.axes[benchmark] = Axes(xlabel, ylabel, log2_x)

    def add(self, benchmark: str, series: str, x: float, y: float) -> None:
        """Record one point."""
        self.points.append(Point(benchmark, series, float(x), float(y)))

    def benchmarks(self) -> list[str]:
        """Benchmark names in the order of their first point."""
        return list(dict.fromkeys(p.benchmark for p in self.points))

    def markdown(self) -> str:
        """One markdown table per benchmark: x down, one column per series."""
        parts = [f"# {self.name}\n"]
        for bench in self.benchmarks():
            axes = self.axes.get(bench, Axes("x", "y"))
            pts = [p for p in self.points if p.benchmark == bench]
            series = list(dict.fromkeys(p.series for p in pts))
            xs = sorted({p.x for p in pts})
            value = {(p.series, p.x): p.y for p in pts}
            parts.append(f"\n## {bench} ({axes.ylabel})\n\n")
            parts.append(f"| {axes.xlabel} | " + " | ".join(series) + " |\n")
            parts.append("|---" * (len(series) + 1) + "|\n")
            for x in xs:
                cells = [_number(value[(s, x)]) if (s, x) in value else "" for s in series]
                parts.append(f"| {_x_label(x, axes)} | " + " | ".join(cells) + " |\n")
        return "".join(parts)

    def write(self) -> list[Path]:
        """Write ``<name>.md`` and a ``<name>-<benchmark>.png`` per benchmark (when
        matplotlib imports) to ``out_dir``; returns the paths (none when disabled)."""
        if self.out_dir is None:
            return []
        self.out_dir.mkdir(parents=True, exist_ok=True)
        table = self.out_dir / f"{self.name}.md"
        table.write_text(self.markdown())
        return [table, *self._charts()]

    def _charts(self) -> list[Path]:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
            from matplotlib.ticker import MaxNLocator
        except ImportError:
            return []
        written = []
        for bench in self.benchmarks():
            axes = self.axes.get(bench, Axes("x", "y"))
            fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
            pts = [p for p in self.points if p.benchmark == bench]
            for series in dict.fromkeys(p.series for p in pts):
                line = sorted((p.x, p.y) for p in pts if p.series == series)
                ax.plot([x for x, _ in line], [y for _, y in line], marker="o", label=series)
            if axes.log2_x:
                ax.set_xscale("log", base=2)
            elif all(p.x.is_integer() for p in pts):
                ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_xlabel(axes.xlabel)
            ax.set_ylabel(axes.ylabel)
            ax.set_title(bench)
            ax.grid(True, alpha=0.3)
            ax.legend()
            fig.tight_layout()
            path = self.out_dir / f"{self.name}-{_slug(bench)}.png"  # type: ignore[operator]
            fig.savefig(path)
            plt.close(fig)
            written.append(path)
        return written


def _number(y: float) -> str:
    return f"{y:.4g}"


def _x_label(x: float, axes: Axes) -> str:
    if axes.log2_x and x > 0 and float(x).is_integer() and (int(x) & (int(x) - 1)) == 0:
        return f"2**{int(x).bit_length() - 1}"
    return f"{x:g}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()

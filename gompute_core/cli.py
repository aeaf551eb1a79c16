"""The ``gompute`` command: ``info``, ``doctor``, ``demo``, ``build``, ``bench``."""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from . import __version__
from .errors import GomputeError
from .plugins import manager
from .plugins.records import PLUGIN_API_VERSION

if TYPE_CHECKING:
    from .cli_kernels import Check

CPU_HINT = ("pip install gompute-cpu  (from a checkout: pip install ./backends/cpu) "
            "adds the CPU backend")


def _print_record(rec: manager.BackendRecord, out: TextIO) -> None:
    info = rec.info
    if info is None:
        print(f"{rec.name}: FAILED TO LOAD  [{rec.source}]", file=out)
        print(f"  error: {rec.error}", file=out)
        return
    print(f"{rec.name}: version {info.version}, plugin API {info.api_version}, "
          f"priority {info.priority}  [{rec.source}]", file=out)
    if info.description:
        print(f"  {info.description}", file=out)
    if rec.error:
        print(f"  refused: {rec.error}", file=out)
        return
    avail = manager.probe(rec.name)
    if avail.available:
        print("  available: yes", file=out)
    else:
        print(f"  available: no ({avail.reason})", file=out)
    print(f"  compiler: {avail.compiler or 'none found'}", file=out)
    for dev in avail.devices:
        mem = f", {dev.memory_bytes / 2**30:.1f} GiB" if dev.memory_bytes else ""
        print(f"  device {dev.ordinal}: {dev.name} (arch {dev.arch}{mem})", file=out)
    if info.unsupported_types:
        print(f"  unsupported types: {', '.join(info.unsupported_types)}", file=out)


def cmd_info(args: argparse.Namespace, out: TextIO) -> int:
    """List every installed backend with its availability."""
    print(f"gompute-core {__version__} (plugin API {PLUGIN_API_VERSION})", file=out)
    records = manager.backends()
    if not records:
        print("no backends installed", file=out)
        print(f"  {CPU_HINT}", file=out)
        return 0
    env = manager.env_order()
    if env is not None:
        print(f"{manager.ENV_BACKENDS}={','.join(env)}", file=out)
    for rec in records:
        _print_record(rec, out)
    return 0


def _print_check(check: Check, out: TextIO, verbose: bool) -> None:
    print(f"  {'PASS' if check.ok else 'FAIL'}  {check.title}", file=out)
    if verbose or not check.ok:
        print(f"        input:    {check.inputs}", file=out)
        print(f"        result:   {check.result}", file=out)
        print(f"        expected: {check.expected}", file=out)


def cmd_doctor(args: argparse.Namespace, out: TextIO) -> int:
    """Run a tiny map and sum on every available backend; 1 on any failure."""
    from .cli_kernels import doctor_checks

    failed = False
    tried = 0
    for rec in manager.backends():
        if not rec.loaded:
            print(f"{rec.name}: SKIP (not usable: {rec.error})", file=out)
            continue
        avail = manager.probe(rec.name)
        if not avail.available:
            print(f"{rec.name}: SKIP (unavailable: {avail.reason})", file=out)
            continue
        tried += 1
        print(f"{rec.name}:", file=out)
        for warning in avail.warnings:
            print(f"  WARN  {avail.compiler}: {warning}", file=out)
        try:
            checks = doctor_checks(rec.name)
        except Exception as exc:
            failed = True
            print(f"  FAIL  {type(exc).__name__}: {exc}", file=out)
            continue
        for check in checks:
            _print_check(check, out, args.verbose)
            failed = failed or not check.ok
    if tried == 0:
        print("no available backend to check", file=out)
        if not manager.backends():
            print(f"  {CPU_HINT}", file=out)
        return 1
    print("doctor: FAIL" if failed else "doctor: all checks passed", file=out)
    return 1 if failed else 0


def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    """Run the demo kernels on the default backend and compare with the oracle."""
    from .cli_kernels import demo_checks

    backend, checks = demo_checks()
    print(f"backend: {backend} (AutoKernel)", file=out)
    for check in checks:
        _print_check(check, out, True)
    bad = [c for c in checks if not c.ok]
    print("demo: FAIL" if bad else "demo: every result matches the Python oracle", file=out)
    return 1 if bad else 0


def _import_file(path: Path) -> dict[str, object]:
    name = f"gompute_build_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise GomputeError(f"{path}: not an importable Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return vars(module)


def cmd_build(args: argparse.Namespace, out: TextIO) -> int:
    """Compile every module-level spec of a file and write the artifacts."""
    from .raw.kernel import RawKernelDef
    from .runtime.compile import build, contracted, write_artifact
    from .specs import specs_in

    path = Path(args.kernels)
    if not path.is_file():
        print(f"gompute build: {path}: no such file", file=sys.stderr)
        return 2
    try:
        found = specs_in(_import_file(path))
    except Exception:
        print(f"gompute build: importing {path} failed:", file=sys.stderr)
        traceback.print_exc()
        return 1
    if not found:
        print(f"gompute build: {path} defines no spec at module level", file=sys.stderr)
        return 1
    written = 0
    for spec in found:
        if not isinstance(spec, RawKernelDef) and "entries" not in spec.kind_object.needs:
            # scan, elementwise: device programs of raw kernels the core writes at run time
            print(f"{spec.name}: skipped ({spec.kind}: its raw kernels compile on first "
                  "use)", file=out)
            continue
        if args.checked and (not isinstance(spec, RawKernelDef) or spec.source is not None):
            print(f"{spec.name}: skipped (--checked builds raw kernels written in Python; "
                  "specs run checked as raw kernels the core writes at run time)", file=out)
            continue
        try:
            options = tuple(args.option)
            built = build(spec, args.backend, args.arch, options, contract=args.contract,
                          checked=args.checked)
            artifact = built.artifact
            manifest = write_artifact(args.output, artifact,
                                      contracted(spec.lower(), args.contract, "build"), options,
                                      built.checked)
        except GomputeError as exc:
            print(f"gompute build: {spec.name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
        print(f"{spec.name}: {artifact.format} for {artifact.target} -> {manifest}", file=out)
        written += 1
    print(f"wrote {written} artifact(s) to {args.output}; run with "
          f"GOMPUTE_ARTIFACT_DIR={args.output}", file=out)
    return 0


def _bench_dirs() -> list[Path]:
    here = Path(__file__).resolve().parent.parent
    return [p / "bench" for p in (Path.cwd(), *Path.cwd().parents, here)]


def cmd_bench(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``bench/<target>.py`` from the repository, or say where the scripts live.

    With ``--out DIR`` the script's output is also saved as ``DIR/<target>.md``
    (after the tables and next to the charts the script writes through
    :class:`~gompute_core.benchreport.BenchReport`).
    """
    for directory in _bench_dirs():
        script = directory / f"{args.target}.py"
        if script.is_file():
            print(f"running {script}", file=out)
            out.flush()
            command = [sys.executable, str(script), *args.rest]
            if args.out is None:
                return subprocess.call(command)
            return _bench_to(Path(args.out), args.target, command, out)
    scripts = sorted({p.stem for d in _bench_dirs() if d.is_dir() for p in d.glob("*.py")})
    found = f" (found: {', '.join(scripts)})" if scripts else ""
    print(f"gompute bench: bench/{args.target}.py not found from {Path.cwd()}{found}. The "
          "benchmark scripts live in the repository's bench/ folder (they are not installed "
          "with the package): run this command from a checkout.", file=out)
    return 1


def _bench_to(folder: Path, target: str, command: list[str], out: TextIO) -> int:
    """Run ``command`` with ``$GOMPUTE_BENCH_OUT=folder``, echo and save its output."""
    from .benchreport import ENV_OUT

    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, ENV_OUT: str(folder)}
    lines: list[str] = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, env=env) as proc:
        assert proc.stdout is not None  # stdout=PIPE
        for line in proc.stdout:
            out.write(line)
            out.flush()
            lines.append(line)
    table = folder / f"{target}.md"
    head = table.read_text() if table.is_file() else f"# {target}\n"
    table.write_text(f"{head}\n## output of `{' '.join(command[1:])}`\n\n```\n"
                     f"{''.join(lines).rstrip()}\n```\n")
    charts = sorted(p.name for p in folder.glob(f"{target}-*.png"))
    print(f"wrote {table}" + (f" and {', '.join(charts)}" if charts else
                              " (no charts: the script records no points, or matplotlib is "
                              "missing: pip install 'gompute-core[plot]')"), file=out)
    return proc.returncode


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``gompute``."""
    parser = argparse.ArgumentParser(
        prog="gompute", description="Gompute: one scalar kernel, every backend.")
    parser.add_argument("--version", action="version", version=f"gompute-core {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="installed backends, versions, availability, devices")
    doctor = sub.add_parser("doctor", help="run a tiny kernel on every available backend")
    doctor.add_argument("-v", "--verbose", action="store_true", help="print every result")
    sub.add_parser("demo", help="run a few kernels on the default backend")
    build = sub.add_parser("build", help="compile every spec of a module ahead of time")
    build.add_argument("kernels", help="Python file defining specs at module level")
    build.add_argument("--backend", required=True, help="backend name (cpu, cuda, hip, ...)")
    build.add_argument("--arch", default=None,
                       help="target arch (sm_90, gfx90a, ...); default: the detected device's")
    build.add_argument("-o", "--output", required=True, help="output directory")
    build.add_argument("--option", action="append", default=[],
                       help="extra compiler option (repeatable)")
    build.add_argument("--contract", action="store_true",
                       help="allow floating-point contraction (fused multiply-add): results "
                            "may differ between backends")
    build.add_argument("--checked", action="store_true",
                       help="build the raw kernels in checked mode (bounds checks; loaded "
                            "with checked=True); specs are skipped")
    bench = sub.add_parser("bench", help="run the repository's benchmark script")
    bench.add_argument("target", nargs="?", default="cpu",
                       help="the script bench/TARGET.py of a checkout (cpu, cuda, "
                            "dask_cpu, ...; default cpu)")
    bench.add_argument("--out", metavar="DIR", default=None,
                       help="write the table (markdown) and, with matplotlib, a PNG chart "
                            "per benchmark to DIR")
    bench.add_argument("rest", nargs=argparse.REMAINDER, help="arguments for the script")
    certify = sub.add_parser("certify", help="run the conformance suite against a backend "
                                             "and judge it (exit 0 only when certified)")
    certify.add_argument("backend", help="installed backend name (cpu, opencl, ...)")
    certify.add_argument("--junit-xml", metavar="PATH", default=None,
                         help="write a JUnit XML report for CI")
    certify.add_argument("pytest_args", nargs=argparse.REMAINDER,
                         help="further pytest arguments (after --), e.g. -- -x")
    return parser


def cmd_certify(args: argparse.Namespace, out: TextIO) -> int:
    """Run the conformance suite against one backend: identity, tiers, verdict."""
    from .certify import certify

    extra = [a for a in args.pytest_args if a != "--"]
    return certify(args.backend, junit_xml=args.junit_xml, pytest_args=extra, out=out)


_COMMANDS = {"info": cmd_info, "doctor": cmd_doctor, "demo": cmd_demo, "build": cmd_build,
             "bench": cmd_bench, "certify": cmd_certify}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``gompute`` console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        return _COMMANDS[args.command](args, sys.stdout)
    except GomputeError as exc:
        print(f"gompute {args.command}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

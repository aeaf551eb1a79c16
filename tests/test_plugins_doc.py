"""``plugins.md`` executed: every code block in the guide runs, so it cannot rot.

Python blocks headed ``# file: NAME`` are written to that file (blocks naming one file are
joined in order); the other Python blocks run in order as one script in a fresh process
next to those files. TOML blocks are parsed and must declare the entry point the OpenCL
example declares. Shell blocks may only use ``gompute`` subcommands and options that exist.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from gompute_core.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "plugins.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks(lang: str) -> list[str]:
    """The guide's code blocks fenced as ``lang``, in order."""
    return [body for tag, body in FENCE.findall(GUIDE.read_text()) if tag == lang]


def test_the_guide_has_runnable_blocks() -> None:
    """The guide shows code in every format it documents (and the regex finds them)."""
    assert len(blocks("python")) >= 6 and blocks("toml") and blocks("bash")


def test_python_blocks_run(tmp_path: Path) -> None:
    """The complete example backend is written out and the script blocks run against it."""
    files: dict[str, str] = {}
    script = []
    for body in blocks("python"):
        first, _, rest = body.partition("\n")
        match = re.fullmatch(r"# file: (\S+)", first.strip())
        if match:
            files[match.group(1)] = files.get(match.group(1), "") + rest + "\n"
        else:
            script.append(body)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "guide.py").write_text("\n".join(script))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), *sys.path])
    env["GOMPUTE_CACHE_DIR"] = str(tmp_path / "cache")
    done = subprocess.run([sys.executable, "guide.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_toml_block_matches_the_example() -> None:
    """The pyproject shown declares the entry point the OpenCL example really declares."""
    (shown,) = blocks("toml")
    shown_eps = tomllib.loads(shown)["project"]["entry-points"]["gompute.backends"]
    real = tomllib.loads((ROOT / "examples/gompute-opencl/pyproject.toml").read_text())
    assert shown_eps == real["project"]["entry-points"]["gompute.backends"]
    assert tomllib.loads(shown)["project"]["name"] == real["project"]["name"]


@pytest.mark.parametrize("line", [ln for b in blocks("bash") for ln in b.splitlines()
                                  if ln.startswith("gompute ")])
def test_shell_commands_parse(line: str) -> None:
    """Every ``gompute`` command shown is accepted by the real argument parser."""
    build_parser().parse_args(shlex.split(line)[1:])

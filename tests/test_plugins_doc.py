"""``plugins.md`` executed: every code block in the guide runs, so it cannot rot.

Python blocks headed ``# file: NAME`` are written to that file (blocks naming one file are
joined in order); the other Python blocks run in order as one script in a fresh process
next to those files. TOML blocks are parsed and must declare the entry point the OpenCL
example declares. Shell blocks may only use ``gompute`` subcommands and options that exist.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shlex
import subprocess
import sys
import zipfile
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


def guide_code() -> tuple[dict[str, str], str]:
    """The guide's ``# file: NAME`` blocks joined per file, and the other Python blocks
    joined as one script."""
    files: dict[str, str] = {}
    script = []
    for body in blocks("python"):
        first, _, rest = body.partition("\n")
        match = re.fullmatch(r"# file: (\S+)", first.strip())
        if match:
            files[match.group(1)] = files.get(match.group(1), "") + rest + "\n"
        else:
            script.append(body)
    return files, "\n".join(script)


def test_python_blocks_run(tmp_path: Path) -> None:
    """The complete example backend is written out and the script blocks run against it."""
    files, script = guide_code()
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "guide.py").write_text(script)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), *sys.path])
    env["GOMPUTE_CACHE_DIR"] = str(tmp_path / "cache")
    done = subprocess.run([sys.executable, "guide.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def _wheel(out: Path, dist: str, modules: dict[str, str], entry_points: str) -> Path:
    """A pure-Python wheel of ``dist`` 0.1.0 holding ``modules`` (file name: text) and the
    ``entry_points.txt`` text."""
    info = f"{dist}-0.1.0.dist-info"
    files = {name: text.encode() for name, text in modules.items()}
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1.0\n".encode()
    files[f"{info}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: gompute-tests\n"
                              b"Root-Is-Purelib: true\nTag: py3-none-any\n")
    files[f"{info}/entry_points.txt"] = entry_points.encode()

    def line(path: str, data: bytes) -> str:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        return f"{path},sha256={digest},{len(data)}"

    files[f"{info}/RECORD"] = ("\n".join([*(line(p, d) for p, d in files.items()),
                                          f"{info}/RECORD,,"]) + "\n").encode()
    path = out / f"{dist}-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def test_the_complete_example_certifies(tmp_path: Path) -> None:
    """Section 8's backend, packaged as written (a wheel with a ``gompute.backends`` entry
    point) and pip-installed, is certified by ``gompute certify`` (for fewer capabilities:
    it declares no f16, streams, events or graphs). The whole conformance suite runs."""
    files, _ = guide_code()
    wheel = _wheel(tmp_path, "tinyc", {"tinyc.py": files["tinyc.py"]},
                   "[gompute.backends]\ntinyc = tinyc\n")
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--target", str(site), str(wheel)], check=True, capture_output=True)
    env = dict(os.environ, GOMPUTE_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(site), *sys.path]))
    env.pop("GOMPUTE_BACKENDS", None)
    extra = os.environ.get("GOMPUTE_GUIDE_CERTIFY_ARGS", "")  # e.g. "-k devices" to narrow
    # the fuzz tier's seed pinned as scripts/test.sh pins it: a fresh seed may draw a case
    # no backend change caused (a GCC fold found so is why the example needs -frounding-math)
    seed = f"--gompute-fuzz-seed={os.environ.get('GOMPUTE_FUZZ_SEED', '20261130')}"
    done = subprocess.run([sys.executable, "-m", "gompute_core.cli", "certify", "tinyc",
                           "--", seed, *shlex.split(extra)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=3000)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "CERTIFIED" in done.stdout and "NOT CERTIFIED" not in done.stdout, done.stdout


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


def test_sdk_reference_matches_all() -> None:
    """Section 9's table of ``gompute_core.backend`` names exactly its ``__all__``."""
    import gompute_core.backend as sdk

    text = GUIDE.read_text()
    start = text.index("### SDK reference: `gompute_core.backend`")
    table = text[start:text.index("\n### ", start + 1)]
    documented: list[str] = []
    for row in table.splitlines():
        if row.startswith("| `"):
            first = row.split(" | ")[0].lstrip("| ")
            documented += re.findall(r"`(\w+)`", first)
    assert sorted(documented) == sorted(sdk.__all__)
    for name in documented:
        getattr(sdk, name)  # each one really is there


def test_the_refusals_name_sections_that_exist() -> None:
    """The sections the API-version refusals send plugin authors to exist and say it."""
    from gompute_core.plugins import apishape

    text = GUIDE.read_text()
    assert "\n## 11. Porting a plugin from an earlier plugin API\n" in text
    assert apishape.PORTING_SECTION == ("plugins.md, section 11 "
                                        "'Porting a plugin from an earlier plugin API'")
    section4 = text[text.index("\n## 4. "):text.index("\n## 5. ")]
    assert "`api_version`" in section4 and "Stating `api_version`" in section4

"""Plugin isolation with real throwaway distributions (wheels pip-installed into a target).

Each broken plugin is a distribution of its own with a ``gompute.backends``
entry point: one declaring a newer plugin API, one whose import raises, one
raising in each of the four hooks, and two distributions claiming one name.
In a fresh process with them installed, ``gompute info`` reports each with
its reason, asking for each by name is a clear ``GomputeError`` naming it,
and the CPU backend keeps working.
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("gompute_cpu")

GOOD_PLUGIN = '''
from gompute_core.backend import Availability, BackendInfo, hookimpl

NAME, API, BROKEN = {name!r}, {api!r}, {broken!r}


def _maybe(hook):
    if BROKEN == hook:
        raise RuntimeError(f"{{NAME}} is broken in {{hook}}")


@hookimpl
def gompute_backend_info():
    _maybe("gompute_backend_info")
    return BackendInfo(NAME, "0.1", API or 3, 1, ("map",))


@hookimpl
def gompute_probe():
    _maybe("gompute_probe")
    return Availability(NAME, True)


@hookimpl
def gompute_compiler():
    _maybe("gompute_compiler")
    raise RuntimeError("no compiler in this test plugin")


@hookimpl
def gompute_device(ordinal):
    _maybe("gompute_device")
    raise RuntimeError("no device in this test plugin")
'''

API1_PLUGIN = '''
from gompute_core.backend import PLUGIN_API_VERSION, Availability, BackendInfo, hookimpl

NAME = {name!r}


@hookimpl
def gompute_backend_info():
    return BackendInfo(NAME, "0.1", {api}, 1, ("map",))


@hookimpl
def gompute_probe(backend):
    return Availability(NAME, True) if backend == NAME else None


@hookimpl
def gompute_compile(request):
    raise RuntimeError("an API 1 plugin must never be asked to compile")


@hookimpl
def gompute_device(backend, ordinal):
    raise RuntimeError("an API 1 plugin must never be asked for a device")
'''

ECHO_PLUGIN = GOOD_PLUGIN.replace("API or 3", "PLUGIN_API_VERSION").replace(
    "import Availability", "import PLUGIN_API_VERSION, Availability")

PLUGINS = {
    # distribution: (entry point name, module source)
    "gp-newer": ("newer", GOOD_PLUGIN.format(name="newer", api=99, broken="")),
    # the current hooks, declaring the previous API (launchers of API 2 took (grid, stream))
    "gp-api2": ("apitwo", GOOD_PLUGIN.format(name="apitwo", api=2, broken="")),
    "gp-noimport": ("noimport", "raise ImportError('gp-noimport needs libnothing.so')\n"),
    "gp-badinfo": ("badinfo", GOOD_PLUGIN.format(name="badinfo", api=0,
                                                 broken="gompute_backend_info")),
    "gp-badprobe": ("badprobe", GOOD_PLUGIN.format(name="badprobe", api=0,
                                                   broken="gompute_probe")),
    "gp-badcompiler": ("badcompiler", GOOD_PLUGIN.format(name="badcompiler", api=0,
                                                         broken="gompute_compiler")),
    "gp-baddevice": ("baddevice", GOOD_PLUGIN.format(name="baddevice", api=0,
                                                     broken="gompute_device")),
    # written for API 1, declaring 1 as a literal, and echoing the core's version
    "gp-api1": ("apione", API1_PLUGIN.format(name="apione", api="1")),
    "gp-api1-echo": ("apiecho", API1_PLUGIN.format(name="apiecho", api="PLUGIN_API_VERSION")),
    # the current hooks, but the version echoed from the core instead of stated
    "gp-echo": ("echo", ECHO_PLUGIN.format(name="echo", api=0, broken="")),
    "gp-twin-a": ("twin", GOOD_PLUGIN.format(name="twin", api=0, broken="")),
    "gp-twin-b": ("twin", GOOD_PLUGIN.format(name="twin", api=0, broken="")),
}


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def build_wheel(out: Path, dist: str, ep_name: str, source: str) -> Path:
    """A pure-Python wheel of ``dist`` holding one module and one entry point."""
    module = dist.replace("-", "_") + "_plugin"
    info = f"{dist.replace('-', '_')}-0.1.dist-info"
    files = {
        f"{module}.py": source.encode(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: gompute-tests\n"
                         b"Root-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": f"[gompute.backends]\n{ep_name} = {module}\n".encode(),
    }
    record = "\n".join([*(_record_line(p, d) for p, d in files.items()),
                        f"{info}/RECORD,,"]) + "\n"
    files[f"{info}/RECORD"] = record.encode()
    path = out / f"{dist.replace('-', '_')}-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory the throwaway distributions are pip-installed into."""
    root = tmp_path_factory.mktemp("isolation")
    wheels = [build_wheel(root, dist, ep, src) for dist, (ep, src) in PLUGINS.items()]
    target = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--target", str(target), *map(str, wheels)], check=True,
                   capture_output=True, text=True)
    return target


def _python(site: Path, code: str) -> subprocess.CompletedProcess[str]:
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), *sys.path])
    env.pop("GOMPUTE_BACKENDS", None)
    script = site.parent / "script.py"  # a file: kernel functions need their source
    script.write_text(textwrap.dedent(code))
    return subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=300)


def test_gompute_info_reports_each(site: Path) -> None:
    """``gompute info`` lists every broken plugin with its reason, and the CPU as usable."""
    done = _python(site, "import sys; from gompute_core.cli import main; sys.exit(main(['info']))")
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "plugin API version 99" in out
    assert "import failed: ImportError: gp-noimport needs libnothing.so" in out
    assert "gompute_backend_info failed: RuntimeError: badinfo is broken" in out
    assert "probe raised RuntimeError: badprobe is broken in gompute_probe" in out
    assert "backend name 'twin' is already provided by" in out
    assert out.count(API1_REFUSAL) == 2 and ECHO_REFUSAL in out
    assert "hookspec" not in out  # never pluggy's own signature error
    cpu = out[out.index("cpu:"):]
    assert "available: yes" in cpu.split("\n\n")[0]


API1_REFUSAL = ("the plugin was written for plugin API 1 (it implements gompute_compile(request)); "
                "this gompute-core implements plugin API 3: port it as plugins.md, section 11 "
                "'Porting a plugin from an earlier plugin API' describes")
API2_REFUSAL = ("the plugin implements plugin API version 2; this gompute-core expects API "
                "version 3 (port it as plugins.md, section 11 'Porting a plugin from an "
                "earlier plugin API' describes)")
ECHO_REFUSAL = ("gompute_backend_info sets api_version from the core's PLUGIN_API_VERSION, "
                "which always equals the installed core's version, so a mismatch could never "
                "be detected: write the plugin API version the plugin was written for as a "
                "number (api_version=3 for this core), see plugins.md, section 4")

EXPECTED = {
    "newer": ("BackendUnavailable", "plugin API version 99"),
    "noimport": ("BackendUnavailable", "gp-noimport needs libnothing.so"),
    "badinfo": ("BackendUnavailable", "badinfo is broken in gompute_backend_info"),
    "badprobe": ("BackendUnavailable", "badprobe is broken in gompute_probe"),
    "badcompiler": ("BackendUnavailable", "badcompiler is broken in gompute_compiler"),
    "baddevice": ("BackendUnavailable", "baddevice is broken in gompute_device"),
    "twin": ("BackendUnavailable", "uninstall one of them"),
    "apione": ("BackendUnavailable", API1_REFUSAL),
    "apiecho": ("BackendUnavailable", API1_REFUSAL),
    "echo": ("BackendUnavailable", ECHO_REFUSAL),
    "apitwo": ("BackendUnavailable", API2_REFUSAL),
}


def test_each_is_a_clear_error_by_name_and_cpu_keeps_working(site: Path) -> None:
    """``g.Kernel(spec, name)`` for each broken plugin raises a GomputeError naming the
    cause; the CPU backend computes in the same process, before and after."""
    code = f"""
        import numpy as np
        import gompute_core as g

        def inc(x):
            return x + g.f32(1)

        spec = g.map("isolation_inc", g.f32, None, inc)
        assert (g.Kernel(spec, "cpu").run(np.zeros(4, np.float32)) == 1).all()
        for name, (kind, text) in {EXPECTED!r}.items():
            try:
                if name == "badcompiler":  # compiling needs no device
                    g.compile(spec, name, arch="any")
                else:
                    g.Kernel(spec, name)
            except g.GomputeError as exc:
                assert type(exc).__name__ == kind, (name, exc)
                assert text in str(exc), (name, str(exc))
            else:
                raise AssertionError(name + " did not raise")
        assert (g.Kernel(spec, "cpu").run(np.ones(4, np.float32)) == 2).all()
        print("ok")
    """
    done = _python(site, code)
    assert done.returncode == 0 and "ok" in done.stdout, done.stdout + done.stderr

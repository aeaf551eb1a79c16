"""Tier ``compile``: compiler errors carry the log; arch is checked; no device needed."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

import gompute_core as g

from ._support import mark
from .kernels_tiers import TWICE

TIER = "compile"
pytestmark = mark(types=("f32",))

BROKEN = "\n@@@ gompute_certify_broken ( ] ;\n"
"""Appended to a rendered source: invalid in every language a backend compiles."""


def test_compile_failed_carries_the_log(gompute_backend: str) -> None:
    """Source the compiler rejects is ``CompileFailed`` (from ``build``, or from loading
    when the backend compiles at load) with the compiler's complaint in the message."""
    from gompute_core.plugins import manager
    from gompute_core.plugins.records import Artifact

    compiler = manager.compiler(gompute_backend)
    device = manager.open_device(gompute_backend, 0)
    kir = TWICE.lower()
    source = compiler.render(kir, device.arch) + BROKEN
    with pytest.raises(g.CompileFailed) as info:
        built = compiler.build(source, kir, device.arch, ())
        device.program(Artifact(backend=gompute_backend, image=built.image,
                                format=built.format, entry=built.entry or kir.name,
                                target=device.arch, source=source, digest=kir.digest(),
                                kind=kir.kind), kir)
    message = str(info.value)
    assert "error" in message.lower() and len(message.splitlines()) + len(message) > 40, \
        f"CompileFailed without the compiler's log: {message!r}"


def test_unknown_arch_is_invalid_argument(gompute_backend: str) -> None:
    """``g.compile`` for an arch no device of the backend has is ``InvalidArgument``."""
    with pytest.raises(g.InvalidArgument, match="arch"):
        g.compile(TWICE, gompute_backend, arch="gompute-no-such-arch-0")


def test_compile_with_an_arch_and_no_device(gompute_backend: str, gompute_info: Any) -> None:
    """In a fresh process, ``g.compile`` for the probed arch opens no device."""
    from gompute_core.plugins import manager

    avail = manager.probe(gompute_backend)
    if not avail.devices:
        pytest.skip(f"{gompute_backend} reports no device to take an arch from")
    code = (
        "import gompute_core as g\n"
        "from gompute_core.plugins import manager\n"
        "from gompute_core.testing.kernels_tiers import TWICE\n"
        f"art = g.compile(TWICE, {gompute_backend!r}, arch={avail.devices[0].arch!r})\n"
        "assert art.image, 'empty image'\n"
        "opened = list(manager._registry().devices)\n"
        "assert not opened, f'devices opened to compile: {opened}'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr

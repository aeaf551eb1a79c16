"""Raw kernels rendered, compiled, loaded and launched by each C-family backend, checked
against NumPy (``tests/raw_examples.py``): OpenCL runs here (PoCL); CUDA, HIP and
``hip_nvrtc`` (HIP source through NVRTC on an NVIDIA GPU) where their devices exist.

The launch goes through the device contract directly (``_load`` and a
:class:`~gompute_core.backend.ArgBuffer` packed as the core packs it), so these
tests check each backend's half of raw kernels on its own.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from raw_examples import EXAMPLES

from gompute_core.abi import pack
from gompute_core.backend import ArgBuffer, signature_layout
from gompute_core.compilation import compile_artifact
from gompute_core.errors import BackendUnavailable, UnsupportedBackend
from gompute_core.ir.nodes import PointerType, StructType
from gompute_core.plugins import manager
from gompute_core.plugins.records import CompileRequest

BACKENDS = ("opencl", "cuda", "hip", "hip_nvrtc")
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "gompute-opencl"


@pytest.fixture(scope="module", autouse=True)
def registry() -> Iterator[None]:
    """The installed backends, plus the OpenCL example and ``hip_nvrtc`` registered in
    process where they import (a fresh registry, restored afterwards)."""
    with manager.isolated(discover=True):
        names = {r.name for r in manager.backends()}
        if "opencl" not in names:
            sys.path.insert(0, str(EXAMPLE))
            try:
                from gompute_opencl import plugin
            except ImportError:
                plugin = None
            finally:
                sys.path.remove(str(EXAMPLE))
            if plugin is not None:
                manager.register(plugin, "opencl")
        try:
            from hip_on_cuda.on_nvrtc import register
        except ImportError:
            pass
        else:
            register()
        yield


def _device_or_skip(backend: str) -> Any:
    try:
        avail = manager.probe(backend)
    except (UnsupportedBackend, BackendUnavailable) as exc:
        pytest.skip(f"{backend}: {exc}")
    if not avail.available:
        pytest.skip(f"{backend} unavailable: {avail.reason}")
    return manager.open_device(backend, 0)


def _dim3(v: Any) -> tuple[int, int, int]:
    t = v if isinstance(v, tuple) else (v,)
    return (*t, *(1,) * (3 - len(t)))  # type: ignore[return-value]


def run_raw(backend: str, kernel: Any, grid: Any, block: Any, shared: int,
            values: list[Any]) -> list[Any]:
    """Launch raw ``kernel`` on ``backend``'s device 0 with ``values`` (host arrays for its
    pointers, copied in and out); the values after the launch."""
    device = _device_or_skip(backend)
    kir = kernel.lower()
    artifact = compile_artifact(CompileRequest(backend, kir, device.arch))
    args = ArgBuffer(signature_layout(kernel.signature))
    launcher = device._load(artifact, kir, args)
    buffers, packed, params = [], [], b""
    for (_, t), v in zip(kernel.signature, values, strict=True):
        if isinstance(t, PointerType):
            buf = device.alloc(max(v.nbytes, 1))
            buf.upload(v)
            buffers.append(buf)
            packed.append(buf.addr)
        elif isinstance(t, StructType):
            params = pack(v)
        else:
            packed.append(v.item())
    args.pack(*packed)
    args.set_params(params)
    launcher(_dim3(grid), _dim3(block), shared, device.stream)
    device.synchronize()
    out, it = [], iter(buffers)
    for (_, t), v in zip(kernel.signature, values, strict=True):
        if isinstance(t, PointerType):
            host = np.empty_like(v)
            next(it).download(host)
            out.append(host)
        else:
            out.append(v)
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_raw_example_matches_numpy(backend: str, name: str) -> None:
    example = EXAMPLES[name]
    grid, block, shared, values = example.setup(np.random.default_rng(7))
    if name == "atomics":
        device = _device_or_skip(backend)
        if not device.has("f64_atomics"):
            pytest.skip(f"{backend}: no f64_atomics")
    out = run_raw(backend, example.kernel, grid, block, shared, values)
    example.check(values, out)


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_pointers_to_one_buffer_alias(backend: str) -> None:
    """One buffer passed for two pointers: no ``restrict`` lets the compiler assume
    otherwise (every element doubled in place, not read stale)."""
    example = EXAMPLES["add_pair"]
    x = np.arange(1000, dtype=np.float32)
    device = _device_or_skip(backend)
    kir = example.kernel.lower()
    artifact = compile_artifact(CompileRequest(backend, kir, device.arch))
    args = ArgBuffer(signature_layout(example.kernel.signature))
    launcher = device._load(artifact, kir, args)
    buf = device.alloc(x.nbytes)
    buf.upload(x)
    args.pack(buf.addr, buf.addr, buf.addr, 1000)
    launcher((8, 1, 1), (128, 1, 1), 0, device.stream)
    device.synchronize()
    got = np.empty_like(x)
    buf.download(got)
    np.testing.assert_array_equal(got, 2 * x)

"""The CUDA backend's driver table (ctypes over ``libcuda``) through the core's GPU layer,
without a GPU.

Nothing real runs the CUDA driver here, so a fake ``libcuda.so.1``
(``tests/fake_libcuda/fake_libcuda.c``: the driver calls ``gompute_cuda`` makes, on host
memory, counting what is alive; its one "kernel" adds 1 to the floats at the first two
packed arguments, as a map of ``x + 1`` does) is selected for a subprocess by
``LD_LIBRARY_PATH``. It checks the table's calling conventions (argument types, answers
through pointers, handles as ``c_void_p``, ``CUresult`` errors), the launch's packed
``extra`` array, the context policy and the lifetimes; the kernels themselves are the
GPU's to check (``tests/test_gpu_runtime.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("gompute_cuda")

HERE = Path(__file__).resolve().parent
SMOKE_KERNEL = '''
import gompute_core as g

def inc(x):
    return x + 1

SPEC = g.map("fake_driver_inc", g.f32, None, inc)
'''


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The fake driver built, the kernel compiled into a fresh cache (NVRTC runs here,
    without the fake), and the environment that selects both for a subprocess."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler to build the fake libcuda")
    root = tmp_path_factory.mktemp("fake_libcuda")
    subprocess.run([cc, "-shared", "-fPIC", "-Wall", "-Werror", "-o",
                    str(root / "libcuda.so.1"), str(HERE / "fake_libcuda" / "fake_libcuda.c")],
                   check=True)
    (root / "fake_kernel.py").write_text(SMOKE_KERNEL)
    env = dict(os.environ, GOMPUTE_CACHE_DIR=str(root / "cache"),
               LD_LIBRARY_PATH=os.pathsep.join([str(root), os.environ.get("LD_LIBRARY_PATH", "")]))
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
    compile_env = dict(env, LD_LIBRARY_PATH=os.environ.get("LD_LIBRARY_PATH", ""))
    code = ("import gompute_core as g, fake_kernel; "
            "g.compile(fake_kernel.SPEC, 'cuda', arch='sm_90')")
    proc = subprocess.run([sys.executable, "-c", code], env=compile_env, capture_output=True,
                          text=True)
    if proc.returncode:
        pytest.skip(f"no NVRTC to compile the kernel: {proc.stderr[-300:]}")
    return env


def _run(env: dict[str, str], body: str) -> str:
    code = textwrap.dedent('''
        import ctypes, gc, threading
        import numpy as np
        import gompute_core as g
        from gompute_core.plugins import manager
        from fake_kernel import SPEC
        fake = ctypes.CDLL("libcuda.so.1")
        def count(name):
            return ctypes.c_int.in_dll(fake, name).value
    ''') + textwrap.dedent(body)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_probe_and_device_properties_come_from_the_driver(env: dict[str, str]) -> None:
    out = _run(env, '''
        avail = manager.probe("cuda")
        print(avail.available, [(d.name, d.arch, d.memory_bytes) for d in avail.devices])
        dev = manager.open_device("cuda", 1)
        print(dev, dev.max_shared_bytes, dev.max_argument_bytes, dev.fp64_ratio(),
              dev.max_grid_blocks(256))
    ''')
    probe, device = out.splitlines()
    assert probe == ("True [('Fake GPU 0', 'sm_90', 17179869184), "
                     "('Fake GPU 1', 'sm_90', 17179869184)]")
    # the opt-in shared maximum; 32,764 argument bytes (CUDA 13, sm_90); 8 waves of
    # 132 SMs x 2048 / 256 threads
    assert device == "<CudaDevice 1: Fake GPU 1 (sm_90)> 232448 32764 0.5 8448"


def test_run_and_launch_pass_the_packed_arguments_in_our_context(env: dict[str, str]) -> None:
    out = _run(env, '''
        with g.Kernel(SPEC, "cuda") as k:
            x = np.arange(5000, dtype=np.float32)
            want = x + 1
            k.run(x)
            assert (x == want).all(), x[:4]
            big = np.zeros(1 << 21, np.float32)  # page-locked, pipelined on two streams
            k.run(big)
            assert (big == 1).all()
            buf = k.alloc(1000)
            buf.fill(0)
            k.launch(buf, 1000)
            ctypes.c_int.in_dll(fake, "refuse_next_launch").value = 1  # context replaced
            k.launch(buf, 1000)
            worker = threading.Thread(target=lambda: k.launch(buf, 1000))
            worker.start()
            worker.join()
            out = np.empty(1000, np.float32)
            buf.download(out)
            print((out == 3).all(), g.last_driver_error())
    ''')
    assert out.split() == ["True", "None"]


def test_raw_launcher_opts_in_to_the_shared_memory_maximum(env: dict[str, str]) -> None:
    out = _run(env, '''
        from gompute_core.backend import ArgBuffer, signature_layout
        from gompute_core.ir.nodes import PointerType
        art = g.compile(SPEC, "cuda", arch="sm_90")
        dev = manager.open_device("cuda", 0)
        args = ArgBuffer(signature_layout((("x", PointerType(g.f32)), ("n", g.u64))))
        launch = dev._load(art, None, args)  # cuFuncSetAttribute refuses another size
        buf = dev.alloc(400)
        buf.fill(0)
        args.pack(buf.addr, 100)
        launch((1, 1, 1), (128, 1, 1), 0, dev.stream)
        out = np.empty(100, np.float32)
        buf.download(out)
        print((out == 1).all())
    ''')
    assert out.split() == ["True"]


def test_every_native_object_is_released_once(env: dict[str, str]) -> None:
    out = _run(env, '''
        dev = manager.open_device("cuda", 0)
        base = count("live_streams"), count("live_allocations")
        s, e1, e2 = dev.create_stream(), dev.create_event(), dev.create_event(timing=False)
        e1.record(s)
        e2.record(s)
        print(e2.elapsed_us(e1), s.query(), e2.query())
        s.begin_capture()
        gr = s.end_capture()
        exe = gr.instantiate()
        exe.launch(s)
        exe.update(gr)
        zero = dev.alloc(0)
        pinned = dev.pinned(100, np.float32)
        print(zero.addr != 0, count("live_graphs"), count("live_events"))
        zero.free()
        zero.free()
        del s, e1, e2, gr, exe, pinned
        gc.collect()
        print((count("live_streams"), count("live_allocations")) == base,
              count("live_graphs"), count("live_events"))
        kept = [dev.alloc(64), dev.create_stream(), dev.create_event()]
        dev.load_module(b"image")
        dev.close()
        print(count("live_streams"), count("live_events"), count("live_modules"),
              count("live_allocations"), dev.live_objects)
    ''')
    timing, alive, released, closed = out.splitlines()
    assert timing == "1500.0 False True"  # 1.5 ms; the fake stream is never done
    assert alive == "True 2 2"
    assert released == "True 0 0"
    assert closed == "0 0 0 0 0"


def test_interop_and_peer_copies(env: dict[str, str]) -> None:
    out = _run(env, '''
        dev0, dev1 = manager.open_device("cuda", 0), manager.open_device("cuda", 1)
        a = dev0.alloc(64)
        a.dtype = np.dtype(np.float32)
        cai = a.__cuda_array_interface__
        print(cai["data"] == (a.addr, False), cai["stream"] == dev0.stream.address,
              a.__dlpack_device__(), dev0.pointer_ordinal(a.addr))
        a.__dlpack__(stream=0x1234)  # an event recorded on ours, waited for on theirs
        b = dev1.alloc(64)
        b.upload(np.full(16, 5, np.float32))
        a.copy_from(b)  # the fake refuses a peer copy within one context
        out = np.empty(16, np.float32)
        a.download(out)
        print((out == 5).all())
    ''')
    assert out.splitlines() == ["True True (2, 0) 0", "True"]

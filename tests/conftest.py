"""Repository test options.

``--hip-on-cuda=DIR``: run this session's HIP tests on the hip_on_cuda fixture built in
DIR (``tests/hip_on_cuda/README.md``). The fixture is checked to export every function
``gompute_hip`` calls, then selected through ``GOMPUTE_HIP_LIBDIR`` for this process and
the subprocesses the tests start; a fixture that is incomplete or not what gompute_hip
would load stops the session before any test runs.

Items that run OpenCL (their node id names ``opencl``) get the ``opencl`` marker:
``scripts/test.sh`` runs them in a process of their own (``-m opencl``, the rest with
``-m "not opencl"``), because the PoCL that works on this project's machines (Debian's
3.1, see ``examples/gompute-opencl/install-pocl.sh``) and Debian's ROCm 5.2 comgr, which
the HIP tests load, each carry clang 15 over one shared libLLVM-15: in one process the
second to load aborts it ("Option 'limited-coverage-experimental' registered more than
once").
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--hip-on-cuda=DIR``."""
    parser.addoption("--hip-on-cuda", metavar="DIR", default=None,
                     help="run the HIP backend on the hip_on_cuda fixture built in DIR "
                          "(tests/hip_on_cuda/README.md)")


def pytest_configure(config: pytest.Config) -> None:
    """Declare the ``opencl`` marker; select the fixture before any test module looks for a
    HIP library."""
    config.addinivalue_line("markers", "opencl: runs OpenCL (scripts/test.sh runs these "
                            "in a process of their own)")
    libdir = config.getoption("--hip-on-cuda")
    if not libdir:
        return
    from hip_on_cuda.fixture import FixtureError, check_selected, select

    try:
        check_selected(select(libdir))
    except FixtureError as exc:
        raise pytest.UsageError(f"--hip-on-cuda: {exc}") from exc


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every item whose node id names ``opencl`` (file or parameter) ``opencl``."""
    for item in items:
        if "opencl" in item.nodeid:
            item.add_marker(pytest.mark.opencl)

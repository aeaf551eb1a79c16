"""Repository test options.

``--hip-on-cuda=DIR``: run this session's HIP tests on the hip_on_cuda fixture built in
DIR (``tests/hip_on_cuda/README.md``). The fixture is checked to export every function
``gompute_hip`` calls, then selected through ``GOMPUTE_HIP_LIBDIR`` for this process and
the subprocesses the tests start; a fixture that is incomplete or not what gompute_hip
would load stops the session before any test runs.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--hip-on-cuda=DIR``."""
    parser.addoption("--hip-on-cuda", metavar="DIR", default=None,
                     help="run the HIP backend on the hip_on_cuda fixture built in DIR "
                          "(tests/hip_on_cuda/README.md)")


def pytest_configure(config: pytest.Config) -> None:
    """Select the fixture before any test module looks for a HIP library."""
    libdir = config.getoption("--hip-on-cuda")
    if not libdir:
        return
    from hip_on_cuda.fixture import FixtureError, check_selected, select

    try:
        check_selected(select(libdir))
    except FixtureError as exc:
        raise pytest.UsageError(f"--hip-on-cuda: {exc}") from exc

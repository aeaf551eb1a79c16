"""pytest11 entry point: registers ``--gompute-backend`` (loaded in every pytest run, so it
stays import-light: no numba, no driver)."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--gompute-backend=NAME`` (default: ``cpu``)."""
    parser.addoption(
        "--gompute-backend", action="store", default="cpu",
        help="backend the Gompute conformance suite runs against (default: cpu)",
    )

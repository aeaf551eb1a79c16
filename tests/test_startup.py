"""Discovery loads every installed plugin but no GPU driver binding (``bench/startup.py``
measures the time; this checks what was imported, which does not depend on load)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
try:
    from startup import DISCOVER, DRIVERS
finally:
    sys.path.pop(0)


def test_discovery_initialises_no_gpu_driver() -> None:
    """After ``import gompute_core`` and building the registry, no driver module is loaded."""
    out = subprocess.run([sys.executable, "-c", DISCOVER], check=True, capture_output=True,
                         text=True, timeout=120).stdout
    info = json.loads(out)
    assert "cpu" in info["backends"]
    assert info["drivers"] == [], f"discovery imported {info['drivers']} (of {DRIVERS})"

"""Tier ``names``: reserved words of C-family targets as kernel and params field names.

Every kernel of :data:`~.kernels_tiers.RESERVED_SPECS` is named after a
keyword or built-in of some target and reads params fields named after
others; a renderer mangles them (``CRenderer.reserved_words``) and the
result must match the oracle.
"""

from __future__ import annotations

import numpy as np
import pytest

import gompute_core as g

from ._support import assert_bits, mark, scalar_oracle
from .kernels_tiers import RESERVED_NAMES, RESERVED_SPECS, Reserved, reserved_body

TIER = "names"
pytestmark = mark(types=("f32", "i32"))


@pytest.mark.parametrize("name", RESERVED_NAMES)
def test_reserved_names(name: str, gompute_backend: str) -> None:
    """The kernel runs, and reads each oddly named field at its offset."""
    fields = list(Reserved.__annotations__)
    values = {f: (i + 1) * (0.5 if Reserved.__annotations__[f] is g.f32 else 1)
              for i, f in enumerate(fields)}
    p = Reserved(**values)
    data = np.linspace(-4, 4, 300, dtype=np.float32)
    with g.Kernel(RESERVED_SPECS[name], gompute_backend) as k:
        got = k.run(data.copy(), p)
    want = scalar_oracle(reserved_body, [data], [p], np.float32)
    assert_bits(got, want, context=f"kernel {name!r}")

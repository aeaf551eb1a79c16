"""Host-side view of the entry points' C ABI (see ``gompute_core.ir.kernel``)."""

from __future__ import annotations

import numpy as np

from gompute_core.codegen.entries import UNROLL, has_params
from gompute_core.ir.kernel import ENTRY_ARGS, KernelIR


def arg_layout(kernel: KernelIR) -> tuple[str, int, int]:
    """``(struct format of the leading args, params offset or -1, total bytes)``."""
    lead = len(ENTRY_ARGS[kernel.kind])  # 8 bytes each
    fmt = "Q" * lead
    if not has_params(kernel):
        return fmt, -1, 8 * lead
    layout = kernel.params.layout  # type: ignore[union-attr]
    offset = -(-8 * lead // layout.align) * layout.align
    return fmt, offset, offset + layout.size


def lanes_of(kernel: KernelIR) -> int:
    """Elements per 16-byte vector in the elementwise entry (1 for gather/scatter)."""
    if kernel.kind in ("gather", "scatter"):
        return 1
    widest = max(np.dtype(t).itemsize for role, t in kernel.value_types if role != "Idx")
    return 16 // widest


def elements_per_block(kernel: KernelIR) -> int:
    """Elements one block covers in one unrolled step (sizes the grid for small counts)."""
    return kernel.block_size * lanes_of(kernel) * (UNROLL if kernel.kind != "gather" else 1)

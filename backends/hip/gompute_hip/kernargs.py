"""The kernarg segment of each entry point: argument offsets per the C ABI table, and packing.

The AMDGPU kernarg segment lays the explicit arguments out as a C struct
would: each at the next multiple of its alignment (pointers and ``u64`` 8
bytes, the params struct its own alignment). The launch passes this buffer
whole (``HIP_LAUNCH_PARAM_BUFFER_POINTER``), so the layout computed here must
equal the one the compiler chose: the tests compare it with the code
object's metadata for every conformance kernel.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Literal

from gompute_core.codegen.entries import has_params
from gompute_core.ir.kernel import ENTRY_ARGS, KernelIR

SlotKind = Literal["pointer", "u64", "params"]

@dataclass(frozen=True)
class Slot:
    """One explicit kernel argument: its name, what it is, offset and size in bytes."""

    name: str
    kind: SlotKind
    offset: int
    size: int


@dataclass(frozen=True)
class KernargLayout:
    """The explicit arguments of one entry point and the segment size they occupy."""

    slots: tuple[Slot, ...]
    size: int  # the explicit kernarg segment: end of the last argument, rounded up to 4
    align: int

    def packer(self) -> struct.Struct:
        """A ``struct.Struct`` packing the values in slot order (params as raw bytes)."""
        fmt, pos = "<", 0
        for s in self.slots:
            if s.offset > pos:
                fmt += f"{s.offset - pos}x"
            fmt += "Q" if s.kind != "params" else f"{s.size}s"
            pos = s.offset + s.size
        if self.size > pos:
            fmt += f"{self.size - pos}x"
        return struct.Struct(fmt)


def _round_up(value: int, align: int) -> int:
    return -(-value // align) * align


def kernarg_layout(kernel: KernelIR) -> KernargLayout:
    """The kernarg layout of the entry point (the C ABI table of ``gompute_core.ir.kernel``)."""
    slots: list[Slot] = []
    pos, align = 0, 8
    args = list(ENTRY_ARGS[kernel.kind])
    for name, kind in args:
        pos = _round_up(pos, 8)
        slots.append(Slot(name, kind, pos, 8))
        pos += 8
    if has_params(kernel):
        layout = kernel.params.layout  # type: ignore[union-attr]
        pos = _round_up(pos, layout.align)
        slots.append(Slot("p", "params", pos, layout.size))
        pos += layout.size
        align = max(align, layout.align)
    return KernargLayout(tuple(slots), _round_up(pos, 4), align)  # LLVM rounds to a dword

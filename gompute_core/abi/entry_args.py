"""The entry point's argument buffer: one layout for every kernel and every backend.

An entry point's arguments, spec or raw, are laid out as a C struct
(:func:`arg_layout`): a raw kernel's in signature order (a pointer 8 bytes, a
scalar its size at its alignment, the params record its struct layout); a spec
kernel's the leading arguments of its kind's ``entry_args``
(:class:`~gompute_core.kinds.base.Kind`; device pointers and ``u64`` counts, 8
bytes each) and then, when the kernel has a non-empty params struct, the struct
itself at its alignment. GPU drivers take such a buffer whole (CUDA's
``CU_LAUNCH_PARAM_BUFFER_POINTER``, HIP's ``HIP_LAUNCH_PARAM_BUFFER_POINTER``), so
the core lays it out once (:class:`ArgLayout`) and keeps one :class:`ArgBuffer` per
loaded kernel, patched in place on each launch (no allocation on the hot path).
"""

from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass
from typing import Literal

from ..ir.kernel import RAW, KernelIR

SlotKind = Literal["pointer", "scalar", "params"]


def has_params(kernel: KernelIR) -> bool:
    """True when the entry point takes the params struct (absent or empty: no argument)."""
    return kernel.params is not None and kernel.params.layout.size > 0  # type: ignore[attr-defined]


def _round_up(value: int, align: int) -> int:
    return -(-value // align) * align


@dataclass(frozen=True)
class Slot:
    """One explicit argument of an entry point: name, kind, byte offset, size and ``code``
    (a pointer's or scalar's ``struct`` format character; empty for the params struct).
    A spec entry's ``u64`` count is a ``"scalar"`` slot of code ``"Q"``."""

    name: str
    kind: SlotKind
    offset: int
    size: int
    code: str = "Q"


@dataclass(frozen=True)
class ArgLayout:
    """The explicit arguments of one entry point laid out as a C struct.

    ``size`` is the end of the last argument; ``align`` the largest
    alignment. A driver that wants the size rounded (AMDGPU rounds the
    kernarg segment to 4 bytes) rounds it itself (:meth:`padded_size`).
    """

    slots: tuple[Slot, ...]
    size: int
    align: int

    @property
    def params_offset(self) -> int:
        """Byte offset of the params struct, or -1 when the entry takes none."""
        return next((s.offset for s in self.slots if s.kind == "params"), -1)

    def padded_size(self, multiple: int) -> int:
        """``size`` rounded up to ``multiple`` bytes."""
        return _round_up(self.size, multiple)

    def packing_format(self) -> str:
        """``struct`` format of every slot but the params struct, padding included (the
        packer of :meth:`ArgBuffer.pack`)."""
        fmt, pos = "<", 0
        for slot in self.slots:
            if slot.kind != "params":
                fmt += "x" * (slot.offset - pos) + slot.code
                pos = slot.offset + slot.size
        return fmt


_SCALAR_CODES: dict[str, str] = {
    "bool": "?", "int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "int32": "i",
    "uint32": "I", "int64": "q", "uint64": "Q", "float16": "e", "float32": "f", "float64": "d",
}


def signature_layout(signature: tuple[tuple[str, object], ...]) -> ArgLayout:
    """The C-ABI layout of an entry's arguments ``(name, IR type)`` in order: a pointer is
    8 bytes, a scalar its size at its alignment (``bool`` one byte), the params record its
    struct layout (an empty record is no argument, as in every entry point)."""
    import numpy as np

    from ..ir.nodes import PointerType, StructType

    slots: list[Slot] = []
    pos, align = 0, 1
    for name, t in signature:
        if isinstance(t, PointerType):
            kind, size, a, code = "pointer", 8, 8, "Q"
        elif isinstance(t, StructType):
            layout = t.layout
            if layout.size == 0:  # type: ignore[attr-defined]
                continue
            kind, size, a, code = "params", layout.size, layout.align, ""  # type: ignore[attr-defined]
        else:
            dt = np.dtype(t)  # type: ignore[call-overload]
            kind, size, a, code = "scalar", dt.itemsize, dt.itemsize, _SCALAR_CODES[dt.name]
        pos = _round_up(pos, a)
        slots.append(Slot(name, kind, pos, size, code))  # type: ignore[arg-type]
        pos += size
        align = max(align, a)
    return ArgLayout(tuple(slots), pos, align)


def entry_signature(kernel: KernelIR) -> tuple[tuple[str, object], ...]:
    """The entry point's arguments with their IR types, in ABI order: a raw kernel's
    entry function's (its signature, then checked mode's extents and fault record); a
    spec kernel's kind's ``entry_args`` (a pointer per array, ``u64`` counts) and then
    its params struct. (A raw kernel from C source has no IR entry: its signature, laid
    out with :func:`signature_layout`, is its layout.)"""
    from ..ir.nodes import PointerType
    from ..types import u8, u64

    if kernel.kind == RAW:
        return kernel.functions[-1].args
    leading = tuple((name, PointerType(u8) if kind == "pointer" else u64)
                    for name, kind in kernel.entry_args)
    return leading + ((("p", kernel.params),) if kernel.params is not None else ())


def arg_layout(kernel: KernelIR) -> ArgLayout:
    """The argument layout of ``kernel``'s entry point (spec or raw)."""
    return signature_layout(entry_signature(kernel))


class ArgBuffer:
    """The packed arguments of one loaded kernel, patched in place before each launch:
    :meth:`pack` writes every pointer and scalar in one ``struct`` call, then
    :meth:`set_params` the params struct (in that order: the packer zeroes the struct's
    bytes as padding).

    ``address`` and ``size`` stay fixed for the buffer's life, so a backend
    builds its driver's launch structure (CUDA's ``extra`` array, say) once,
    when the kernel is loaded. ``values`` holds the same arguments
    unpacked (buffers or typed arrays, counts, scalars) and ``params`` the params
    object, for backends that call a host function instead of a driver (the CPU).
    """

    __slots__ = ("layout", "data", "address", "size", "values", "params", "pack_into",
                 "_pinned")

    def __init__(self, layout: ArgLayout) -> None:
        self.layout = layout
        self.data = bytearray(max(layout.size, 8))
        # the ctypes view exports the bytearray, so it can never be resized (and moved)
        self._pinned = (ctypes.c_char * len(self.data)).from_buffer(self.data)
        self.address = ctypes.addressof(self._pinned)
        self.size = layout.size
        self.values: tuple[object, ...] = ()
        self.params: object = None
        self.pack_into = struct.Struct(layout.packing_format()).pack_into
        """``pack_into(data, 0, *values)``: the pointers' and scalars' ``struct`` packer."""

    def pack(self, *values: object) -> None:
        """Write every argument but the params struct (addresses, counts and scalars, in
        entry order)."""
        self.pack_into(self.data, 0, *values)

    def set_params(self, packed: bytes) -> None:
        """Write the params struct's bytes (ignored when the entry takes no params)."""
        offset = self.layout.params_offset
        if offset >= 0:
            self.data[offset:offset + len(packed)] = packed

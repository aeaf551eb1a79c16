"""C struct layout records for params: what the host packs and the GPU declares.

Layout rules are the C ABI's on every target we support: each field at the
next multiple of its alignment, a nested struct aligned to its largest
member, arrays aligned like their element, total size rounded up to the
struct's alignment. ``bool`` is one byte (0 or 1), enums are their tag type.
An empty struct has size 0 (it is never passed to a kernel).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.nodes import IRType


@dataclass(frozen=True)
class FieldLayout:
    """One field: its name, byte offset and IR type (scalar, ArrayType or StructType)."""

    name: str
    offset: int
    type: IRType


@dataclass(frozen=True)
class StructLayout:
    """A params record as the device sees it (after any ``gpu_layout`` boundary).

    ``name`` is the C identifier of the struct (the class's ``__qualname__``
    with dots replaced), ``fields`` in declaration order.
    """

    name: str
    fields: tuple[FieldLayout, ...]
    size: int
    align: int

    def field(self, name: str) -> FieldLayout:
        """The field called ``name`` (KeyError if absent)."""
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

"""``g.GlobalPtr[T]``: the annotation of a raw kernel's device array parameters."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidArgument
from ..ir.nodes import PointerType
from ..types import as_scalar_type, short_name


class GlobalPtr:
    """``g.GlobalPtr[g.f32]``: a parameter that receives a device buffer of ``f32``.

    Indexable and assignable in kernel code (``data[i]``, ``data[i] = v``), 1-D,
    bounds unchecked on the device, like a CUDA pointer.
    """

    def __class_getitem__(cls, elem: Any) -> PointerType:
        t = as_scalar_type(elem)
        if t is None:
            raise InvalidArgument(f"g.GlobalPtr[{elem!r}]: the element type must be a Gompute "
                                  "scalar type (g.i8 ... g.f64)")
        return PointerType(t)


def describe_pointer(t: PointerType) -> str:
    """``GlobalPtr[f32]``."""
    return f"GlobalPtr[{short_name(t.elem)}]"

"""The params ABI: ``@g.params`` classes, their C struct layout, and packing.

Public functions (all take a ``@g.params`` class or instance):

* :func:`params` (``g.params``), :class:`Array` (``g.Array``), :class:`Enum` (``g.Enum``);
* :func:`is_params_class` ``(cls) -> bool``;
* :func:`struct_type_of` ``(cls) -> ir.nodes.StructType``, the DEVICE view (a
  custom boundary class's ``gpu_layout``), and :func:`layout_of` ``(cls) -> StructLayout``;
* :func:`pack` ``(obj) -> bytes`` and its inverse :func:`unpack` ``(cls, data)``;
* :func:`numpy_dtype` ``(layout) -> np.dtype`` and :func:`record_of` ``(obj) -> np.void``.
"""

from __future__ import annotations

from .layout import FieldLayout, StructLayout
from .pack import (
    is_params_class,
    layout_of,
    numpy_dtype,
    pack,
    record_of,
    struct_type_of,
    unpack,
)
from .params import Array, Enum, params

__all__ = [
    "Array", "Enum", "FieldLayout", "StructLayout", "is_params_class", "layout_of",
    "numpy_dtype", "pack", "params", "record_of", "struct_type_of", "unpack",
]

"""Shared helpers for the frontend tests: params struct types and IR walking."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import numpy as np

from gompute_core.abi.layout import FieldLayout, StructLayout
from gompute_core.ir.nodes import ArrayType, StructType

f32, f64, i32, i64, u8, u64 = np.float32, np.float64, np.int32, np.int64, np.uint8, np.uint64

INNER = StructType("Inner", StructLayout("Inner", (FieldLayout("w", 0, f32),), 4, 4))
SCALE = StructType("Scale", StructLayout("Scale", (
    FieldLayout("scale", 0, f32),
    FieldLayout("n", 4, i32),
    FieldLayout("mode", 8, u8),
    FieldLayout("flag", 9, np.bool_),
    FieldLayout("arr", 12, ArrayType(f32, 4)),
    FieldLayout("inner", 28, INNER),
), 32, 4))


def walk(obj: Any) -> Iterator[Any]:
    """Every IR node reachable from ``obj`` (functions, statements, expressions)."""
    if isinstance(obj, tuple):
        for item in obj:
            yield from walk(item)
        return
    if not hasattr(obj, "__dataclass_fields__") or isinstance(obj, (StructType, ArrayType)):
        return
    yield obj
    for name in obj.__dataclass_fields__:
        yield from walk(getattr(obj, name))


def nodes_of(obj: Any, kind: type) -> list[Any]:
    """Every node of class ``kind`` under ``obj``."""
    return [n for n in walk(obj) if isinstance(n, kind)]


def line_of(fn: Any, needle: str) -> int:
    """The absolute line number of the first source line of ``fn`` containing ``needle``."""
    lines, start = inspect.getsourcelines(fn)
    for k, text in enumerate(lines):
        if needle in text:
            return start + k
    raise AssertionError(f"{needle!r} not in the source of {fn}")

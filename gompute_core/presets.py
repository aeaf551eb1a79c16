"""The ``combine`` functions of the reduce presets, written in the kernel language.

They live in their own module because ``gompute_core.specs`` defines
``min``/``max``/``any``/``all``/``sum`` constructors that would shadow the
builtins these functions (and the frontend resolving them) rely on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def preset_add(a: Any, b: Any) -> Any:
    """``sum``: ``a + b`` (integers wrap)."""
    return a + b


def preset_min(a: Any, b: Any) -> Any:
    """``min``: the smaller of ``a`` and ``b``."""
    return min(a, b)


def preset_max(a: Any, b: Any) -> Any:
    """``max``: the larger of ``a`` and ``b``."""
    return max(a, b)


def preset_any(a: Any, b: Any) -> Any:
    """``any``: 1 if either is non-zero, else 0."""
    return 1 if a != 0 or b != 0 else 0


def preset_all(a: Any, b: Any) -> Any:
    """``all``: 1 if both are non-zero, else 0."""
    return 1 if a != 0 and b != 0 else 0


PRESET_COMBINE: dict[str, Callable[[Any, Any], Any]] = {
    "sum": preset_add, "min": preset_min, "max": preset_max, "any": preset_any,
    "all": preset_all,
}

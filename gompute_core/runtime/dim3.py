"""``Dim3``: grid and block dimensions for raw-kernel launches."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import InvalidArgument


def _dim(name: str, value: Any, limit: int) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise InvalidArgument(f"Dim3.{name}: expected an int, got {value!r}")
    v = value.__index__()
    if not 1 <= v <= limit:
        raise InvalidArgument(f"Dim3.{name}: {v} is outside 1..{limit}")
    return v


@dataclass(frozen=True)
class Dim3:
    """Three launch dimensions: ``x`` in ``1..2**31-1``, ``y`` and ``z`` in ``1..65535``."""

    x: int
    y: int = 1
    z: int = 1

    max_grid_x: ClassVar[int] = 2**31 - 1
    """The largest grid x dimension every supported GPU accepts."""
    max_grid_yz: ClassVar[int] = 65535
    """The largest grid y and z dimensions."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "x", _dim("x", self.x, self.max_grid_x))
        object.__setattr__(self, "y", _dim("y", self.y, self.max_grid_yz))
        object.__setattr__(self, "z", _dim("z", self.z, self.max_grid_yz))

    @classmethod
    def linear_checked(cls, n: int, block: int | Dim3) -> Dim3 | None:
        """``Dim3(ceil(n / block))`` (at least 1 block), or None when it exceeds ``max_grid_x``.

        For callers that fall back to a grid-stride launch instead of failing.
        """
        b = block.x if isinstance(block, Dim3) else _dim("linear block", block, 1024)
        if isinstance(n, bool) or not hasattr(n, "__index__") or n.__index__() < 0:
            raise InvalidArgument(f"Dim3.linear: n must be a non-negative int, got {n!r}")
        blocks = max(1, -(-n.__index__() // b))
        if blocks > cls.max_grid_x:
            return None
        return cls(blocks)

    @classmethod
    def linear(cls, n: int, block: int | Dim3) -> Dim3:
        """One-dimensional grid covering ``n`` threads in blocks of ``block``.

        Raises ``InvalidArgument`` for ``n`` past ``(2**31-1) * block``.
        """
        grid = cls.linear_checked(n, block)
        if grid is None:
            b = block.x if isinstance(block, Dim3) else block
            raise InvalidArgument(f"Dim3.linear: n={n} needs more than Dim3.max_grid_x="
                                  f"{cls.max_grid_x} blocks of {b}; use a grid-stride loop")
        return grid

    def __iter__(self) -> Iterator[int]:
        """``x, y, z`` (so a Dim3 unpacks like a tuple)."""
        return iter((self.x, self.y, self.z))

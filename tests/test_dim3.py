"""Dim3: validation, linear grids and the grid-size limit."""

from __future__ import annotations

import pytest

import gompute_core as g
from gompute_core.errors import InvalidArgument


def test_defaults_and_unpacking() -> None:
    d = g.Dim3(7)
    assert (d.x, d.y, d.z) == (7, 1, 1)
    assert tuple(g.Dim3(2, 3, 4)) == (2, 3, 4)


@pytest.mark.parametrize(("n", "block", "blocks"), [
    (0, 256, 1), (1, 256, 1), (255, 256, 1), (256, 256, 1), (257, 256, 2),
    (1000, 256, 4), (2**20 + 3, 1024, 1025),
])
def test_linear_is_ceil_division(n: int, block: int, blocks: int) -> None:
    assert g.Dim3.linear(n, block) == g.Dim3(blocks)
    assert g.Dim3.linear(n, g.Dim3(block)) == g.Dim3(blocks)
    assert g.Dim3.linear_checked(n, block) == g.Dim3(blocks)


def test_linear_limit() -> None:
    limit = g.Dim3.max_grid_x
    assert limit == 2**31 - 1
    assert g.Dim3.linear(limit * 256, 256).x == limit
    with pytest.raises(InvalidArgument, match="max_grid_x"):
        g.Dim3.linear(limit * 256 + 1, 256)
    assert g.Dim3.linear_checked(limit * 256 + 1, 256) is None


@pytest.mark.parametrize("bad", [0, -1, 2**31, 1.5, True, "4"])
def test_bad_x_is_rejected(bad: object) -> None:
    with pytest.raises(InvalidArgument, match="Dim3.x"):
        g.Dim3(bad)  # type: ignore[arg-type]


def test_bad_yz_and_n() -> None:
    with pytest.raises(InvalidArgument, match="Dim3.y"):
        g.Dim3(1, 65536)
    with pytest.raises(InvalidArgument, match="Dim3.z"):
        g.Dim3(1, 1, 0)
    with pytest.raises(InvalidArgument, match="non-negative"):
        g.Dim3.linear(-1, 256)
    with pytest.raises(InvalidArgument, match="block"):
        g.Dim3.linear(10, 2048)


def test_immutable() -> None:
    d = g.Dim3(1)
    with pytest.raises(AttributeError):
        d.x = 2  # type: ignore[misc]

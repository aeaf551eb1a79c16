"""Regression tests of the differential fuzz tier's findings (issue 8): each kernel, the
fuzz case minimized, equals its Python oracle on the CPU backend or is rejected at its
line naming the expression."""

from __future__ import annotations

import numpy as np
import pytest
from test_frontend_oracle_promise import agrees

import gompute_core as g

I32_MAX = g.i32(2147483647)
I64_BIG = g.i64(2147483647)


# -- int64 + - * wrap (fuzz 1001/2188 and ten more): numba flags them `nsw`, LLVM folded ----
def floordiv_by_wrapped_product(a, b):
    return 7 // (I32_MAX * max(7, a))


def wrapped_square_sign(a, b):
    return (a * I64_BIG) // (b * b + 1)


@pytest.mark.parametrize("fn", [floordiv_by_wrapped_product, wrapped_square_sign])
def test_int64_arithmetic_wraps_as_numpy(fn: object) -> None:
    a = np.array([5110651045465067214, 8947736758444965352, 4573487268110367691,
                  2**62, -2**63, 2**63 - 1, 3, -7], np.int64)
    b = np.array([2**62, 2**62 + 5, -2**63 + 1, 2**62, -1, 1, 3, -7], np.int64)
    agrees(f"fz_{fn.__name__}", fn, a, b, np.float32)  # type: ignore[attr-defined]


# -- float ** is the C library's pow, as the oracle's (fuzz 266209864/249, 1002/3429) ------
def square(a, b):
    return a ** 2


def square_root(a, b):
    return g.f64(b) ** 0.5


def test_float_power_is_the_c_librarys_pow() -> None:
    # 1885296400.0 ** 2 is a tie between two doubles: x * x rounds it to even, pow does not
    a = np.array([1885296400.0, 3.0, -2.5, 1e200, 0.0], np.float64)
    agrees("fz_square", square, a, a, np.float64)


def test_power_one_half_is_pow_not_sqrt() -> None:
    # sqrt(49509.0) and pow(49509.0, 0.5) differ by one ulp
    b = np.array([49509, 0, 1, 2, 65535], np.uint16)
    agrees("fz_sqrt", square_root, b, b, np.float64)

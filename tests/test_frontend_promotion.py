"""Promotion against NumPy itself: for every pair of scalar types and many expressions, the
frontend's inferred result type is the type NumPy gives when the same function runs on NumPy
scalars (the oracle). Where NumPy raises, the frontend rejects too."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import gompute_core as g
from gompute_core.errors import KernelSyntaxError
from gompute_core.frontend import lower
from gompute_core.types import SCALAR_TYPES, is_float

EXPRESSIONS = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "truediv": lambda x, y: x / y,
    "floordiv": lambda x, y: x // y,
    "mod": lambda x, y: x % y,
    "pow": lambda x, y: x ** y,
    "lt": lambda x, y: x < y,
    "eq": lambda x, y: x == y,
    "bitand": lambda x, y: x & y,
    "bitxor": lambda x, y: x ^ y,
    "lshift": lambda x, y: x << y,
    "weak_int": lambda x, y: x + 1,
    "weak_float": lambda x, y: x * 2.5,
    "weak_div": lambda x, y: x / 2,
    "weak_rdiv": lambda x, y: 7 // x,
    "cast_mix": lambda x, y: g.f32(x) + y,
    "neg": lambda x, y: -x,
    "abs": lambda x, y: abs(x),
    "sqrt": lambda x, y: g.math.sqrt(x),
    "int_conv": lambda x, y: int(x) + y,
    "float_conv": lambda x, y: float(x) * y,
}

# documented deviations: arithmetic between two NumPy bools (NumPy: + is 'or', - raises)
BOOL_ARITH = {"add", "sub", "mul", "floordiv", "mod", "pow", "neg"}

TYPES = [t for t in SCALAR_TYPES if t is not np.float16] + [np.float16]


def oracle_type(fn, a, b):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return type(fn(a(3), b(2)))


@pytest.mark.parametrize("key", sorted(EXPRESSIONS))
def test_inferred_type_is_numpy_type(key):
    fn = EXPRESSIONS[key]
    for a, b in itertools.product(TYPES, TYPES):
        try:
            expected = oracle_type(fn, a, b)
            numpy_error = None
        except (TypeError, OverflowError, ValueError) as exc:
            expected, numpy_error = None, exc
        try:
            (ir_fn,) = lower(fn, [a, b], None, "k")
        except KernelSyntaxError as exc:
            if numpy_error is not None:
                continue
            if key == "pow" and "power ufunc" in str(exc):
                continue  # documented: a run-time exponent through NumPy's power ufunc
            bools = a is np.bool_ and (b is np.bool_ or key in ("neg", "abs"))
            assert bools and key in BOOL_ARITH, (key, a, b, exc)
            continue
        assert numpy_error is None, (key, a, b, "NumPy raises", numpy_error)
        if expected in (int, float, bool):  # Python results are i64/f64/bool in the IR
            expected = {int: np.int64, float: np.float64, bool: np.bool_}[expected]
        if key == "sqrt" and not is_float(a):
            expected = np.float64  # documented: g.math converts integers to f64
        assert ir_fn.ret is expected, (key, a.__name__, b.__name__, ir_fn.ret, expected)


def test_conditional_expression_of_two_types_is_exact_or_rejected():
    # Python returns either object as is: one type is a Select of that type; two types are
    # converted each on its own to a declared return type, and rejected where the
    # function's type is inferred (it would depend on the path taken)
    for a, b in itertools.product(TYPES, TYPES):
        if a is b:
            (ir_fn,) = lower(lambda x, y: x if x > y else y, [a, b], None, "k")
            assert ir_fn.ret is a
            continue
        with pytest.raises(KernelSyntaxError, match="alternatives of 'x if x > y else y'"):
            lower(lambda x, y: x if x > y else y, [a, b], None, "k")
        (ir_fn,) = lower(lambda x, y: x if x > y else y, [a, b], np.float64, "k")
        assert ir_fn.ret is np.float64

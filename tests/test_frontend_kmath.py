"""g.math: the oracle functions keep float types as documented, and the frontend maps each to
its IR intrinsic with the same result type."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_frontend_support import f32, f64, i32, nodes_of

import gompute_core as g
from gompute_core.frontend import lower
from gompute_core.frontend.kmath import BINARY_INTRINSICS, PREDICATES, intrinsic_of
from gompute_core.frontend.names import RESERVED, is_safe, safe_name
from gompute_core.ir.nodes import CallIntrinsic

UNARY = ["sqrt", "exp", "log", "log2", "log10", "exp2", "sin", "cos", "tan", "tanh", "asin",
         "acos", "atan", "sinh", "cosh", "floor", "ceil", "trunc", "fabs", "expm1", "log1p",
         "erf"]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("t", [np.float16, np.float32, np.float64])
def test_oracle_keeps_the_float_type(name, t):
    fn = getattr(g.math, name)
    out = fn(t(0.5))
    assert type(out) is t
    assert intrinsic_of(fn) == name


@pytest.mark.parametrize("name", UNARY)
def test_oracle_converts_integers_to_f64(name):
    assert type(getattr(g.math, name)(np.int8(1))) is np.float64
    assert type(getattr(g.math, name)(1)) is np.float64


def test_oracle_values_match_numpy_and_math():
    assert g.math.sqrt(np.float32(2)) == np.sqrt(np.float32(2))
    assert g.math.erf(np.float32(0.5)) == np.float32(math.erf(0.5))
    assert g.math.atan2(np.float32(1), 2.0) == np.arctan2(np.float32(1), np.float32(2))
    assert type(g.math.atan2(np.float32(1), 2.0)) is np.float32
    assert type(g.math.hypot(np.int32(3), np.int32(4))) is np.float64
    assert g.math.isnan(np.float32("nan")) and type(g.math.isinf(np.float16(1))) is np.bool_
    assert g.math.pi == math.pi and math.isnan(g.math.nan)


@pytest.mark.parametrize("name", sorted(BINARY_INTRINSICS))
def test_binary_intrinsics_lower_with_promoted_type(name):
    fn = getattr(g.math, name)
    fns = lower(lambda x, y: fn(x, y), [f32, f32], None, "k")
    (call,) = nodes_of(fns[-1], CallIntrinsic)
    assert call.func == name and call.type is f32 and fns[-1].ret is f32
    fns = lower(lambda x, y: fn(x, y), [f32, i32], None, "k")
    (call,) = nodes_of(fns[-1], CallIntrinsic)
    assert call.type is f64  # promote(f32, i32) is f64, as the oracle computes


@pytest.mark.parametrize("name", UNARY + sorted(PREDICATES))
def test_unary_intrinsics_lower(name):
    fn = getattr(g.math, name)
    (k,) = lower(lambda x: fn(x), [f32], None, "k")
    (call,) = nodes_of(k, CallIntrinsic)
    expected = np.bool_ if name in PREDICATES else f32
    assert call.func == name and call.type is expected and call.args[0].type is f32
    (k,) = lower(lambda x: fn(x), [i32], None, "k")
    (call,) = nodes_of(k, CallIntrinsic)
    assert call.args[0].type is f64


def test_math_constant_is_weak():
    (k,) = lower(lambda x: x * g.math.pi, [f32], None, "k")
    assert k.ret is f32


def test_safe_names():
    taken: set[str] = set()
    assert safe_name("x", taken) == "x"
    assert safe_name("x", taken) == "x_v"
    assert safe_name("int", taken) == "int_v"
    assert safe_name("__y", taken) == "y"
    assert safe_name("a__b", taken) == "a_b"
    assert safe_name("θ", taken).isascii()
    assert all(is_safe(n) for n in taken)
    assert {"auto", "double", "np", "threadIdx", "class"} <= RESERVED

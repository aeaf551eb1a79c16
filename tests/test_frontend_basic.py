"""Frontend: accepted constructs lower to IR of the expected shape and types."""

from __future__ import annotations

import enum

import numpy as np
import pytest
from test_frontend_support import SCALE, f32, f64, i32, i64, line_of, nodes_of, u8, u64

import gompute_core as g
from gompute_core.errors import KernelSyntaxError
from gompute_core.frontend import lower
from gompute_core.ir.nodes import (
    Binary,
    Break,
    CallFunction,
    CallIntrinsic,
    Cast,
    Compare,
    Const,
    Field,
    ForRange,
    If,
    Index,
    Logical,
    Not,
    Return,
    Select,
    Var,
    While,
)
from gompute_core.types import promote


def ret_expr(fn):
    """The value of the single top-level return of ``fn``."""
    (r,) = [s for s in fn.body if isinstance(s, Return)]
    return r.value


def test_lambda_scale_is_one_f32_multiply():
    (fn,) = lower(lambda x, p: x * p.scale, [f32, SCALE], f32, "scale")
    assert fn.name == "scale"
    assert fn.args == (("x", f32), ("p", SCALE))
    assert fn.ret is f32
    e = ret_expr(fn)
    assert isinstance(e, Binary) and e.op == "mul" and e.type is f32
    assert isinstance(e.rhs, Field) and e.rhs.name == "scale"


def test_def_with_if_else():
    def relu(x, p):
        y = x * p.scale
        if y > 0:
            return y
        else:
            return 0

    (fn,) = lower(relu, [f32, SCALE], f32, "relu")
    assert fn.locals == (("y", f32),)
    (iff,) = [s for s in fn.body if isinstance(s, If)]
    assert isinstance(iff.cond, Compare) and iff.cond.lhs.type is f32
    assert iff.cond.rhs == Const(0.0, f32)
    assert iff.orelse == (Return(Const(0.0, f32)),)
    assert fn.source.endswith(f":{line_of(relu, 'def relu')}")


@pytest.mark.parametrize("a, b, expected", [
    (f32, f32, f32), (i32, i64, i64), (u64, i64, f64), (u8, i32, i32), (np.float16, i32, f64),
])
def test_strong_promotion_is_numpy(a, b, expected):
    (fn,) = lower(lambda x, y: x + y, [a, b], None, "k")
    e = ret_expr(fn)
    assert e.type is expected is promote(a, b)
    assert e.lhs.type is expected and e.rhs.type is expected


def test_weak_literals_adopt_the_strong_type():
    (fn,) = lower(lambda x: x * 2.0, [f32], None, "k")
    assert ret_expr(fn).type is f32 and fn.ret is f32
    (fn,) = lower(lambda x: x + 1, [i32], None, "k")
    assert ret_expr(fn).type is i32
    (fn,) = lower(lambda x: x * 2.5, [i32], None, "k")  # weak float with int: f64
    assert ret_expr(fn).type is f64
    (fn,) = lower(lambda x: x + 1, [u8], None, "k")
    assert ret_expr(fn).rhs == Const(1, u8)


def test_true_division():
    (fn,) = lower(lambda a, b: a / b, [i32, i32], None, "k")
    e = ret_expr(fn)
    assert e.op == "truediv" and e.type is f64
    assert isinstance(e.lhs, Cast) and e.lhs.type is f64
    (fn,) = lower(lambda a, b: a / b, [f32, f32], None, "k")
    assert ret_expr(fn).type is f32


def test_weak_constants_fold_like_python():
    (fn,) = lower(lambda x: x + 7 // 2 + 1 / 4, [f32], None, "k")  # 3 + 0.25 as Python
    e = ret_expr(fn)
    assert e.type is f32
    assert e.rhs == Const(0.25, f32)
    (fn,) = lower(lambda x: x * (2 + 3), [i32], None, "k")
    assert ret_expr(fn).rhs == Const(5, i32)


def test_loop_variable_is_weak_int():
    def k(x):
        acc = x
        for i in range(4):
            acc = acc + i
        return acc

    (fn,) = lower(k, [f32], f32, "k")
    (loop,) = nodes_of(fn, ForRange)
    assert loop.var == "i" and loop.start.type is i64
    (add,) = [b for b in nodes_of(loop, Binary) if b.op == "add"]
    assert add.type is f32  # f32 + Python int stays f32
    assert dict(fn.locals) == {"acc": f32, "i": i64}


def test_local_type_is_fixed_point_of_assignments():
    def k(x, n):
        acc = 0
        i = 0
        while i < n:
            acc = acc + x
            i += 1
        return acc

    (fn,) = lower(k, [f32, i32], None, "k")
    assert dict(fn.locals) == {"acc": f32, "i": i64}
    assert fn.ret is f32
    (loop,) = nodes_of(fn, While)
    # a run-time Python int is compared with an i32 by value, in i64
    assert loop.cond.lhs.type is i64 and loop.cond.rhs == Cast(Var("n", i32), i64)


def test_local_only_weak_stays_weak():
    def k(x):
        c = 3
        c = c * 2
        return x * c

    (fn,) = lower(k, [np.int8], None, "k")
    assert dict(fn.locals) == {"c": i64}
    assert fn.ret is np.int8  # the weak local adopts int8, like a Python int would


def test_return_cast_to_ret():
    (fn,) = lower(lambda x: x / 2, [i32], i32, "k")
    e = ret_expr(fn)
    assert isinstance(e, Cast) and e.type is i32 and e.value.type is f64


def test_ternary_is_select():
    (fn,) = lower(lambda x, p: x if x > 0 else 0, [f32, None], f32, "k")
    e = ret_expr(fn)
    assert isinstance(e, Select) and e.type is f32 and e.if_false == Const(0.0, f32)
    assert fn.args == (("x", f32),)


def test_chained_comparison_is_and():
    (fn,) = lower(lambda x: 0 < x < 10, [i32], None, "k")
    e = ret_expr(fn)
    assert isinstance(e, Logical) and e.op == "and" and fn.ret is np.bool_


def test_truthiness_and_not():
    def k(x):
        if x:
            return not x
        return x == 0

    (fn,) = lower(k, [i32], None, "k")
    (iff,) = nodes_of(fn, If)
    assert iff.cond == Compare("ne", Var("x", i32), Const(0, i32), np.bool_)
    assert nodes_of(fn, Not)


def test_params_paths():
    def k(x, p):
        s = p.arr[1] + p.arr[-1] + p.inner.w
        for j in range(p.n):
            s = s + p.arr[j]
        return s * x

    (fn,) = lower(k, [f32, SCALE], f32, "k")
    idx = nodes_of(fn, Index)
    assert idx[0].index == Const(1, i64)
    assert idx[1].index == Const(3, i64)  # -1 normalised like Python
    assert any(isinstance(i.index, Var) for i in idx)
    assert any(isinstance(f, Field) and f.name == "w" for f in nodes_of(fn, Field))


class Mode(enum.IntEnum):
    OFF = 0
    ON = 1


SCALE_BIAS = 3


def test_captured_constants_and_enums():
    factor = np.float32(2)

    def k(x, p):
        if p.mode == Mode.ON:
            return x * factor + SCALE_BIAS
        return x

    (fn,) = lower(k, [f32, SCALE], f32, "k")
    (iff,) = nodes_of(fn, If)
    assert iff.cond.rhs == Const(1, u8)  # enum member adopts the tag type
    consts = nodes_of(fn, Const)
    assert Const(2.0, f32) in consts and Const(3.0, f32) in consts


DEBUG = False


def test_compile_time_condition_drops_branch():
    def k(x):
        if DEBUG:
            return x * 1000
        return x

    (fn,) = lower(k, [f32], None, "k")
    assert fn.body == (Return(Var("x", f32)),)


def test_casts_and_math():
    def k(x):
        y = g.f32(x) + g.math.sqrt(x)
        z = g.i32(y) + int(y)
        return bool(z) and g.math.isnan(y) == False  # noqa: E712

    # a Python bool or a NumPy bool depending on the path: converted to the declared type
    (fn,) = lower(k, [i32], np.bool_, "k")
    casts = nodes_of(fn, Cast)
    assert any(c.type is f32 for c in casts)
    (sq,) = [c for c in nodes_of(fn, CallIntrinsic) if c.func == "sqrt"]
    assert sq.type is f64 and sq.args[0].type is f64  # ints go to f64 for g.math
    assert dict(fn.locals) == {"y": f64, "z": i32}


def test_math_module_alias_and_min_max_abs():
    from gompute_core import math as gm

    (fn,) = lower(lambda x: gm.atan2(x, 1.0) + max(x, 0, -x) + abs(x), [f32], None, "k")
    calls = {c.func: c for c in nodes_of(fn, CallIntrinsic)}
    assert calls["atan2"].type is f32 and calls["max"].type is f32 and calls["abs"].type is f32
    assert fn.ret is f32


def test_helpers_are_separate_functions_callees_first():
    def sq(v):
        return v * v

    def k(x):
        return sq(x) + sq(2)

    fns = lower(k, [f32], None, "main")
    assert [f.name for f in fns] == ["main_sq", "main_sq_2", "main"]
    main = fns[-1]
    assert {c.func for c in nodes_of(main, CallFunction)} == {"main_sq", "main_sq_2"}
    assert main.ret is f32  # f32 + (weak int helper result)


def test_helper_takes_params():
    def part(p, v):
        return p.inner.w * v

    def k(x, p):
        return part(p, x)

    fns = lower(k, [f32, SCALE], f32, "k")
    assert fns[0].args[0] == ("p", SCALE)


def test_break_continue_and_early_return():
    def k(x):
        for i in range(10):
            if i == 3:
                continue
            if i > x:
                break
            if x < 0:
                return x
        return -x

    (fn,) = lower(k, [i32], None, "k")
    assert nodes_of(fn, Break)


def test_parameter_reassigned_gets_a_local():
    def k(x):
        x = x / 2
        return x

    (fn,) = lower(k, [i32], None, "k")
    assert fn.args == (("x_arg", i32),)
    assert dict(fn.locals) == {"x": f64}
    assert fn.ret is f64


def test_reserved_names_renamed():
    def k(x):
        int_ = 1
        double = x + int_
        auto = double * 2
        return auto

    (fn,) = lower(k, [f32], None, "k")
    names = [n for n, _ in fn.locals]
    assert "double" not in names and "auto" not in names
    assert "double_v" in names and "auto_v" in names


def test_uint_compare_with_out_of_range_literal_is_constant():
    (fn,) = lower(lambda x: x > -1, [u8], None, "k")
    assert ret_expr(fn) == Const(True, np.bool_)


def test_definite_assignment_through_branches():
    def k(x):
        if x > 0:
            y = x
        elif x < -5:
            return 0
        else:
            y = -x
        while x > 100:
            z = x
            x = z - 1
        return y

    (fn,) = lower(k, [i32], None, "k")
    assert fn.ret is i32


def test_mixed_sign_64_bit_compare_is_exact_like_numpy():
    (fn,) = lower(lambda a, b: a < b, [i64, u64], None, "k")
    e = ret_expr(fn)
    # NumPy 2 compares i64 with u64 exactly (not through f64): s < 0 or u64(s) < u
    assert isinstance(e, Logical) and e.op == "or"
    assert e.lhs == Compare("lt", Var("a", i64), Const(0, i64), np.bool_)
    assert e.rhs == Compare("lt", Cast(Var("a", i64), u64), Var("b", u64), np.bool_)
    (fn,) = lower(lambda a, b: a >= b, [u64, np.int8], None, "k")
    e = ret_expr(fn)  # flipped: b <= a, i.e. b < 0 or u64(b) <= a
    assert e.op == "or" and e.rhs.op == "le"


def test_runtime_python_int_compares_by_value():
    def k(x):
        for i in range(-3, 3):
            if i < x:
                return i
        return 0

    (fn,) = lower(k, [u8], None, "k")
    (iff,) = nodes_of(fn, If)
    assert iff.cond.lhs.type is i64 and iff.cond.rhs == Cast(Var("x", u8), i64)


def test_nested_records_and_arrays_of_records():
    from gompute_core.abi.layout import FieldLayout, StructLayout
    from gompute_core.ir.nodes import ArrayType, StructType

    pt = StructType("Pt", StructLayout("Pt", (FieldLayout("w", 0, f32),), 4, 4))
    outer = StructType("Outer", StructLayout("Outer", (
        FieldLayout("pts", 0, ArrayType(pt, 3)),
        FieldLayout("grid", 12, ArrayType(ArrayType(i32, 2), 2)),
    ), 28, 4))

    def k(x, p):
        return x * p.pts[2].w + p.grid[1][0]

    (fn,) = lower(k, [f32, outer], f32, "k")
    fields = nodes_of(fn, Field)
    assert fields[0].base.type is pt or isinstance(fields[0].base, Index)
    assert len(nodes_of(fn, Index)) == 3


def test_multiline_lambda_and_decorated_function_locations():
    fs = [
        lambda x:
        x + 1.5
    ]
    (fn,) = lower(fs[0], [f32], None, "k")
    here = test_multiline_lambda_and_decorated_function_locations
    assert fn.source.endswith(f":{line_of(here, 'lambda x:')}")

    def deco(fn):
        fn.tagged = True
        return fn

    @deco
    def k(x):
        return x * 2

    (fn,) = lower(k, [i32], None, "k")
    assert fn.ret is i32
    assert fn.source.endswith(f":{line_of(k, 'def k')}")


def test_staticmethod_function_lowers():
    class Op:
        @staticmethod
        def eval(x, p):
            return x - 1

    (fn,) = lower(Op.eval, [u8, None], None, "k")
    assert fn.ret is u8 and fn.args == (("x", u8),)


def test_bad_arg_types_are_invalid_argument():
    from gompute_core.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match="argument type #0"):
        lower(lambda x: x, [float], None, "k")
    with pytest.raises(InvalidArgument, match="not an identifier"):
        lower(lambda x: x, [f32], None, "1k")
    with pytest.raises(InvalidArgument, match="return type"):
        lower(lambda x: x, [f32], "f32", "k")


def test_helper_names_never_collide():
    def sq(v):
        return v * v

    def sq_2(v):
        return v + v

    def k(x):
        return sq(x) + sq(1.5) + sq_2(x)

    fns = lower(k, [f32], None, "k")
    names = [f.name for f in fns]
    assert len(set(names)) == len(names) == 4


def test_python_int_to_negative_power_is_a_python_float():
    def k(x):
        acc = 2
        for _ in range(3):
            acc = acc ** -1
        return x + acc

    (fn,) = lower(k, [f32], None, "k")
    assert dict(fn.locals)["acc"] is f64 and fn.ret is f32


def test_helper_first_seen_with_a_narrower_type_is_not_an_error():
    def bump(v):
        return v ** -1  # fine for floats; an error for NumPy integers

    def k(x):
        acc = 0
        for _ in range(3):
            acc = bump(acc + x)
        return acc

    fns = lower(k, [f32], None, "k")
    assert [f.name for f in fns] == ["k_bump", "k"]  # only the final specialization
    assert fns[0].args == (("v", f32),)
    with pytest.raises(KernelSyntaxError, match="negative constant"):
        lower(k, [i32], None, "k")


def test_float_inf_nan_constants():
    (fn,) = lower(lambda x: min(x, float("inf")) + max(x, -float("inf")), [f32], None, "k")
    assert Const(float("inf"), f32) in nodes_of(fn, Const)
    with pytest.raises(KernelSyntaxError, match="not a number"):
        lower(lambda x: x + float("abc"), [f32], None, "k")

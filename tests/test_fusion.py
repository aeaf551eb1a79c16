"""g.Fused / g.Unary: the Python oracle composes stages with a cast to T after each, and the
lowering is ONE main function chaining the stages, with no arrays anywhere."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from test_frontend_support import SCALE, f32, f64, i32, nodes_of

import gompute_core as g
from gompute_core.errors import InvalidArgument
from gompute_core.frontend import lower
from gompute_core.ir.nodes import ArrayType, CallFunction, Cast, Index, Return, Var


class ScaleOp:
    @staticmethod
    def eval(x, p):
        return x * p.scale


class HalfOp:
    @staticmethod
    def eval(x, p):
        return x / 2


square = g.Unary(g.f32, SCALE, lambda x, p: x * x)


def test_oracle_composes_in_order_with_cast_to_t():
    fused = g.Fused(g.f32, SCALE, [ScaleOp, square, HalfOp])
    p = SimpleNamespace(scale=np.float32(3))
    out = fused.eval(np.float32(2), p)
    assert type(out) is np.float32 and out == np.float32(18)
    ints = g.Fused(g.i32, None, [HalfOp, HalfOp])
    out = ints.eval(np.int32(7), None)  # 7/2 -> 3.5 -> i32 3 -> 1.5 -> i32 1
    assert type(out) is np.int32 and out == 1


def test_one_main_function_chaining_the_stages():
    fused = g.Fused(g.f32, SCALE, [ScaleOp, square, HalfOp])
    fns = lower(fused, [f32, SCALE], f32, "pipe")
    main = fns[-1]
    assert main.name == "pipe" and len(fns) == 4
    assert main.args == (("x", f32), ("p", SCALE)) and main.ret is f32 and main.locals == ()
    (ret,) = main.body
    assert isinstance(ret, Return)
    chain = []
    e = ret.value
    while isinstance(e, CallFunction):
        chain.append(e.func)
        assert e.type is f32 and e.args[1] == Var("p", SCALE)
        e = e.args[0]
    assert e == Var("x", f32)
    assert chain[::-1] == [f.name for f in fns[:-1]]
    for stage in fns[:-1]:
        assert stage.ret is f32  # each stage's result is cast to T inside the stage
    # no arrays anywhere: no array-typed values, arguments or locals
    for fn in fns:
        assert not nodes_of(fn, Index)
        assert not any(isinstance(t, ArrayType) for _, t in fn.args + fn.locals)


def test_bound_eval_lowers_like_the_object():
    fused = g.Fused(g.f32, SCALE, [ScaleOp, square])
    a = lower(fused, [f32, SCALE], f32, "k")
    b = lower(fused.eval, [f32, SCALE], f32, "k")
    assert a == b


def test_stage_results_cast_to_t_then_main_to_ret():
    fused = g.Fused(g.i32, None, [HalfOp])
    fns = lower(fused, [i32, None], f64, "k")
    stage, main = fns
    assert stage.ret is i32 and stage.args == (("x", i32),)
    (ret,) = main.body
    assert isinstance(ret.value, Cast) and ret.value.type is f64


def test_nested_fused_is_flattened():
    inner = g.Fused(g.f32, SCALE, [ScaleOp, square])
    outer = g.Fused(g.f32, SCALE, [inner, HalfOp])
    fns = lower(outer, [f32, SCALE], f32, "k")
    assert len(fns) == 4
    p = SimpleNamespace(scale=np.float32(2))
    assert outer.eval(np.float32(3), p) == np.float32(18)


def test_unary_alone_lowers_to_one_function():
    (fn,) = lower(square, [f32, SCALE], f32, "sq")
    assert fn.name == "sq" and fn.ret is f32
    assert square.eval(np.float32(3), None) == np.float32(9)


def test_unary_called_from_kernel_code():
    def k(x, p):
        return square(x, p) + 1

    fns = lower(k, [f32, SCALE], f32, "k")
    assert len(fns) == 2 and nodes_of(fns[-1], CallFunction)


@pytest.mark.parametrize("ops, message", [
    ([ScaleOp, 3], "op #1"),
    ([object()], "op #0"),
    ([], "at least one op"),
    ("ScaleOp", "list of op classes"),
])
def test_fused_validation_names_the_op(ops, message):
    with pytest.raises(InvalidArgument, match=message):
        g.Fused(g.f32, None, ops)


def test_fused_rejects_stage_of_other_type_and_non_callable_eval():
    with pytest.raises(InvalidArgument, match="op #0"):
        g.Fused(g.f32, None, [g.Unary(g.i32, None, lambda x, p: x)])

    class NotCallable:
        eval = 3

    with pytest.raises(InvalidArgument, match="op #0.*not callable"):
        g.Fused(g.f32, None, [NotCallable])
    with pytest.raises(InvalidArgument, match="callable"):
        g.Unary(g.f32, None, 5)
    with pytest.raises(InvalidArgument, match="scalar type"):
        g.Fused(float, None, [ScaleOp])


PIPELINE = g.Fused(g.f32, SCALE, [ScaleOp, square, HalfOp])


def test_eval_called_in_kernel_code_is_one_function_of_inlined_stages():
    """``Pipeline.eval(x, p)`` inside a kernel function (the fusion example users copy
    first) lowers to the same chain of stage calls as passing ``Pipeline.eval`` itself."""

    def scale_square(x, p):
        return PIPELINE.eval(x, p)

    called = lower(scale_square, [f32, SCALE], f32, "k")
    direct = lower(PIPELINE.eval, [f32, SCALE], f32, "k")
    assert len(called) == len(direct) == 4  # three stages and the kernel function
    for a, b in zip(called[:-1], direct[:-1], strict=True):  # the same stages (names aside)
        assert (a.args, a.ret, a.locals, a.body) == (b.args, b.ret, b.locals, b.body)
    (ret,) = called[-1].body
    depth, e = 0, ret.value
    while isinstance(e, CallFunction):
        depth, e = depth + 1, e.args[0]
    assert depth == 3 and e == Var("x", f32)


def test_eval_in_kernel_code_runs_like_the_oracle():
    """The issue's example on the CPU backend, against the Python pipeline on NumPy scalars;
    a Unary's eval too."""

    @g.params
    class Params:
        scale: g.f32

    pipeline = g.Fused(g.f32, Params, [ScaleOp, square])

    def scale_square(x, p):
        return pipeline.eval(x, p)

    def squared(x, p):
        return square.eval(x, p) + 1

    p = Params(scale=np.float32(1.25))
    x = np.linspace(-4, 4, 1001, dtype=np.float32)
    for fn, oracle in ((scale_square, pipeline.eval),
                       (squared, lambda v, q: np.float32(square.eval(v, q) + 1))):
        spec = g.map(f"fused_eval_{fn.__name__}", g.f32, Params, fn)
        with g.Kernel(spec, "cpu") as k:
            got = k.run(x.copy(), p)
        want = np.array([oracle(v, p) for v in x], dtype=np.float32)
        np.testing.assert_array_equal(got, want)

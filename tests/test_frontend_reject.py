"""Frontend: every construct outside the kernel language raises KernelSyntaxError naming the
construct and the right file:line (lines computed from this file's source, not hard-coded)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_frontend_support import SCALE, f32, i32, line_of, u8

import gompute_core as g
from gompute_core.errors import KernelSyntaxError
from gompute_core.frontend import lower


def k_try(x):
    try:
        return x
    except ValueError:
        return 0


def k_with(x):
    with open("f"):
        return x


def k_listcomp(x):
    y = [x for _ in range(2)]
    return y


def k_lambda(x):
    f = lambda v: v  # noqa: E731
    return f(x)


def k_yield(x):
    yield x


def k_global(x):
    global SOMETHING
    return x


def k_fstring(x):
    s = f"{x}"
    return s


def k_string(x):
    return "text"


def k_list(x):
    y = [x, x]
    return y


def k_tuple(x):
    y = (x, x)  # a tuple is returned or unpacked, never a value of its own
    return y


def k_dict(x):
    y = {1: x}
    return y


def k_starred(x):
    return max(*x)


def k_keyword(x):
    return helper(x, v=1)


def helper(a, v):
    return a + v


def k_attr_number(x):
    return x.real


def k_unknown_call(x):
    return math.sqrt(x)


def k_print(x):
    print(x)
    return x


def k_bare_expr(x):
    x + 1
    return x


def k_import(x):
    import os  # noqa: F401

    return x


def k_del(x):
    y = x
    del y
    return x


def k_assert(x):
    assert x > 0
    return x


def k_is(x):
    return x is None


def k_in(x):
    return x in (1, 2)


def k_nested_def(x):
    def inner(v):
        return v

    return x


def k_annassign(x):
    y: g.f32 = x
    return y


def k_unpack(x):
    a, *b = x, x
    return a + b[0]


def k_for_list(x):
    for v in [1, 2]:
        x = x + v
    return x


def k_for_else(x):
    for _ in range(3):
        x = x + 1
    else:
        x = x - 1
    return x


def k_while_else(x):
    while x > 0:
        x = x - 1
    else:
        x = 1
    return x


def k_recursive(x):
    return k_recursive(x - 1)


def k_falls_off(x):
    if x > 0:
        return x


def k_bare_return(x):
    return


def k_uses_p(x, p):
    return x * p.scale


def k_const_index(x, p):
    return x + p.arr[4]


def k_neg_pow(x):
    return x ** -1


def k_bitwise_float(x):
    return x & 1


def k_and_numbers(x):
    return x and 1


def k_shift_float(x):
    return x << 2


def k_bool_arith(x):
    return (x > 0) + (x < 1)


def k_literal_range(x):
    return x + 300


def k_read_before_assign(x):
    if x > 0:
        y = x
    return y + x


def k_store_field(x, p):
    p.scale = x
    return x


def k_range_value(x):
    r = range(3)
    return r


def k_range_step0(x):
    for i in range(0, 10, 0):
        x = x + i
    return x


def k_slice(x, p):
    return p.arr[1:2]


def k_matmul(x):
    return x @ x


def k_no_such_name(x):
    return x + undefined_thing  # noqa: F821


def k_index_number(x):
    return x[0]


def k_struct_local(x, p):
    inner = p.inner
    return x + inner.w


def k_div_zero(x):
    return x + 1 // 0


def k_min_one(x):
    return min(x)


def k_cast_two(x):
    return g.f32(x, x)


def k_nonlocal_fn_value(x):
    return helper


CASES = [
    (k_try, [i32], "try statement", "try:"),
    (k_with, [i32], "with statement", "with open"),
    (k_listcomp, [i32], "list comprehension", "y = [x for"),
    (k_lambda, [i32], "lambda", "f = lambda"),
    (k_yield, [i32], "yield is not supported", "yield x"),
    (k_global, [i32], "global", "global SOMETHING"),
    (k_fstring, [i32], "f-string", 's = f"'),
    (k_string, [i32], "string constant", 'return "text"'),
    (k_list, [i32], "list is not supported", "y = [x, x]"),
    (k_tuple, [i32], "tuple is not supported", "y = (x, x)"),
    (k_dict, [i32], "dict is not supported", "y = {1: x}"),
    (k_starred, [i32], "starred", "max(*x)"),
    (k_keyword, [i32], "keyword arguments", "helper(x, v=1)"),
    (k_attr_number, [i32], "attribute access '.real'", "x.real"),
    (k_unknown_call, [f32], "unknown function 'math.sqrt'", "math.sqrt(x)"),
    (k_print, [i32], "a call of 'print' as a statement", "    print(x)"),
    (k_bare_expr, [i32], "expression statement", "    x + 1"),
    (k_import, [i32], "import", "import os"),
    (k_del, [i32], "del", "del y"),
    (k_assert, [i32], "assert", "assert x > 0"),
    (k_is, [i32], "'is' comparison", "x is None"),
    (k_in, [i32], "'in' test", "x in (1, 2)"),
    (k_nested_def, [i32], "nested function definition", "def inner"),
    (k_annassign, [f32], "annotated assignment", "y: g.f32"),
    (k_unpack, [i32], "starred assignment", "a, *b = x, x"),
    (k_for_list, [i32], "range(...)", "for v in [1, 2]"),
    (k_for_else, [i32], "for-else", "for _ in range(3)"),
    (k_while_else, [i32], "while-else", "while x > 0"),
    (k_recursive, [i32], "recursive call of 'k_recursive'", "return k_recursive"),
    (k_falls_off, [i32], "without returning", "if x > 0"),
    (k_bare_return, [i32], "must return a value", "    return\n"),
    (k_uses_p, [f32, None], "parameter 'p' has nothing bound", "x * p.scale"),
    (k_const_index, [f32, SCALE], "index 4 out of range", "p.arr[4]"),
    (k_neg_pow, [i32], "negative constant", "x ** -1"),
    (k_bitwise_float, [f32], "'&' needs integers", "x & 1"),
    (k_and_numbers, [i32], "'and' needs bool operands", "x and 1"),
    (k_shift_float, [f32], "'<<' needs integers", "x << 2"),
    (k_bool_arith, [i32], "on bool values", "(x > 0) + (x < 1)"),
    (k_literal_range, [u8], "300 out of bounds for u8", "x + 300"),
    (k_read_before_assign, [i32], "'y' may be read before it is assigned", "return y + x"),
    (k_store_field, [f32, SCALE], "params are read-only", "p.scale = x"),
    (k_range_value, [i32], "range() is only allowed", "r = range(3)"),
    (k_range_step0, [i32], "step must not be zero", "range(0, 10, 0)"),
    (k_slice, [f32, SCALE], "slice", "p.arr[1:2]"),
    (k_matmul, [f32], "matrix multiplication", "x @ x"),
    (k_no_such_name, [f32], "name 'undefined_thing' is not defined", "undefined_thing"),
    (k_index_number, [f32], "only params arrays", "x[0]"),
    (k_struct_local, [f32, SCALE], "cannot assign a params record", "inner = p.inner"),
    (k_div_zero, [i32], "divides by zero", "1 // 0"),
    (k_min_one, [i32], "at least 2 arguments", "min(x)"),
    (k_cast_two, [i32], "takes 1 argument", "g.f32(x, x)"),
    (k_nonlocal_fn_value, [i32], "not a value usable", "return helper"),
]


@pytest.mark.parametrize("fn, arg_types, message, needle", CASES,
                         ids=[c[0].__name__ for c in CASES])
def test_rejected_construct_names_construct_and_line(fn, arg_types, message, needle):
    with pytest.raises(KernelSyntaxError) as info:
        lower(fn, arg_types, None, "k")
    err = info.value
    assert message in str(err)
    assert err.filename == __file__
    assert err.lineno == line_of(fn, needle)
    assert str(err).startswith(f"{__file__}:{err.lineno}: ")
    assert err.construct  # the AST construct's name, for tools


def test_kernel_syntax_error_is_a_type_error():
    with pytest.raises(TypeError):
        lower(k_try, [i32], None, "k")


def test_several_lambdas_on_one_line_ask_for_def():
    fs = [lambda x: x + 1, lambda x: x + 2]  # two lambdas, same parameters, one line
    with pytest.raises(KernelSyntaxError, match="define the kernel function") as info:
        lower(fs[0], [i32], None, "k")
    assert info.value.lineno == line_of(test_several_lambdas_on_one_line_ask_for_def,
                                        "two lambdas")


def test_lambdas_with_different_parameters_on_one_line_are_told_apart():
    fs = [lambda x: x + 1, lambda y: y * 2.0]
    (fn,) = lower(fs[1], [f32], None, "k")
    assert fn.args == (("y", f32),) and fn.ret is f32


def test_arity_mismatch_and_signature_shapes():
    with pytest.raises(KernelSyntaxError, match="takes 1 parameter but is called with 2"):
        lower(lambda x: x, [i32, i32], None, "k")

    def star(*xs):
        return 0

    with pytest.raises(KernelSyntaxError, match=r"\*args"):
        lower(star, [i32], None, "k")

    def default(x, y=1):
        return x + y

    with pytest.raises(KernelSyntaxError, match="default parameter values"):
        lower(default, [i32, i32], None, "k")


def test_not_a_function():
    with pytest.raises(KernelSyntaxError, match="Python functions or lambdas"):
        lower(np.sqrt, [f32], None, "k")


def test_no_source():
    ns: dict = {}
    exec("def f(x):\n    return x\n", ns)
    with pytest.raises(KernelSyntaxError, match="source .* is not available"):
        lower(ns["f"], [f32], None, "k")


def test_error_in_helper_points_into_helper():
    def bad_helper(v):
        return v is None

    def k(x):
        return bad_helper(x)

    with pytest.raises(KernelSyntaxError) as info:
        lower(k, [f32], None, "k")
    assert info.value.lineno == line_of(bad_helper, "v is None")

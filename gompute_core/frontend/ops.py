"""Typing and construction of operators: arithmetic, bitwise, comparisons, logic.

The rules are NumPy 2's (see :mod:`.values` for weak values); each function
returns a :class:`Value` whose IR node satisfies the invariants of
:mod:`gompute_core.ir.nodes`, or raises :class:`TypingError`.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ..ir.nodes import Binary, CallIntrinsic, Cast, Compare, Const, Logical, Not, Unary
from ..types import ScalarType, f64, i64, is_float, is_int, promote
from .values import (
    WEAK_REPR,
    Ty,
    TypingError,
    Value,
    coerce,
    const_of,
    describe_type,
    int_range,
    is_scalar,
    join,
    weak_const,
)

ARITH = frozenset({"add", "sub", "mul", "truediv", "floordiv", "mod", "pow"})
BITWISE = frozenset({"bitand", "bitor", "bitxor"})
SHIFTS = frozenset({"lshift", "rshift"})

_PY_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod,
    "pow": operator.pow, "lshift": operator.lshift, "rshift": operator.rshift,
    "bitand": operator.and_, "bitor": operator.or_, "bitxor": operator.xor,
}
_PY_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt,
    "le": operator.le, "gt": operator.gt, "ge": operator.ge,
}
SYMBOLS: dict[str, str] = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
    "pow": "**", "lshift": "<<", "rshift": ">>", "bitand": "&", "bitor": "|", "bitxor": "^",
    "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
}


def _require_scalar(v: Value, what: str) -> None:
    if not is_scalar(v.type):
        raise TypingError(f"{what} needs a number, got {describe_type(v.type)}")


_FOLD_BITS = 128
"""Constant ints are at most 64 bits wide; a folded shift or power whose result would need
more than this many bits is rejected before Python computes it (``1 << 2**63`` would
exhaust memory)."""


def _check_fold_size(op: str, a: int | float | bool, b: int | float | bool) -> None:
    """Reject a constant shift or integer power whose result cannot fit 64 bits, before
    computing it."""
    if isinstance(a, float) or isinstance(b, float):
        return
    if op == "lshift" and a != 0 and b > _FOLD_BITS:
        raise TypingError(f"constant expression {a} << {b} does not fit in 64 bits")
    if op == "pow" and abs(a) > 1 and b * max(int(abs(a)).bit_length() - 1, 1) > _FOLD_BITS:
        raise TypingError(f"constant expression {a} ** {b} does not fit in 64 bits")


def _fold(op: str, a: Value, b: Value) -> Value:
    """Python's own result for two weak constants (a TypingError where Python raises)."""
    _check_fold_size(op, a.py, b.py)  # type: ignore[arg-type]
    try:
        result = _PY_BINARY[op](a.py, b.py)
    except ZeroDivisionError as exc:
        raise TypingError(f"constant expression divides by zero ({exc})") from None
    except OverflowError as exc:
        raise TypingError(f"constant expression overflows ({exc})") from None
    except ValueError as exc:  # a negative shift count
        raise TypingError(f"constant expression {a.py!r} {SYMBOLS[op]} {b.py!r} raises in "
                          f"Python ({exc})") from None
    if isinstance(result, complex):
        raise TypingError("constant expression has a complex result")
    return weak_const(result)


def _weak_result_kind(op: str, a: str, b: str) -> str:
    rank = {"bool": 0, "int": 1, "float": 2}
    kind = a if rank[a] >= rank[b] else b
    if op == "truediv":
        return "float"
    if kind == "bool" and (op in ARITH or op in SHIFTS):
        return "int"
    return kind


def binary(op: str, a: Value, b: Value) -> Value:
    """``a op b`` for an IR BinaryOp name."""
    sym = SYMBOLS[op]
    _require_scalar(a, f"'{sym}'")
    _require_scalar(b, f"'{sym}'")
    if a.weak is not None and b.weak is not None:
        kind = _weak_result_kind(op, a.weak, b.weak)
        if (op in BITWISE or op in SHIFTS) and kind == "float":
            raise TypingError(f"'{sym}' needs integers or bools, got a Python float")
        if a.is_weak_const and b.is_weak_const:
            return _fold(op, a, b)
        if op == "pow" and kind == "int" and b.is_weak_const and b.py < 0:  # type: ignore[operator]
            kind = "float"  # Python: int ** negative int is a float
        t = Ty(WEAK_REPR[kind], kind)  # type: ignore[arg-type]
        return Value(Binary(op, coerce(a, t).expr, coerce(b, t).expr, t.type), t.weak)  # type: ignore[arg-type]
    t = join(a.ty, b.ty).type
    if op in ARITH and t is np.bool_ and op != "truediv":
        raise TypingError(f"'{sym}' on bool values is not arithmetic in NumPy; "
                          "cast to an integer type first (e.g. g.i32(flag))")
    if op == "truediv" and not is_float(t):
        t = f64
    if op in BITWISE and is_float(t):
        raise TypingError(f"'{sym}' needs integers or bools, got {describe_type(t)} "
                          f"({a.ty.describe()} {sym} {b.ty.describe()})")
    if op in SHIFTS:
        if is_float(t):
            raise TypingError(f"'{sym}' needs integers, got {describe_type(t)} "
                              f"({a.ty.describe()} {sym} {b.ty.describe()})")
        if t is np.bool_:
            t = np.int8  # NumPy shifts bools with its int8 loop
    if op == "pow" and is_int(t) and isinstance(b.expr, Const) and b.expr.value < 0:
        raise TypingError("integer ** negative constant is not allowed (NumPy raises); "
                          "use a float base")
    ty = Ty(t)
    return Value(Binary(op, coerce(a, ty).expr, coerce(b, ty).expr, t))  # type: ignore[arg-type]


def power(text: str, a: Value, b: Value) -> Value:
    """``a ** b`` (``text`` is its source), rejecting a Python number raised to a Python
    float exponent unless its result is real: Python returns a complex number for a
    negative base and a non-integer exponent, where the kernel would give NaN."""
    exponent = b.py if b.is_weak_const else None
    real = (a.weak in (None, "bool") or b.weak != "float"
            or (a.is_weak_const and a.py >= 0)  # type: ignore[operator]
            or (exponent is not None and not (math.isfinite(exponent)  # type: ignore[arg-type]
                                              and exponent % 1)))  # type: ignore[operator]
    if not real:
        raise TypingError(
            f"'{text}' raises a Python number to a Python float exponent that is not a "
            "constant integer: Python's result is complex for a negative base, the "
            "kernel's would be NaN; convert the base to a NumPy float first "
            "(e.g. g.f64(x) ** 0.5 is NaN for a negative x, as in NumPy)")
    if a.weak is not None and b.weak is not None:
        return binary("pow", a, b)  # Python's float ** is the C library's pow
    t = join(a.ty, b.ty).type
    if not is_float(t) or any(v.weak is None and v.type is t for v in (a, b)):
        return binary("pow", a, b)  # NumPy's scalar ** of type t: the C library's pow
    return _ufunc_power(text, coerce(a, Ty(t)), b, t)


_POWER_FAST_PATHS = (-1.0, 0.0, 0.5, 1.0, 2.0)
"""Exponents NumPy's float ``power`` loop computes without ``pow`` (NumPy 2)."""


def _ufunc_power(text: str, x: Value, e: Value, t: ScalarType) -> Value:
    """``x ** e`` where NumPy's scalars defer to the ``power`` ufunc of float type ``t``
    (neither operand is a ``t`` scalar: ``i64 ** 0.5``, a Python float ``**`` an ``i64``).
    That loop computes the exponents -1, 0, 0.5, 1, 2 as ``1 / x``, ``1``, ``sqrt(x)``,
    ``x``, ``x * x``; any other goes to a SIMD ``pow`` chosen by the CPU: rejected."""
    value = e.expr.value if isinstance(e.expr, Const) else None
    if value is None or float(value) not in _POWER_FAST_PATHS:
        raise TypingError(
            f"'{text}' mixes types whose ** NumPy computes with its power ufunc, whose "
            f"result for this exponent depends on the CPU; convert the base to "
            f"{describe_type(t)} first (e.g. g.{describe_type(t)}(x) ** y, the C "
            "library's pow) or use a constant exponent of -1, 0, 0.5, 1 or 2")
    k = float(value)
    one = const_of(1, t)
    if k == -1.0:
        return Value(Binary("truediv", one, x.expr, t))
    if k == 0.0:
        return Value(one)
    if k == 0.5:
        return Value(CallIntrinsic("sqrt", (x.expr,), t))
    if k == 1.0:
        return x
    return Value(Binary("mul", x.expr, x.expr, t))


def binary_rule(op: str, node: ast.AST) -> Callable[[Value, Value], Value]:
    """The typing rule of binary operator ``op`` written as ``node`` (``x op y`` or
    ``x op= y``): :func:`power` for ``**``, which names the expression, else :func:`binary`."""
    if op == "pow":
        return partial(power, ast.unparse(node))
    return partial(binary, op)


def compare(op: str, a: Value, b: Value) -> Value:
    """``a op b`` for an IR CompareOp name; the result is bool."""
    sym = SYMBOLS[op]
    _require_scalar(a, f"'{sym}'")
    _require_scalar(b, f"'{sym}'")
    if a.is_weak_const and b.is_weak_const:
        return weak_const(_PY_COMPARE[op](a.py, b.py))
    known = _out_of_range(op, a, b)
    if known is not None:
        return Value(Const(known, np.bool_))
    exact = _exact_int_compare(op, a, b)
    if exact is not None:
        return exact
    t = join(a.ty, b.ty)
    result = Compare(op, coerce(a, t).expr, coerce(b, t).expr, np.bool_)  # type: ignore[arg-type]
    return Value(result, "bool" if t.weak is not None else None)


_FLIP = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def _exact_int_compare(op: str, a: Value, b: Value) -> Value | None:
    """NumPy 2 compares integers exactly even when their promoted type is a float (i64 vs
    u64) and compares a Python int with any integer type by value. Lowered as: a run-time
    Python int against a narrower type is compared in i64; anything signed against u64 as
    ``s < 0 or u64(s) < u`` (and the like)."""
    def int_like(v: Value) -> bool:
        return is_int(v.type) and (v.weak is None or v.weak == "int")

    if not (int_like(a) and int_like(b)) or a.is_weak_const or b.is_weak_const:
        return None
    strong = (a.weak is None) + (b.weak is None)
    if strong == 0 or (strong == 2 and not is_float(promote(a.type, b.type))):
        return None  # both Python ints, or an ordinary integer promotion
    if is_unsigned64(a.type) and not is_unsigned64(b.type):
        return _exact_int_compare(_FLIP[op], b, a)
    if not is_unsigned64(b.type):
        # a weak run-time int against a narrower strong integer: compare in i64
        wide = Ty(i64)
        return Value(Compare(op, coerce(a, wide).expr, coerce(b, wide).expr, np.bool_))  # type: ignore[arg-type]
    s = a.expr
    zero = const_of(0, s.type)  # type: ignore[arg-type]
    as_u = Compare(op, Cast(s, np.uint64), b.expr, np.bool_)  # type: ignore[arg-type]
    if op in ("eq", "gt", "ge"):
        return Value(Logical("and", Compare("ge", s, zero, np.bool_), as_u, np.bool_))
    return Value(Logical("or", Compare("lt", s, zero, np.bool_), as_u, np.bool_))


def is_unsigned64(t: object) -> bool:
    """True for u64."""
    return t is np.uint64


def _out_of_range(op: str, a: Value, b: Value) -> bool | None:
    """NumPy 2 compares a strong integer with any Python int exactly, even one outside the
    type's range: such a comparison has a constant result."""
    if a.is_weak_const and b.weak is None and is_int(b.type) and a.weak == "int":
        flipped = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}.get(op, op)
        return _out_of_range(flipped, b, a)
    if not (b.is_weak_const and b.weak == "int" and a.weak is None and is_int(a.type)):
        return None
    lo, hi = int_range(a.type)
    c = int(b.py)  # type: ignore[arg-type]
    if lo <= c <= hi:
        return None
    above = c > hi  # every value of a is below c
    return {"eq": False, "ne": True, "lt": above, "le": above,
            "gt": not above, "ge": not above}[op]


def truth(v: Value) -> Value:
    """A condition: bools as they are, numbers compared with zero (Python truthiness)."""
    if not is_scalar(v.type):
        raise TypingError(f"a condition needs a number or bool, got {describe_type(v.type)}")
    if v.type is np.bool_:
        return v
    if v.is_weak_const:
        return weak_const(bool(v.py))
    zero = Value(const_of(0, v.type))  # type: ignore[arg-type]
    r = Compare("ne", v.expr, zero.expr, np.bool_)
    return Value(r, "bool" if v.weak is not None else None)


def logical_not(v: Value) -> Value:
    """``not v`` (numbers by truthiness): a Python bool, whatever ``v`` is (so ``~(not v)``
    is ``-2``/``-1`` as in Python, not NumPy's logical inversion)."""
    b = truth(v)
    if b.is_weak_const:
        return weak_const(not b.py)
    return Value(Not(b.expr, np.bool_), "bool")


def logical(op: str, a: Value, b: Value) -> Value:
    """Short-circuit ``and``/``or`` of two bools (numbers are rejected: Python would
    return one of the operands, not a bool)."""
    for v in (a, b):
        if v.type is not np.bool_:
            raise TypingError(f"'{op}' needs bool operands, got {v.ty.describe()}; "
                              "compare explicitly (e.g. x != 0)")
    weak = "bool" if a.weak is not None and b.weak is not None else None
    return Value(Logical(op, a.expr, b.expr, np.bool_), weak)  # type: ignore[arg-type]


def negate(v: Value) -> Value:
    """``-v``."""
    _require_scalar(v, "unary '-'")
    if v.type is np.bool_ and v.weak is None:
        raise TypingError("unary '-' on a bool is not allowed (NumPy raises); cast first")
    if v.is_weak_const:
        return weak_const(-v.py)  # type: ignore[operator]
    if v.weak == "bool":
        v = coerce(v, Ty(i64, "int"))
    return Value(Unary("neg", v.expr, v.type), v.weak)  # type: ignore[arg-type]


def invert(v: Value) -> Value:
    """``~v`` on integers and bools (a NumPy bool inverts logically, a Python bool as int)."""
    _require_scalar(v, "'~'")
    if is_float(v.type):
        raise TypingError(f"'~' needs an integer or bool, got {v.ty.describe()}")
    if v.is_weak_const:  # a Python bool inverts as its int (without 3.12's warning)
        return weak_const(~int(v.py))  # type: ignore[call-overload]
    if v.weak == "bool":
        v = coerce(v, Ty(i64, "int"))
    if v.type is np.bool_:
        return Value(Not(v.expr, np.bool_))
    return Value(Unary("invert", v.expr, v.type), v.weak)  # type: ignore[arg-type]


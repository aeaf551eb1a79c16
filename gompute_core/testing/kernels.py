"""Kernel functions and params classes of the conformance suite.

Every function here is written in the kernel language *and* is the oracle:
the suite runs it as plain Python on NumPy scalars and compares each backend's
result with that run. Keep them free of anything a NumPy scalar does not do.
Params classes whose field types depend on the value type are generated per
scalar type (``COEF[T]``); their C struct names come from the generated
class names, so they are stable across processes.
"""

import enum

import numpy as np

import gompute_core as g
from gompute_core.types import SCALAR_TYPES, short_name


def _params_class(name: str, fields: dict[str, object]) -> type:
    """A ``@g.params`` class called ``name`` with ``fields`` (name -> declared type)."""
    cls = type(name, (), {"__annotations__": dict(fields), "__module__": __name__,
                          "__qualname__": name})
    return g.params(cls)


def _decl(t: type) -> type:
    """The declared type of a params field holding a ``t`` (``bool`` for np.bool_)."""
    return bool if t is np.bool_ else t


COEF: dict[type, type] = {
    t: _params_class(f"Coef_{short_name(t)}", {"a": _decl(t), "b": _decl(t)})
    for t in SCALAR_TYPES
}
"""Per value type T: a params class with two fields ``a: T`` and ``b: T``."""


# ---------------------------------------------------------------- every kind, every type
def map_affine(x, p):
    """map over any number type: wraps for integers, one rounding per op for floats."""
    return x * p.a + p.b


def map_bool(x, p):
    """map over bool."""
    return (x != p.a) or (x and p.b)


def cast_ident(x, p):
    """map_to: the frontend's final cast to Out is the whole kernel."""
    return x


def zip_affine(a, b, p):
    """zip over one number type."""
    return a * p.a - b + p.b


def zip_mixed(a, b, p):
    """zip over two different types: NumPy promotion of A and B, then the cast to Out."""
    return a + b * 3


def zip_bool(a, b, p):
    """zip over bools."""
    return (a and not b) or (b and p.a)


def idx_select(x, i, p):
    """map_indexed: the index chooses the branch."""
    return x * p.a + p.b if i % 3 == 0 else x - p.b


def idx_bool(x, i, p):
    """map_indexed over bool."""
    return x != (i % 2 == 0)


def idx_xor(x, i, p):
    """map_indexed over u64: the index as a value."""
    return x ^ (i * p.a)


def idx_to_float(x, i, p):
    """map_indexed over f32: the index cast to the value type."""
    return g.f32(i) + x * p.a


def annotated(x: np.float32, p: COEF[np.float32]) -> np.float32:
    """A ``g.map_fn`` kernel: T and P come from the annotations."""
    return x * p.a - p.b


def no_params(x):
    """A map with ``P=None``: the function takes the value only."""
    return x * 3 - 1 if x > 0 else -x


def first_nonzero(a, b):
    """An associative, NOT commutative combine: the first non-zero element in order."""
    return a if a != 0 else b


def last_nonzero(a, b):
    """An associative, NOT commutative combine: the last non-zero element in order."""
    return b if b != 0 else a


def xor_combine(a, b):
    """Bitwise xor, associative and commutative."""
    return a ^ b


def max_combine(a, b):
    """max by a conditional expression."""
    return a if a > b else b


def bool_parity(a, b):
    """xor of bools."""
    return a != b


def pre_affine(x, p):
    """A reduce ``pre`` using params."""
    return x * p.a + p.b


def pre_absdiff(x, p):
    """A float reduce ``pre``."""
    return abs(x - p.b)


def pre_square(x, p):
    """A sum ``pre``: sum of squares."""
    return x * x


# ---------------------------------------------------------------- kernel-language semantics
class IntOp(enum.IntEnum):
    """Integer operations selected at run time by a params enum field."""

    ADD = 0
    SUB = 1
    MUL = 2
    FLOORDIV = 3
    MOD = 4
    AND = 5
    OR = 6
    XOR = 7
    LSHIFT = 8
    RSHIFT = 9
    NEG = 10
    INVERT = 11
    ABS = 12
    MIN = 13
    MAX = 14
    LT = 15
    EQ = 16


@g.params
class IntOpSel:
    """Which integer operation ``int_ops`` performs."""

    op: g.Enum[IntOp, g.u8]


def int_ops(a, b, p):
    """Every integer operator, one per enum member (if/elif chain)."""
    op = p.op
    if op == IntOp.ADD:
        return a + b
    elif op == IntOp.SUB:
        return a - b
    elif op == IntOp.MUL:
        return a * b
    elif op == IntOp.FLOORDIV:
        return a // b
    elif op == IntOp.MOD:
        return a % b
    elif op == IntOp.AND:
        return a & b
    elif op == IntOp.OR:
        return a | b
    elif op == IntOp.XOR:
        return a ^ b
    elif op == IntOp.LSHIFT:
        return a << b
    elif op == IntOp.RSHIFT:
        return a >> b
    elif op == IntOp.NEG:
        return -a
    elif op == IntOp.INVERT:
        return ~a
    elif op == IntOp.ABS:
        return abs(a)
    elif op == IntOp.MIN:
        return min(a, b)
    elif op == IntOp.MAX:
        return max(a, b)
    elif op == IntOp.LT:
        return a if a < b else b + 1
    else:
        return a if a == b else b


class FloatOp(enum.IntEnum):
    """Float operations selected at run time by a params enum field."""

    ADD = 0
    SUB = 1
    MUL = 2
    DIV = 3
    FLOORDIV = 4
    MOD = 5
    NEG = 6
    ABS = 7
    MIN = 8
    MAX = 9
    WEAK = 10
    SELECT = 11


@g.params
class FloatOpSel:
    """Which float operation ``float_ops`` performs."""

    op: g.Enum[FloatOp, g.i32]


def float_ops(a, b, p):
    """Every float operator, one per enum member."""
    if p.op == FloatOp.ADD:
        return a + b
    if p.op == FloatOp.SUB:
        return a - b
    if p.op == FloatOp.MUL:
        return a * b
    if p.op == FloatOp.DIV:
        return a / b
    if p.op == FloatOp.FLOORDIV:
        return a // b
    if p.op == FloatOp.MOD:
        return a % b
    if p.op == FloatOp.NEG:
        return -a
    if p.op == FloatOp.ABS:
        return abs(a)
    if p.op == FloatOp.MIN:
        return min(a, b)
    if p.op == FloatOp.MAX:
        return max(a, b)
    if p.op == FloatOp.WEAK:
        return a * 0.1 + 3
    return a if a < b else (b if b < 0 else a + b)


def weak_int(x, p):
    """NEP 50 for integers: the literals adopt x's type, so x + 100 wraps before ``//``."""
    return (x + 100) // 7 - 3 * x


def weak_float_from_int(x, p):
    """NEP 50: an int times a weak float literal is f64."""
    return x * 0.5 + 0.25


def explicit_casts(x, p):
    """Casts in the body: i32 -> f32 -> i16 (truncation, wrap) -> i64 -> f64."""
    y = g.f32(x) * 0.75
    z = g.i16(g.i32(y))
    return g.f64(g.i64(z) * 3) + g.f64(g.u8(x))


SCALE = 3
OFFSET = 2.5
LIMIT = 40


class Mode(enum.IntEnum):
    """An enum whose members kernels capture from the module scope."""

    KEEP = 0
    DOUBLE = 1
    NEGATE = 2


@g.params
class Ctl:
    """Params of the control-flow kernels."""

    n: g.i32
    limit: g.i64
    mode: g.Enum[Mode, g.u8]


def _helper_inner(v, k):
    """A helper called from another helper."""
    return v * k + 1


def _helper(v, k):
    """A helper kernel function (inlined by the frontend)."""
    return _helper_inner(v, k) - k


def loops(x, p):
    """for with continue/break, while with break, if/elif/else, ternaries, constants."""
    acc = x
    for k in range(p.n):
        if k % 3 == 0:
            continue
        if acc > p.limit:
            break
        acc = acc + k * SCALE
    steps = 0
    n = abs(acc) % 97 + 1
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
        if steps >= LIMIT:
            break
    if p.mode == Mode.DOUBLE:
        acc = acc * 2
    elif p.mode == Mode.NEGATE:
        acc = -acc
    else:
        acc = acc + 0
    return acc + (steps if acc > 0 else -steps) + _helper(x % 5, SCALE)


def float_helpers(x, p):
    """Float body with helpers, module constants, min/max/abs and a while loop."""
    y = _helper(x, OFFSET)
    while y > 100.0:
        y = y / 4
    m = max(min(y, 50.0), -50.0)
    return abs(m) if p.mode == Mode.KEEP else -m


def _stats(t):
    """Reads a caller's local array; returns three values."""
    lo = t[0, 0]
    hi = t[0, 0]
    s = 0.0
    for i in range(2):
        for j in range(4):
            lo = min(lo, t[i, j])
            hi = max(hi, t[i, j])
            s += t[i, j]
    return lo, hi, s


def arrays_tuples(x, p):
    """A 2-D per-thread array filled in loops, a helper taking it and returning a tuple,
    unpacking, a swap and a constant item index."""
    t = g.local_array(g.f64, (2, 4))
    for j in range(4):
        t[0, j] = x * j
        t[1, j] = x - j
    t[1, -1] += 0.5
    lo, hi, s = _stats(t)
    lo, hi = hi, lo
    return (hi - lo) * 0.25 + s if p.mode == Mode.KEEP else _stats(t)[2] - t[1, 3]


class MathFn(enum.IntEnum):
    """The ``g.math`` function ``math_fns`` applies (tolerant ones after SQRT)."""

    FLOOR = 0
    CEIL = 1
    TRUNC = 2
    FABS = 3
    COPYSIGN = 4
    FMOD = 5
    SQRT = 6
    EXP = 7
    LOG = 8
    LOG2 = 9
    LOG10 = 10
    EXP2 = 11
    SIN = 12
    COS = 13
    TAN = 14
    TANH = 15
    ASIN = 16
    ACOS = 17
    ATAN = 18
    ATAN2 = 19
    SINH = 20
    COSH = 21
    HYPOT = 22
    EXPM1 = 23
    LOG1P = 24
    ERF = 25
    ISNAN = 26
    ISINF = 27
    ISFINITE = 28
    FMA_ERROR = 29
    FMA_SQUARE = 30
    ERFC = 31
    ERFINV = 32
    ERFCINV = 33


@g.params
class MathSel:
    """Which ``g.math`` function ``math_fns`` applies."""

    fn: g.Enum[MathFn, g.u16]


def math_fns(a, b, p):
    """Every ``g.math`` function, one per enum member; predicates return 1 or 0."""
    f = p.fn
    if f == MathFn.FLOOR:
        return g.math.floor(a)
    if f == MathFn.CEIL:
        return g.math.ceil(a)
    if f == MathFn.TRUNC:
        return g.math.trunc(a)
    if f == MathFn.FABS:
        return g.math.fabs(a)
    if f == MathFn.COPYSIGN:
        return g.math.copysign(a, b)
    if f == MathFn.FMOD:
        return g.math.fmod(a, b)
    if f == MathFn.SQRT:
        return g.math.sqrt(a)
    if f == MathFn.EXP:
        return g.math.exp(a)
    if f == MathFn.LOG:
        return g.math.log(a)
    if f == MathFn.LOG2:
        return g.math.log2(a)
    if f == MathFn.LOG10:
        return g.math.log10(a)
    if f == MathFn.EXP2:
        return g.math.exp2(a)
    if f == MathFn.SIN:
        return g.math.sin(a)
    if f == MathFn.COS:
        return g.math.cos(a)
    if f == MathFn.TAN:
        return g.math.tan(a)
    if f == MathFn.TANH:
        return g.math.tanh(a)
    if f == MathFn.ASIN:
        return g.math.asin(a)
    if f == MathFn.ACOS:
        return g.math.acos(a)
    if f == MathFn.ATAN:
        return g.math.atan(a)
    if f == MathFn.ATAN2:
        return g.math.atan2(a, b)
    if f == MathFn.SINH:
        return g.math.sinh(a)
    if f == MathFn.COSH:
        return g.math.cosh(a)
    if f == MathFn.HYPOT:
        return g.math.hypot(a, b)
    if f == MathFn.EXPM1:
        return g.math.expm1(a)
    if f == MathFn.LOG1P:
        return g.math.log1p(a)
    if f == MathFn.ERF:
        return g.math.erf(a)
    if f == MathFn.ERFC:
        return g.math.erfc(a)
    if f == MathFn.ERFINV:
        return g.math.erfinv(a)
    if f == MathFn.ERFCINV:
        return g.math.erfcinv(a)
    if f == MathFn.FMA_ERROR:  # the rounding error of a * b: a * b - a * b is 0
        return g.math.fma(a, b, -(a * b))
    if f == MathFn.FMA_SQUARE:
        return g.math.fma(a, a, b)
    if f == MathFn.ISNAN:
        return 1.0 if g.math.isnan(a) else 0.0
    if f == MathFn.ISINF:
        return 1.0 if g.math.isinf(a) else 0.0
    return 1.0 if g.math.isfinite(a) else 0.0

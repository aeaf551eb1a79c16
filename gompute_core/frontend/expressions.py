"""Expression lowering: one handler per accepted AST node type; everything else is a
KernelSyntaxError naming the construct."""

from __future__ import annotations

import ast
import types
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ..ir.nodes import (
    ArrayType,
    Binary,
    Cast,
    Field,
    Index,
    LocalType,
    StructType,
    TupleType,
    Var,
)
from ..types import is_float, is_int, short_name
from . import memory, ops
from .choice import Choice, Operand, choose, distribute, settle, settle_to
from .context import FnContext, Static
from .kmath import MathNamespace
from .values import (
    Ty,
    TypingError,
    Value,
    describe_type,
    is_scalar,
    materialize,
    strong_const,
    weak_const,
)

_BINOPS: dict[type[ast.operator], str] = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv",
    ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.LShift: "lshift",
    ast.RShift: "rshift", ast.BitAnd: "bitand", ast.BitOr: "bitor", ast.BitXor: "bitxor",
}
_CMPOPS: dict[type[ast.cmpop], str] = {
    ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge",
}

CONSTRUCT_NAMES: dict[str, str] = {
    "ListComp": "list comprehension", "SetComp": "set comprehension",
    "DictComp": "dict comprehension", "GeneratorExp": "generator expression",
    "Lambda": "lambda (define a helper kernel function with def)", "Yield": "yield",
    "YieldFrom": "yield from", "Await": "await", "JoinedStr": "f-string",
    "FormattedValue": "f-string", "List": "list", "Tuple": "tuple", "Dict": "dict",
    "Set": "set", "Starred": "starred expression", "NamedExpr": "assignment expression (:=)",
    "Slice": "slice", "MatMult": "matrix multiplication (@)", "Is": "'is' comparison",
    "IsNot": "'is not' comparison", "In": "'in' test", "NotIn": "'not in' test",
    "Try": "try statement", "TryStar": "try statement", "With": "with statement",
    "AsyncWith": "async with", "Raise": "raise", "Assert": "assert", "Delete": "del",
    "Import": "import", "ImportFrom": "import", "Global": "global", "Nonlocal": "nonlocal",
    "FunctionDef": "nested function definition", "AsyncFunctionDef": "nested function",
    "ClassDef": "class definition", "Match": "match statement", "AsyncFor": "async for",
    "AnnAssign": "annotated assignment (the oracle would not convert; use g.f32(...))",
}


def construct_name(node: ast.AST) -> str:
    """A readable name of an AST construct for messages."""
    key = type(node).__name__
    return CONSTRUCT_NAMES.get(key, key)


_HINTS: dict[str, str] = {
    "List": "; for a per-thread array, declare g.local_array(T, n)",
}
"""What to write instead of a construct, by AST class name."""


def reject(ctx: FnContext, node: ast.AST, what: str | None = None) -> Any:
    """Raise the KernelSyntaxError for a construct outside the kernel language."""
    name = what or construct_name(node)
    hint = _HINTS.get(type(node).__name__, "")
    ctx.fail(node, f"{name} is not supported in kernel code{hint}", type(node).__name__)


def classify(ctx: FnContext, node: ast.AST, obj: Any, text: str) -> Value | Static:
    """A captured Python object: numbers (IntEnum members included) become weak constants,
    NumPy scalars strong constants; modules, classes, functions stay static. NumPy scalars
    are tested first: ``np.float64`` subclasses ``float`` but is strong under NEP 50."""
    if isinstance(obj, np.generic):
        return ctx.typing(node, strong_const, obj)
    if isinstance(obj, bool):
        return ctx.typing(node, weak_const, obj)
    if isinstance(obj, int):
        return ctx.typing(node, weak_const, int(obj))
    if isinstance(obj, float):
        return ctx.typing(node, weak_const, float(obj))
    return Static(obj, text)


def lower_any(ctx: FnContext, node: ast.expr) -> Operand | Static:
    """Lower an expression that may name a compile-time object."""
    handler = EXPR_HANDLERS.get(type(node))
    if handler is None:
        return reject(ctx, node)
    return handler(ctx, node)


def lower_operand(ctx: FnContext, node: ast.expr) -> Operand:
    """Lower a run-time value, which may be a Choice of alternatives of different types
    (see :mod:`.choice`)."""
    v = lower_any(ctx, node)
    if isinstance(v, Static):
        ctx.fail(node, f"'{v.text}' is {_describe_static(v.obj)}, not a value usable in "
                       "kernel code", type(node).__name__)
    return v


def lower_expr(ctx: FnContext, node: ast.expr) -> Value:
    """Lower a run-time value of one type (a Choice must agree in type: see :mod:`.choice`)."""
    return ctx.typing(node, settle, lower_operand(ctx, node))


def condition(ctx: FnContext, node: ast.AST, v: Operand) -> Value:
    """Python truthiness of ``v`` as a bool (each alternative of a Choice on its own)."""
    truth = ctx.typing(node, distribute, ops.truth, v)
    if isinstance(truth, Choice):
        return ctx.typing(node, settle_to, truth, Ty(np.bool_))
    return truth


def _describe_static(obj: Any) -> str:
    if isinstance(obj, types.ModuleType):
        return f"the module {obj.__name__}"
    if isinstance(obj, type):
        return f"the class {obj.__qualname__}"
    if callable(obj):
        return f"the function {getattr(obj, '__qualname__', obj)!r}"
    return f"a {type(obj).__name__}"


def _name(ctx: FnContext, node: ast.Name) -> Value | Static:
    name = node.id
    param = ctx.params.get(name)
    if param is not None and name not in ctx.local_names:
        if param.ty is None or param.name is None:
            ctx.fail(node, f"parameter '{name}' has nothing bound to it (the spec has no "
                           "params); remove its uses", "Name")
        return Value(Var(param.name, param.ty.type), param.ty.weak)
    if name in ctx.local_names:
        ty = ctx.local_type(node, name)
        return Value(Var(ctx.ir_names[name], ty.type), ty.weak)
    found, obj = ctx.src.lookup(name)
    if not found:
        ctx.fail(node, f"name '{name}' is not defined", "Name")
    return classify(ctx, node, obj, name)


def _attribute(ctx: FnContext, node: ast.Attribute) -> Value | Static:
    base = lower_any(ctx, node.value)
    text = f"{ast.unparse(node.value)}.{node.attr}"
    if isinstance(base, Choice):
        base = ctx.typing(node, settle, base)
    if isinstance(base, Static):
        obj = base.obj
        from ..fusion import Fused, Unary

        if isinstance(obj, (Fused, Unary)) and node.attr in ("eval", "__call__"):
            return Static(getattr(obj, node.attr), text)
        if not isinstance(obj, (types.ModuleType, type, MathNamespace)):
            ctx.fail(node, f"attribute access on '{base.text}' ({_describe_static(obj)}): "
                           "only params, modules, classes, g.math and the eval of g.Fused/"
                           "g.Unary objects have attributes in kernel code", "Attribute")
        try:
            value = getattr(obj, node.attr)
        except AttributeError:
            ctx.fail(node, f"'{base.text}' has no attribute '{node.attr}'", "Attribute")
        return classify(ctx, node, value, text)
    if not isinstance(base.type, StructType):
        ctx.fail(node, f"attribute access '.{node.attr}' on a {base.ty.describe()} value: "
                       "only params records have attributes", "Attribute")
    try:
        fld = base.type.layout.field(node.attr)  # type: ignore[attr-defined]
    except KeyError:
        ctx.fail(node, f"params {base.type.name} has no field '{node.attr}'", "Attribute")
    return Value(Field(base.expr, node.attr, fld.type))


def _subscript(ctx: FnContext, node: ast.Subscript) -> Value:
    base = lower_expr(ctx, node.value)
    if memory.is_memory(base):
        return memory.load(ctx, node, base)
    if isinstance(base.type, LocalType):
        from . import arrays

        return arrays.load(ctx, node, base)
    if isinstance(base.type, TupleType):
        from . import tuples

        return tuples.item(ctx, node, base)
    if not isinstance(base.type, ArrayType):
        ctx.fail(node, f"indexing a {base.ty.describe()}: only params arrays "
                       "(g.Array fields), local arrays (g.local_array) and a raw kernel's "
                       "arrays can be indexed", "Subscript")
    if isinstance(node.slice, ast.Slice):
        reject(ctx, node.slice)
    idx = lower_expr(ctx, node.slice)
    if not is_scalar(idx.type) or not (is_int(idx.type) and idx.type is not np.bool_):
        ctx.fail(node, f"array index must be an integer, got {idx.ty.describe()}"
                       f"{mixed_integer_hint(node.slice, idx)}", "Subscript")
    length = base.type.length
    if idx.is_weak_const:
        i = int(idx.py)  # type: ignore[arg-type]
        if not -length <= i < length:
            ctx.fail(node, f"index {i} out of range for {ast.unparse(node.value)} "
                           f"(length {length})", "Subscript")
        idx = ctx.typing(node, weak_const, i % length)
    return Value(Index(base.expr, materialize(idx).expr, base.type.elem, where=ctx.where(node)))


def mixed_integer_hint(node: ast.expr, v: Value) -> str:
    """For a float index computed from integers of mixed signedness (``u64 // i64`` is an
    ``f64`` in NumPy, which no array takes as an index: the function run on NumPy scalars
    raises there too): why, and the cast that fixes it; "" otherwise."""
    e = v.expr
    if not (isinstance(e, Binary) and is_float(e.type)):
        return ""
    sides = [x.value.type for x in (e.lhs, e.rhs) if isinstance(x, Cast)]
    if len(sides) != 2 or not all(is_int(t) for t in sides):
        return ""
    a, b = (short_name(t) for t in sides)
    return (f": '{ast.unparse(node)}' combines {a} and {b}, which NumPy promotes to "
            f"{short_name(e.type)}, not an index (the function run on NumPy scalars raises "
            f"there too); convert one operand so that both have one signedness, e.g. "
            f"g.i64(...) around the {'u64' if 'u64' in (a, b) else a} operand")


def _constant(ctx: FnContext, node: ast.Constant) -> Value:
    if isinstance(node.value, (bool, int, float)):
        return ctx.typing(node, weak_const, node.value)
    kind = {str: "string", bytes: "bytes", complex: "complex number"}.get(
        type(node.value), repr(node.value))
    return reject(ctx, node, f"{kind} constant")


def _binop(ctx: FnContext, node: ast.BinOp) -> Operand:
    op = _BINOPS.get(type(node.op))
    if op is None:
        return reject(ctx, node, construct_name(node.op))
    a = lower_operand(ctx, node.left)
    b = lower_operand(ctx, node.right)
    return ctx.typing(node, distribute, ops.binary_rule(op, node), a, b)


def _unary_plus(v: Value) -> Value:
    if not is_scalar(v.type) or v.type is np.bool_:
        raise TypingError(f"unary '+' needs a number, got {v.ty.describe()}")
    return v


_UNARY: dict[type[ast.unaryop], Callable[[Value], Value]] = {
    ast.USub: ops.negate, ast.Not: ops.logical_not, ast.Invert: ops.invert,
    ast.UAdd: _unary_plus,
}


def _unaryop(ctx: FnContext, node: ast.UnaryOp) -> Operand:
    v = lower_operand(ctx, node.operand)
    return ctx.typing(node, distribute, _UNARY[type(node.op)], v)


def python_logical(op: str, text: str, a: Value, b: Value) -> Operand:
    """``a and b`` / ``a or b`` of two bools. Python returns one of the operands itself, so a
    NumPy bool with a Python bool is a Choice of the two (``~`` differs on them)."""
    result = ops.logical(op, a, b)
    if (a.weak is None) == (b.weak is None):
        return result
    return choose(a.expr, b, a, text) if op == "and" else choose(a.expr, a, b, text)


def _boolop(ctx: FnContext, node: ast.BoolOp) -> Operand:
    op = "and" if isinstance(node.op, ast.And) else "or"
    acc = lower_operand(ctx, node.values[0])
    for operand in node.values[1:]:
        acc = ctx.typing(node, distribute, partial(python_logical, op, ast.unparse(node)), acc,
                         lower_operand(ctx, operand))
    return acc


def _compare(ctx: FnContext, node: ast.Compare) -> Operand:
    """``a < b < c`` is ``a < b and b < c`` (``b`` is pure, evaluating it twice is safe)."""
    operands = [lower_operand(ctx, node.left)]
    terms: list[Operand] = []
    for cmpop, right_node in zip(node.ops, node.comparators, strict=True):
        op = _CMPOPS.get(type(cmpop))
        if op is None:
            return reject(ctx, node, construct_name(cmpop))
        operands.append(lower_operand(ctx, right_node))
        terms.append(ctx.typing(node, distribute, partial(ops.compare, op), operands[-2],
                                operands[-1]))
    result = terms[0]
    for term in terms[1:]:
        result = ctx.typing(node, distribute, partial(python_logical, "and", ast.unparse(node)),
                            result, term)
    return result


def _ifexp(ctx: FnContext, node: ast.IfExp) -> Operand:
    """A Select, or a Choice when the alternatives differ in type (Python returns the chosen
    one unchanged: see :mod:`.choice`)."""
    cond = condition(ctx, node, lower_operand(ctx, node.test))
    if cond.is_weak_const:
        return lower_operand(ctx, node.body if cond.py else node.orelse)
    a = lower_operand(ctx, node.body)
    b = lower_operand(ctx, node.orelse)
    for side in (a, b):
        if isinstance(side, Value) and not is_scalar(side.type):
            ctx.fail(node, "a conditional expression must give numbers, not "
                           f"{describe_type(side.type)}", "IfExp")
    return ctx.typing(node, choose, cond.expr, a, b, ast.unparse(node))


def _call(ctx: FnContext, node: ast.Call) -> Operand | Static:
    from .calls import lower_call

    return lower_call(ctx, node)


EXPR_HANDLERS: dict[type[ast.AST], Callable[[FnContext, Any], Operand | Static]] = {
    ast.Name: _name,
    ast.Attribute: _attribute,
    ast.Subscript: _subscript,
    ast.Constant: _constant,
    ast.BinOp: _binop,
    ast.UnaryOp: _unaryop,
    ast.BoolOp: _boolop,
    ast.Compare: _compare,
    ast.IfExp: _ifexp,
    ast.Call: _call,
}
"""The accepted expression constructs; anything else is rejected by name and line."""

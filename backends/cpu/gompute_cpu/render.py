"""IR functions rendered as numba-ready Python with NumPy's scalar semantics.

Every value carries its IR type explicitly: constants are typed
(``np.float32(0.5)``), every integer result is cast back to its IR type
(numba widens ``int32 + int32`` to ``int64``; the cast truncates, i.e.
wraps), and the operations whose NumPy result is not "the C operation, cast
back" call a helper from :mod:`.helpers`. Names never collide: IR variables
render as ``v_<name>``, params leaves as ``s<k>_v_<name>``, IR functions as
``f_<name>``, internals start with ``_``.

Transcendental functions (``exp``, ``sin``, ...) call numba's math, which
is the C library's; NumPy's ufuncs use their own SIMD versions, so those
may differ from the oracle by a few ulps (at most 3 measured; see the
README). ``sqrt``, rounding functions and the arithmetic operators are exact
everywhere and match bit for bit.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence

import numpy as np

from gompute_core.errors import Unsupported
from gompute_core.ir import nodes as ir
from gompute_core.ir.intrinsics import BY_NAME
from gompute_core.ir.visitor import Visitor
from gompute_core.types import ScalarType, is_float, is_signed

from .helpers import TYPE_NAMES, helper_name, wrapping
from .params import is_aggregate, leaves

_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_WRAPPING = {"add": "+", "sub": "-", "mul": "*"}
_ARITH = {"truediv": "/", "bitand": "&", "bitor": "|", "bitxor": "^"}
_BOOL_BINARY = {"bitand": "and", "bitor": "or", "add": "or", "mul": "and"}


def tname(t: ScalarType) -> str:
    """The NumPy constructor that makes a ``t`` in rendered code (``np.float32``)."""
    try:
        return TYPE_NAMES[t]
    except KeyError:
        raise Unsupported(f"the CPU backend has no arithmetic for {np.dtype(t).name}") from None


def const(value: int | float | bool, t: ScalarType) -> str:
    """A typed literal."""
    if t is np.bool_:
        return "True" if value else "False"
    T = tname(t)
    if is_float(t):
        v = float(value)
        if math.isnan(v):
            return f"{T}(np.nan)"
        if math.isinf(v):
            return f"{T}({'-' if v < 0 else ''}np.inf)"
        return f"{T}({v!r})"
    return f"{T}({int(value)})"


def zero(t: ir.IRType) -> str:
    """A zero of scalar or tuple type ``t`` (how locals start: numba wants one type per
    variable)."""
    if isinstance(t, ir.TupleType):
        return "(" + ", ".join(const(0, e) for e in t.elems) + ")"
    return const(0, t)  # type: ignore[arg-type]


def _constant(e: ir.Expr) -> bool:
    """Whether ``e`` is computed from constants alone (LLVM folds it to one)."""
    if isinstance(e, ir.Const):
        return True
    if not isinstance(e, (ir.Unary, ir.Not, ir.Binary, ir.Compare, ir.Logical, ir.Select,
                          ir.Cast, ir.CallIntrinsic)):
        return False
    children = [getattr(e, f.name) for f in dataclasses.fields(e)]
    return all(_constant(c) for c in children if isinstance(c, ir.Expr)) and all(
        _constant(c) for c in getattr(e, "args", ()))


def var(name: str) -> str:
    """Rendered name of the IR variable ``name``."""
    return f"v_{name}"


def leaf_names(name: str, t: ir.IRType) -> list[str]:
    """Rendered names of the leaves of the aggregate variable ``name``."""
    return [f"s{k}_{var(name)}" for k in range(len(leaves(t)))]


MAX_DISPLAY = 30
"""The most items a rendered call or tuple display holds. CPython compiles one with more
(its compiler's ``STACK_USE_GUIDELINE``) through a list turned into a tuple, which numba
cannot type when the items' types differ, and its inliner rejects as a ``*args`` call."""


def packed(items: Sequence[str]) -> str:
    """The tuple of ``items``: displays of at most :data:`MAX_DISPLAY` items, concatenated
    (nested tuples would be shorter to unpack, but numba's parallel array analysis
    mistakes a nested tuple of integers for an array shape and fails)."""
    return " + ".join(f"({', '.join(items[k:k + MAX_DISPLAY])},)"
                      for k in range(0, len(items), MAX_DISPLAY)) or "()"


def call(func: str, args: Sequence[str]) -> str:
    """A call of the rendered function ``func``: its arguments in order, or, when there are
    more than :data:`MAX_DISPLAY`, one :func:`packed` tuple of them (``func`` was defined
    by :func:`define` with as many parameters)."""
    return f"{func}({packed(args) if len(args) > MAX_DISPLAY else ', '.join(args)})"


def define(func: str, params: Sequence[str]) -> list[str]:
    """The ``def`` line of the rendered function ``func`` (its body at depth 1), with the
    line that unpacks its parameters when :func:`call` passes them packed."""
    if len(params) <= MAX_DISPLAY:
        return [f"def {func}({', '.join(params)}):"]
    return [f"def {func}(_packed):", f"    {', '.join(params)} = _packed"]


def arg_names(fn: ir.Function) -> list[str]:
    """Rendered parameter list of ``fn`` (aggregates expand to their leaves)."""
    out: list[str] = []
    for name, t in fn.args:
        out.extend(leaf_names(name, t) if is_aggregate(t) else [var(name)])
    return out


class FunctionRenderer(Visitor):
    """Renders one :class:`ir.Function`; records the helpers it needs in ``helpers``.

    Expressions render as text (``visit(e)``), statements append lines at an indentation
    depth (``visit(s, depth)``)."""

    def __init__(self, fn: ir.Function, helpers: set[tuple[str, ScalarType]]) -> None:
        self.fn = fn
        self.helpers = helpers
        self.types: dict[str, ir.IRType] = dict(fn.args) | dict(fn.locals)
        self.lines: list[str] = []
        self._tmp = 0

    # expressions -------------------------------------------------------------------------

    def helper(self, op: str, t: ScalarType) -> str:
        """Name of helper ``op`` for ``t``, registering it."""
        self.helpers.add((op, t))
        return helper_name(op, t)

    def access(self, e: ir.Expr) -> tuple[str, tuple[str, ...], list[str]]:
        """Split a params access path into (root variable, field names, rendered indices)."""
        names: list[str] = []
        idx: list[str] = []
        while isinstance(e, (ir.Field, ir.Index)):
            if isinstance(e, ir.Field):
                names.insert(0, e.name)
            else:
                idx.insert(0, self.expr(e.index))
            e = e.base
        if not isinstance(e, ir.Var):
            raise Unsupported(f"{self.fn.source}: the CPU backend reads params fields only "
                              f"through a variable, not through {type(e).__name__}")
        return e.name, tuple(names), idx

    def flatten(self, e: ir.Expr) -> list[str]:
        """Rendered leaves of an aggregate-typed (or scalar leaf) access path."""
        root, names, idx = self.access(e)
        root_leaves = leaves(self.types[root])
        sub = "[" + ", ".join(idx) + "]" if idx else ""
        return [f"s{k}_{var(root)}{sub}" for k, leaf in enumerate(root_leaves)
                if leaf.path[:len(names)] == names]

    def backend_name(self) -> str:
        """``cpu``."""
        return "cpu"

    def expr(self, e: ir.Expr) -> str:
        """Render a scalar expression."""
        text: str = self.visit(e)
        return text

    def visit_Const(self, e: ir.Const) -> str:
        return const(e.value, e.type)

    def name_of(self, name: str) -> str:
        """Rendered storage of the scalar IR variable ``name`` (a subclass may keep some
        variables elsewhere, e.g. one slot per thread)."""
        return var(name)

    def visit_Var(self, e: ir.Var) -> str:
        return self.name_of(e.name)

    def visit_Field(self, e: ir.Field) -> str:
        (leaf,) = self.flatten(e)
        return leaf

    visit_Index = visit_Field

    def visit_Unary(self, e: ir.Unary) -> str:
        a, t = self.expr(e.operand), e.type
        if t is np.bool_:
            return f"(not {a})"
        T = tname(t)
        if e.op == "invert":
            return f"{T}(~{a})"
        if is_float(t) or is_signed(t):
            return f"{T}(-{a})"
        return f"{T}({T}(0) - {a})"

    def visit_Not(self, e: ir.Not) -> str:
        return f"(not {self.expr(e.operand)})"

    def visit_Binary(self, e: ir.Binary) -> str:
        a, b, t, op = self.expr(e.lhs), self.expr(e.rhs), e.type, e.op
        if t is np.bool_:
            if op == "bitxor":
                return f"({a} != {b})"
            return f"({a} {_BOOL_BINARY[op]} {b})"
        T = tname(t)
        if op in _WRAPPING:
            return wrapping(T, a, _WRAPPING[op], b)
        if op in _ARITH:
            return f"{T}({a} {_ARITH[op]} {b})"
        return f"{self.helper(op, t)}({a}, {b})"

    def visit_Compare(self, e: ir.Compare) -> str:
        return f"({self.expr(e.lhs)} {_COMPARE[e.op]} {self.expr(e.rhs)})"

    def visit_Logical(self, e: ir.Logical) -> str:
        return f"({self.expr(e.lhs)} {e.op} {self.expr(e.rhs)})"

    def select_arm(self, e: ir.Expr) -> str:
        """A select's arm: a float constant expression through a fence (:mod:`.fence`), so
        that LLVM cannot trade the select's comparison for one that equal arms seem to
        allow: it took ``b == 0.0`` to make ``0.0f`` and ``f32(b)`` equal, losing ``-0.0``."""
        if is_float(e.type) and _constant(e):
            return f"{self.helper('fence', e.type)}({self.expr(e)})"
        return self.expr(e)

    def visit_Select(self, e: ir.Select) -> str:
        return (f"({self.select_arm(e.if_true)} if {self.expr(e.cond)} "
                f"else {self.select_arm(e.if_false)})")

    def visit_Cast(self, e: ir.Cast) -> str:
        a, src, t = self.expr(e.value), e.value.type, e.type
        if t is np.bool_:
            return a if src is np.bool_ else f"({a} != {const(0, src)})"
        return f"{tname(t)}({a})"

    def visit_CallIntrinsic(self, e: ir.CallIntrinsic) -> str:
        args = [self.expr(a) for a in e.args]
        t, f = e.type, e.func
        entry = BY_NAME.get(f)
        if entry is None or entry.kind == "operator":
            raise Unsupported(f"{self.fn.source}: cpu: unknown math intrinsic {f!r}")
        if f in ("min", "max"):
            return f"{self.helper(f, t)}({args[0]}, {args[1]})"
        if entry.kind == "predicate":
            return f"np.{entry.numpy}({args[0]})"
        if f == "abs":
            return args[0] if t is np.bool_ else f"{tname(t)}(abs({args[0]}))"
        if not is_float(t):
            raise Unsupported(f"{self.fn.source}: {f} on {np.dtype(t).name} "
                              "(math intrinsics take floats)")
        if f == "fma":  # rounded once (LLVM's fma; the oracle's is exact too)
            return f"{self.helper(f, t)}({', '.join(args)})"
        if entry.numpy is None:  # computed in double, then rounded, as g.math does
            doubles = ", ".join(f"np.float64({a})" for a in args)
            return f"{tname(t)}(math.{f}({doubles}))"
        return f"{tname(t)}(np.{entry.numpy}({', '.join(args)}))"

    def visit_LocalLoad(self, e: ir.LocalLoad) -> str:
        return f"{var(e.base.name)}[{', '.join(self.expr(i) for i in e.index)}]"

    def visit_MakeTuple(self, e: ir.MakeTuple) -> str:
        return f"({', '.join(self.expr(i) for i in e.items)})"

    def visit_TupleItem(self, e: ir.TupleItem) -> str:
        return f"{self.expr(e.value)}[{e.index}]"

    def visit_CallFunction(self, e: ir.CallFunction) -> str:
        args: list[str] = []
        for a in e.args:
            args.extend(self.flatten(a) if is_aggregate(a.type) else [self.expr(a)])
        return call(f"f_{e.func}", args)

    # statements --------------------------------------------------------------------------

    def emit(self, depth: int, text: str) -> None:
        """Append one line at indentation ``depth``."""
        self.lines.append("    " * depth + text)

    def block(self, stmts: Iterable[ir.Stmt], depth: int) -> None:
        """Render a statement list (``pass`` when empty)."""
        start = len(self.lines)
        for s in stmts:
            self.visit(s, depth)
        if len(self.lines) == start:
            self.emit(depth, "pass")

    def visit_Assign(self, s: ir.Assign, depth: int) -> None:
        t = self.types[s.name]
        if is_aggregate(t):
            for name, value in zip(leaf_names(s.name, t), self.flatten(s.value), strict=True):
                self.emit(depth, f"{name} = {value}")
        else:
            self.emit(depth, f"{self.name_of(s.name)} = {self.expr(s.value)}")

    def visit_LocalStore(self, s: ir.LocalStore, depth: int) -> None:
        index = ", ".join(self.expr(i) for i in s.index)
        self.emit(depth, f"{var(s.base.name)}[{index}] = {self.expr(s.value)}")

    def visit_If(self, s: ir.If, depth: int) -> None:
        self.emit(depth, f"if {self.expr(s.cond)}:")
        self.block(s.body, depth + 1)
        if s.orelse:
            self.emit(depth, "else:")
            self.block(s.orelse, depth + 1)

    def for_header(self, s: ir.ForRange, depth: int) -> int:
        """Emit the header of ``s`` (and its loop variable's assignment); the body's depth."""
        self._tmp += 1
        k = f"_k{self._tmp}"
        bounds = ", ".join(f"np.int64({self.expr(x)})" for x in (s.start, s.stop, s.step))
        if not isinstance(s.step, ir.Const):
            self.emit(depth, f"if {self.expr(s.step)} != {const(0, s.step.type)}:")
            depth += 1
        self.emit(depth, f"for {k} in range({bounds}):")
        self.emit(depth + 1, f"{self.name_of(s.var)} = {tname(self.types[s.var])}({k})")
        return depth + 1

    def visit_ForRange(self, s: ir.ForRange, depth: int) -> None:
        self.block(s.body, self.for_header(s, depth))

    def visit_While(self, s: ir.While, depth: int) -> None:
        self.emit(depth, f"while {self.expr(s.cond)}:")
        self.block(s.body, depth + 1)

    def visit_Evaluate(self, s: ir.Evaluate, depth: int) -> None:
        self.emit(depth, self.expr(s.value))

    def visit_Break(self, s: ir.Break, depth: int) -> None:
        self.emit(depth, "break")

    def visit_Continue(self, s: ir.Continue, depth: int) -> None:
        self.emit(depth, "continue")

    def visit_Return(self, s: ir.Return, depth: int) -> None:
        self.emit(depth, f"return {self.expr(s.value)}")

    # the function ------------------------------------------------------------------------

    def render(self, options: str = "_OPT") -> str:
        """The decorated ``def`` of the function."""
        fn = self.fn
        if is_aggregate(fn.ret):
            raise Unsupported(f"{fn.source}: kernel function {fn.name} returns a record")
        self.emit(0, f"@njit(**{options})")
        self.lines.extend(define(f"f_{fn.name}", arg_names(fn)))
        for name, t in fn.locals:
            if isinstance(t, ir.LocalType):  # zeroed, as the oracle's numpy.zeros
                self.emit(1, f"{var(name)} = np.zeros({t.shape}, {tname(t.elem)})")
            elif not is_aggregate(t):
                self.emit(1, f"{var(name)} = {zero(t)}")
        self.block(fn.body, 1)
        if not (fn.body and isinstance(fn.body[-1], ir.Return)):
            self.emit(1, f"return {zero(fn.ret)}")  # type: ignore[arg-type]
        return "\n".join(self.lines) + "\n"

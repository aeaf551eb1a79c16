"""Rendering of IR expressions, statements and functions to C-family source.

:class:`FunctionWriter` is driven by a :class:`~gompute_core.codegen.renderer.CRenderer`
(for the dialect's spellings) and records which helpers the code needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import Unsupported
from ..ir import nodes as ir
from ..ir.intrinsics import BY_NAME
from ..ir.visitor import Visitor
from ..types import is_signed
from .ctypes_ import (
    float_literal,
    int_literal,
    is_float_type,
    is_int_type,
    mem_type,
    reg_type,
    wide_unsigned,
    wrap_int,
)
from .helpers import CONSTANT_POWERS
from .select_once import recomputed, with_parameters

if TYPE_CHECKING:
    from .renderer import CRenderer

_ARITH = {"add": "+", "sub": "-", "mul": "*", "truediv": "/",
          "bitand": "&", "bitor": "|", "bitxor": "^"}
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_INT_HELPERS = {"floordiv", "mod", "lshift", "rshift", "pow"}


def _constant_exponent(e: ir.Expr) -> float | None:
    """The exponent of a float ``**`` when it is a constant in ``CONSTANT_POWERS``."""
    if not isinstance(e, ir.Const) or isinstance(e.value, bool):
        return None
    value = float(e.value)
    return value if value in CONSTANT_POWERS else None


def var_name(name: str) -> str:
    """C name of an IR variable (prefixed so no user name meets a C or dialect name)."""
    return "v_" + name


def fn_name(name: str) -> str:
    """C name of an IR function."""
    return "f_" + name


class FunctionWriter(Visitor):
    """Renders expressions and statements of one kernel's functions (one ``visit_<Node>``
    per IR node class; a dialect may subclass it and name the subclass in
    :attr:`CRenderer.writer_class <gompute_core.codegen.renderer.CRenderer.writer_class>`)."""

    def __init__(self, renderer: CRenderer) -> None:
        self.r = renderer

    def backend_name(self) -> str:
        """The dialect's name (``cuda``, ``hip``)."""
        return self.r.name

    def renderer_name(self) -> str:
        """The dialect's class name (``CUDARenderer``)."""
        return type(self.r).__name__

    # ---- loads and stores between storage and registers -------------------------------
    def load(self, text: str, t: ir.IRType) -> str:
        """Convert a storage value ``text`` of type ``t`` to its register form."""
        if t is np.bool_:
            return f"({text} != 0)"
        if t is np.float16:
            self.r.uses_half = True
            return f"{self.r.half_to_float}({text})"
        return text

    def store(self, text: str, t: ir.IRType) -> str:
        """Convert a register value ``text`` of type ``t`` to its storage form."""
        if t is np.bool_:
            return f"(gp_u8)({text})"
        if t is np.float16:
            self.r.uses_half = True
            return f"{self.r.float_to_half}({text})"
        return text

    def round_half(self, text: str, t: ir.IRType) -> str:
        """Round an f16 value computed in float back to f16 precision (identity otherwise)."""
        if t is not np.float16:
            return text
        self.r.uses_half = True
        return f"{self.r.round_half}({text})"

    # ---- expressions ----------------------------------------------------------------
    def place(self, e: ir.Expr) -> str:
        """An lvalue-like path (variable, field, element) in storage form."""
        if isinstance(e, ir.Var):
            return var_name(e.name)
        if isinstance(e, ir.Field):
            return f"{self.place(e.base)}.{self.r.member(e.name)}"
        if isinstance(e, ir.Index):
            return f"{self.place(e.base)}[(gp_i64)({self.expr(e.index)})]"
        raise Unsupported(f"cannot take a path through {type(e).__name__}")

    def expr(self, e: ir.Expr) -> str:
        """Render an expression in register form."""
        text: str = self.visit(e)
        return text

    def visit_Const(self, e: ir.Const) -> str:
        if e.type is np.bool_:
            return "true" if e.value else "false"
        if is_float_type(e.type):
            return float_literal(e.value, e.type, self.r.float_from_bits)
        return int_literal(e.value, e.type)

    def visit_Var(self, e: ir.Var) -> str:
        return var_name(e.name)

    def visit_Field(self, e: ir.Field) -> str:
        return self.load(self.place(e), e.type)

    def visit_Index(self, e: ir.Index) -> str:
        return self.load(self.place(e), e.type)

    def visit_Unary(self, e: ir.Unary) -> str:
        a, t = self.expr(e.operand), e.type
        if e.op == "neg":
            if is_int_type(t):
                u = wide_unsigned(t)
                return wrap_int(f"({u})0 - ({u})({a})", t)
            return f"(-({a}))"
        if t is np.bool_:
            return f"(!({a}))"
        return f"(({reg_type(t)})~({a}))"

    def visit_Not(self, e: ir.Not) -> str:
        return f"(!({self.expr(e.operand)}))"

    def visit_Binary(self, e: ir.Binary) -> str:
        t, op = e.type, e.op
        a, b = self.expr(e.lhs), self.expr(e.rhs)
        c = reg_type(t)
        if t is np.bool_:
            if op in ("bitand", "bitor", "bitxor"):
                return f"((bool)(({a}) {_ARITH[op]} ({b})))"
            raise Unsupported(f"operation {op!r} on bool")
        if is_int_type(t):
            if op in ("add", "sub", "mul"):
                u = wide_unsigned(t)
                return wrap_int(f"({u})({a}) {_ARITH[op]} ({u})({b})", t)
            if op in ("bitand", "bitor", "bitxor"):
                return f"(({c})(({a}) {_ARITH[op]} ({b})))"
            if op in _INT_HELPERS:
                return f"{self.r.need_int_helper(op, t)}({a}, {b})"
            raise Unsupported(f"operation {op!r} on {c}")
        if op in ("add", "sub", "mul", "truediv"):
            return self.round_half(f"(({a}) {_ARITH[op]} ({b}))", t)
        if op in ("floordiv", "mod"):
            return f"{self.r.need_float_helper(op, t)}({a}, {b})"
        if op == "pow":
            y = _constant_exponent(e.rhs)
            if y is not None:
                return f"{self.r.need_constant_power(y, t)}({a})"
            return self.r.math_call("pow", t, [a, b])
        raise Unsupported(f"operation {op!r} on {c}")

    def visit_Compare(self, e: ir.Compare) -> str:
        return f"(({self.expr(e.lhs)}) {_CMP[e.op]} ({self.expr(e.rhs)}))"

    def visit_Logical(self, e: ir.Logical) -> str:
        op = "&&" if e.op == "and" else "||"
        return f"(({self.expr(e.lhs)}) {op} ({self.expr(e.rhs)}))"

    def visit_Select(self, e: ir.Select) -> str:
        shared = recomputed(e)
        bound = with_parameters(e, shared) if shared else None
        if bound is None:
            return (f"(({self.expr(e.cond)}) ? ({self.expr(e.if_true)}) "
                    f": ({self.expr(e.if_false)}))")
        body, params, free = bound
        signature = ", ".join(f"{reg_type(v.type)} {var_name(v.name)}" for v in params + free)
        text = (f"(({self.expr(body.cond)}) ? ({self.expr(body.if_true)}) "
                f": ({self.expr(body.if_false)}))")
        name = self.r.need_select_helper(reg_type(e.type), signature, text)
        args = [self.expr(x) for x in shared] + [var_name(v.name) for v in free]
        return f"{name}({', '.join(args)})"

    def visit_Cast(self, e: ir.Cast) -> str:
        src, dst = e.value.type, e.type
        v = self.expr(e.value)
        if src is dst:
            return v
        if dst is np.bool_:
            return f"(({v}) != 0)"
        if dst is np.float16:
            if src is np.float64:
                self.r.uses_half = True
                return f"{self.r.half_to_float}({self.r.double_to_half}({v}))"
            return self.round_half(f"((float)({v}))", dst)
        return f"(({reg_type(dst)})({v}))"

    def visit_CallIntrinsic(self, e: ir.CallIntrinsic) -> str:
        args = [self.expr(a) for a in e.args]
        f, t = e.func, e.type
        entry = BY_NAME.get(f)
        if entry is None or entry.kind == "operator":
            raise Unsupported(f"{self.backend_name()}: unknown math intrinsic {f!r}")
        if entry.kind == "predicate":
            return f"({self.r.predicate_names[f]}({args[0]}))"
        if not is_float_type(e.args[0].type):
            return self._integer_builtin(f, t, args)
        if entry.c is None:
            return f"{self.r.need_float_helper(f, t)}({', '.join(args)})"
        if entry.c == "fabs" and t is not np.float64:  # exact for f16: no rounding
            return f"{self.r.need_float_abs()}({args[0]})"
        return self.r.math_call(f, t, args)

    def _integer_builtin(self, f: str, t: ir.IRType, args: list[str]) -> str:
        """``abs``/``min``/``max`` of integers or bool (the only intrinsics taking them)."""
        if f in ("min", "max"):
            return f"{self.r.need_int_helper(f, t)}({args[0]}, {args[1]})"
        if f != "abs":
            raise Unsupported(f"{self.backend_name()}: {f} of {reg_type(t)} (math intrinsics "
                              "take floats)")
        if t is np.bool_ or not is_signed(t):
            return args[0]
        return f"{self.r.need_int_helper('abs', t)}({args[0]})"

    def visit_CallFunction(self, e: ir.CallFunction) -> str:
        return f"{fn_name(e.func)}({', '.join(self.expr(a) for a in e.args)})"

    # ---- raw kernels: memory, geometry, atomics -------------------------------------
    def element(self, base: ir.Var, index: tuple[ir.Expr, ...]) -> str:
        """The storage path of a global or shared array's element (one ``[i]`` per
        dimension, each index in 64 bits)."""
        return var_name(base.name) + "".join(f"[(gp_i64)({self.expr(i)})]" for i in index)

    def visit_Geometry(self, e: ir.Geometry) -> str:
        return self.r.geometry_expr(e.func, e.dim)

    def visit_Load(self, e: ir.Load) -> str:
        return self.load(self.element(e.base, e.index), e.type)

    def visit_LocalLoad(self, e: ir.LocalLoad) -> str:
        return self.load(self.element(e.base, e.index), e.type)

    def visit_MakeTuple(self, e: ir.MakeTuple) -> str:
        items = ", ".join(self.expr(i) for i in e.items)
        return f"{self.r.need_tuple(e.type)[1]}({items})"

    def visit_TupleItem(self, e: ir.TupleItem) -> str:
        return f"({self.expr(e.value)}).v{e.index}"

    def visit_Atomic(self, e: ir.Atomic) -> str:
        space = self.r.pointer_space if isinstance(e.base.type, ir.PointerType) \
            else self.r.shared_pointer_space
        compare = None if e.compare is None else self.expr(e.compare)
        return self.r.atomic(e.op, e.type, f"&{self.element(e.base, e.index)}", space,
                             self.expr(e.value), compare)

    # ---- statements ------------------------------------------------------------------
    def stmts(self, body: tuple[ir.Stmt, ...], ind: str, types: dict[str, ir.IRType]) -> str:
        """Render statements at indentation ``ind``; ``types`` maps names to IR types."""
        return "".join(self.stmt(s, ind, types) for s in body)

    def stmt(self, s: ir.Stmt, ind: str, types: dict[str, ir.IRType]) -> str:
        """Render one statement."""
        text: str = self.visit(s, ind, types)
        return text

    def visit_Assign(self, s: ir.Assign, ind: str, types: dict[str, ir.IRType]) -> str:
        return f"{ind}{var_name(s.name)} = {self.expr(s.value)};\n"

    def visit_Return(self, s: ir.Return, ind: str, types: dict[str, ir.IRType]) -> str:
        if s.value is None:  # a raw kernel's bare return
            return f"{ind}return;\n"
        return f"{ind}return {self.expr(s.value)};\n"

    def visit_Store(self, s: ir.Store, ind: str, types: dict[str, ir.IRType]) -> str:
        elem = s.base.type.elem  # type: ignore[union-attr]
        return f"{ind}{self.element(s.base, s.index)} = {self.store(self.expr(s.value), elem)};\n"

    def visit_LocalStore(self, s: ir.LocalStore, ind: str, types: dict[str, ir.IRType]) -> str:
        elem = s.base.type.elem  # type: ignore[union-attr]
        return f"{ind}{self.element(s.base, s.index)} = {self.store(self.expr(s.value), elem)};\n"

    def visit_Barrier(self, s: ir.Barrier, ind: str, types: dict[str, ir.IRType]) -> str:
        return f"{ind}{self.r.block_barrier};\n"

    def visit_Fence(self, s: ir.Fence, ind: str, types: dict[str, ir.IRType]) -> str:
        return f"{ind}{self.r.device_fence};\n"

    def visit_Evaluate(self, s: ir.Evaluate, ind: str, types: dict[str, ir.IRType]) -> str:
        return f"{ind}(void)({self.expr(s.value)});\n"

    def visit_Break(self, s: ir.Break, ind: str, types: dict[str, ir.IRType]) -> str:
        return f"{ind}break;\n"

    def visit_Continue(self, s: ir.Continue, ind: str, types: dict[str, ir.IRType]) -> str:
        return f"{ind}continue;\n"

    def visit_If(self, s: ir.If, ind: str, types: dict[str, ir.IRType]) -> str:
        out = f"{ind}if ({self.expr(s.cond)}) {{\n{self.stmts(s.body, ind + '  ', types)}"
        if s.orelse:
            out += f"{ind}}} else {{\n{self.stmts(s.orelse, ind + '  ', types)}"
        return out + f"{ind}}}\n"

    def visit_While(self, s: ir.While, ind: str, types: dict[str, ir.IRType]) -> str:
        return (f"{ind}while ({self.expr(s.cond)}) {{\n"
                f"{self.stmts(s.body, ind + '  ', types)}{ind}}}\n")

    def visit_ForRange(self, s: ir.ForRange, ind: str, types: dict[str, ir.IRType]) -> str:
        """Python ``range`` semantics: the trip count is computed once, in 64-bit unsigned
        arithmetic, so no bound or step can overflow the loop variable."""
        t = types[s.var]
        c = reg_type(t)
        k = f"gp_k_{s.var}"
        lo, hi, st = f"gp_lo_{s.var}", f"gp_hi_{s.var}", f"gp_st_{s.var}"
        i2 = ind + "  "
        out = (f"{ind}{{\n{i2}const {c} {lo} = {self.expr(s.start)};\n"
               f"{i2}const {c} {hi} = {self.expr(s.stop)};\n"
               f"{i2}const {c} {st} = {self.expr(s.step)};\n"
               f"{i2}gp_u64 gp_n_{s.var} = 0;\n")
        up = (f"if ({st} > 0 && {lo} < {hi}) gp_n_{s.var} = "
              f"((gp_u64){hi} - (gp_u64){lo} - 1) / (gp_u64){st} + 1;")
        if is_signed(t):
            down = (f" else if ({st} < 0 && {lo} > {hi}) gp_n_{s.var} = "
                    f"((gp_u64){lo} - (gp_u64){hi} - 1) / ((gp_u64)0 - (gp_u64){st}) + 1;")
        else:
            down = ""
        out += f"{i2}{up}{down}\n"
        out += (f"{i2}for (gp_u64 {k} = 0; {k} < gp_n_{s.var}; ++{k}) {{\n"
                f"{i2}  {var_name(s.var)} = ({c})((gp_u64){lo} + {k} * (gp_u64){st});\n"
                f"{self.stmts(s.body, i2 + '  ', types)}{i2}}}\n{ind}}}\n")
        return out

    # ---- functions -------------------------------------------------------------------
    def decl_type(self, t: ir.IRType, name: str) -> str:
        """A C declaration of ``name`` with IR type ``t`` (arrays in storage form, a shared
        array in the dialect's shared address space)."""
        if isinstance(t, ir.ArrayType):
            return f"{mem_type(t.elem)} {name}[{t.length}]"
        if isinstance(t, ir.SharedType):
            dims = "".join(f"[{d}]" for d in t.shape)
            return f"{self.r.shared_qualifier} {mem_type(t.elem)} {name}{dims}"
        if isinstance(t, ir.LocalType):  # per thread, in storage form like other arrays
            return f"{mem_type(t.elem)} {name}{''.join(f'[{d}]' for d in t.shape)}"
        return f"{self.type_name(t)} {name}"

    def type_name(self, t: ir.IRType | None) -> str:
        """The C type of a scalar (register form) or of a tuple (its struct)."""
        if isinstance(t, ir.TupleType):
            return self.r.need_tuple(t)[0]
        return reg_type(t)

    def local_decls(self, locals_: tuple[tuple[str, ir.IRType], ...]) -> str:
        """Declarations of a function's locals at the top of its body: shared arrays first
        (OpenCL wants them before any statement), scalars and local arrays
        zero-initialized."""
        ordered = sorted(locals_, key=lambda nt: not isinstance(nt[1], ir.SharedType))
        out = ""
        for n, t in ordered:
            init = "" if isinstance(t, (ir.ArrayType, ir.StructType, ir.SharedType,
                                        ir.TupleType)) else \
                " = {0}" if isinstance(t, ir.LocalType) else \
                (" = false" if t is np.bool_ else " = 0")
            out += f"  {self.decl_type(t, var_name(n))}{init};\n"
        return out

    def function(self, f: ir.Function) -> str:
        """Render one IR function as a forced-inline device helper."""
        types = dict(f.args) | dict(f.locals)
        args = ", ".join(self.decl_type(t, var_name(n)) for n, t in f.args) or "void"
        out = f"{self.r.function_qualifier} {self.type_name(f.ret)} {fn_name(f.name)}({args}) {{\n"
        return out + self.local_decls(f.locals) + self.stmts(f.body, "  ", types) + "}\n"

"""Readable, deterministic text for IR functions and kernels (errors, docs, ``gompute``).

Example::

    fn scale_relu(x: f32, p: Scale) -> f32    # kernels.py:12
      var y: f32
      y = x * p.scale
      if y > 0.0f32:
        return y
      else:
        return 0.0f32
"""

from __future__ import annotations

from .kernel import KernelIR
from .nodes import (
    ArrayType,
    Assign,
    Atomic,
    Barrier,
    Binary,
    Break,
    CallFunction,
    CallIntrinsic,
    Cast,
    Compare,
    Const,
    Continue,
    Evaluate,
    Expr,
    Fence,
    Field,
    ForRange,
    Function,
    Geometry,
    If,
    Index,
    IRType,
    Load,
    LocalLoad,
    LocalStore,
    LocalType,
    Logical,
    MakeTuple,
    Not,
    PointerType,
    Return,
    Select,
    SharedType,
    Stmt,
    Store,
    StructType,
    TupleItem,
    TupleType,
    Unary,
    Var,
    While,
)
from .visitor import Visitor

_SYMBOLS: dict[str, str] = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
    "pow": "**", "lshift": "<<", "rshift": ">>", "bitand": "&", "bitor": "|", "bitxor": "^",
    "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
    "and": "and", "or": "or",
}


def format_type(t: IRType | None) -> str:
    """``f32``, ``Scale``, ``f32[4]``, ``ptr f32``, ``shared f32[16, 17]``,
    ``local f32[4, 4]``, ``void``."""
    from ..types import short_name

    if t is None:
        return "void"
    if isinstance(t, PointerType):
        return f"ptr {short_name(t.elem)}"
    if isinstance(t, SharedType):
        return f"shared {short_name(t.elem)}[{', '.join(map(str, t.shape))}]"
    if isinstance(t, LocalType):
        return f"local {short_name(t.elem)}[{', '.join(map(str, t.shape))}]"
    if isinstance(t, TupleType):
        return f"({', '.join(short_name(e) for e in t.elems)})"
    if isinstance(t, StructType):
        return t.name
    if isinstance(t, ArrayType):
        return f"{format_type(t.elem)}[{t.length}]"
    return short_name(t)


class IRPrinter(Visitor):
    """Renders expressions as text (``visit(e, top)``) and appends statements to a list of
    lines (``visit(s, indent, out)``)."""

    def expr(self, e: Expr, top: bool = False) -> str:
        """One expression; binary operations are parenthesised unless ``top``."""
        text: str = self.visit(e, top)
        return text

    def visit_Const(self, e: Const, top: bool) -> str:
        if isinstance(e.value, bool):
            return "True" if e.value else "False"
        return f"{e.value!r}{format_type(e.type)}"

    def visit_Var(self, e: Var, top: bool) -> str:
        return e.name

    def visit_Field(self, e: Field, top: bool) -> str:
        return f"{self.expr(e.base)}.{e.name}"

    def visit_Index(self, e: Index, top: bool) -> str:
        return f"{self.expr(e.base)}[{self.expr(e.index, True)}]"

    def visit_Unary(self, e: Unary, top: bool) -> str:
        return f"{'-' if e.op == 'neg' else '~'}{self.expr(e.operand)}"

    def visit_Not(self, e: Not, top: bool) -> str:
        return f"not {self.expr(e.operand)}"

    def visit_Binary(self, e: Binary | Compare | Logical, top: bool) -> str:
        text = f"{self.expr(e.lhs)} {_SYMBOLS[e.op]} {self.expr(e.rhs)}"
        return text if top else f"({text})"

    visit_Compare = visit_Logical = visit_Binary

    def visit_Select(self, e: Select, top: bool) -> str:
        text = f"{self.expr(e.if_true)} if {self.expr(e.cond)} else {self.expr(e.if_false)}"
        return text if top else f"({text})"

    def visit_Cast(self, e: Cast, top: bool) -> str:
        return f"{format_type(e.type)}({self.expr(e.value, True)})"

    def visit_CallIntrinsic(self, e: CallIntrinsic | CallFunction, top: bool) -> str:
        args = ", ".join(self.expr(a, True) for a in e.args)
        return f"{e.func}({args})"

    visit_CallFunction = visit_CallIntrinsic

    def visit_Geometry(self, e: Geometry, top: bool) -> str:
        return f"{e.func}({e.dim})"

    def visit_Load(self, e: Load | LocalLoad, top: bool) -> str:
        return f"{e.base.name}[{', '.join(self.expr(i, True) for i in e.index)}]"

    visit_LocalLoad = visit_Load

    def visit_MakeTuple(self, e: MakeTuple, top: bool) -> str:
        return f"({', '.join(self.expr(i, True) for i in e.items)})"

    def visit_TupleItem(self, e: TupleItem, top: bool) -> str:
        return f"{self.expr(e.value, False)}[{e.index}]"

    def visit_Atomic(self, e: Atomic, top: bool) -> str:
        args = [f"{e.base.name}[{', '.join(self.expr(i, True) for i in e.index)}]"]
        if e.compare is not None:
            args.append(self.expr(e.compare, True))
        args.append(self.expr(e.value, True))
        return f"atomic_{e.op}({', '.join(args)})"

    # ---- statements: append lines to ``out`` at ``indent`` levels ----------------------
    def stmts(self, body: tuple[Stmt, ...], indent: int, out: list[str]) -> None:
        """Append the lines of ``body`` to ``out``."""
        for s in body:
            self.visit(s, indent, out)

    def visit_Assign(self, s: Assign, indent: int, out: list[str]) -> None:
        out.append(f"{'  ' * indent}{s.name} = {format_expr(s.value)}")

    def visit_Return(self, s: Return, indent: int, out: list[str]) -> None:
        value = "" if s.value is None else f" {format_expr(s.value)}"
        out.append(f"{'  ' * indent}return{value}")

    def visit_Store(self, s: Store | LocalStore, indent: int, out: list[str]) -> None:
        index = ", ".join(format_expr(i) for i in s.index)
        out.append(f"{'  ' * indent}{s.base.name}[{index}] = {format_expr(s.value)}")

    visit_LocalStore = visit_Store

    def visit_Barrier(self, s: Barrier, indent: int, out: list[str]) -> None:
        out.append(f"{'  ' * indent}barrier()")

    def visit_Fence(self, s: Fence, indent: int, out: list[str]) -> None:
        out.append(f"{'  ' * indent}threadfence()")

    def visit_Evaluate(self, s: Evaluate, indent: int, out: list[str]) -> None:
        out.append(f"{'  ' * indent}{format_expr(s.value)}")

    def visit_Break(self, s: Break, indent: int, out: list[str]) -> None:
        out.append(f"{'  ' * indent}break")

    def visit_Continue(self, s: Continue, indent: int, out: list[str]) -> None:
        out.append(f"{'  ' * indent}continue")

    def visit_If(self, s: If, indent: int, out: list[str]) -> None:
        pad = "  " * indent
        out.append(f"{pad}if {format_expr(s.cond)}:")
        self.stmts(s.body, indent + 1, out)
        if s.orelse:
            out.append(f"{pad}else:")
            self.stmts(s.orelse, indent + 1, out)

    def visit_ForRange(self, s: ForRange, indent: int, out: list[str]) -> None:
        out.append(f"{'  ' * indent}for {s.var} in range({format_expr(s.start)}, "
                   f"{format_expr(s.stop)}, {format_expr(s.step)}):")
        self.stmts(s.body, indent + 1, out)

    def visit_While(self, s: While, indent: int, out: list[str]) -> None:
        out.append(f"{'  ' * indent}while {format_expr(s.cond)}:")
        self.stmts(s.body, indent + 1, out)


_PRINTER = IRPrinter()


def format_expr(e: Expr) -> str:
    """One expression; binary operations are fully parenthesised below the top level."""
    return _PRINTER.expr(e, top=True)


def format_function(fn: Function) -> str:
    """A function as indented pseudo-Python with typed declarations."""
    args = ", ".join(f"{n}: {format_type(t)}" for n, t in fn.args)
    head = f"fn {fn.name}({args}) -> {format_type(fn.ret)}"
    lines = [f"{head}    # {fn.source}" if fn.source else head]
    lines.extend(f"  var {n}: {format_type(t)}" for n, t in fn.locals)
    _PRINTER.stmts(fn.body, 1, lines)
    return "\n".join(lines)


def _format_struct(t: StructType, indent: str, seen: set[str], out: list[str]) -> None:
    layout = t.layout
    if t.name in seen:
        return
    seen.add(t.name)
    fields = getattr(layout, "fields", ())
    for f in fields:
        if isinstance(f.type, StructType):
            _format_struct(f.type, indent, seen, out)
    out.append(f"{indent}struct {t.name}  # size {getattr(layout, 'size', '?')}, "
               f"align {getattr(layout, 'align', '?')}")
    out.extend(f"{indent}  @{f.offset:<4} {f.name}: {format_type(f.type)}" for f in fields)


def format_kernel(kir: KernelIR) -> str:
    """A whole kernel: kind, value types, params layout, functions and the digest."""
    types = ", ".join(f"{role}={format_type(t)}" for role, t in kir.value_types)
    lines = [f"kernel {kir.name}: {kir.kind} [{types}] block_size={kir.block_size}"]
    if kir.element is not None:
        lines.append(f"  element = {kir.element}")
    if kir.pre is not None:
        lines.append(f"  pre = {kir.pre}")
    if kir.identity is not None:
        lines.append(f"  identity = {format_expr(kir.identity)}")
    if kir.reassociate:
        lines.append("  reassociate = True")
    if kir.contract:
        lines.append("  contract = True")
    if kir.block is not None:
        lines.append(f"  block = {kir.block}")
    if kir.params is not None:
        _format_struct(kir.params, "  ", set(), lines)
    for fn in kir.functions:
        lines.append("")
        lines.extend("  " + line for line in format_function(fn).splitlines())
    lines.append(f"  digest {kir.digest()}")
    return "\n".join(lines)

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
    Binary,
    Break,
    CallFunction,
    CallIntrinsic,
    Cast,
    Compare,
    Const,
    Continue,
    Expr,
    Field,
    ForRange,
    Function,
    If,
    Index,
    IRType,
    Logical,
    Not,
    Return,
    Select,
    Stmt,
    StructType,
    Unary,
    Var,
    While,
)

_SYMBOLS: dict[str, str] = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
    "pow": "**", "lshift": "<<", "rshift": ">>", "bitand": "&", "bitor": "|", "bitxor": "^",
    "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
    "and": "and", "or": "or",
}


def format_type(t: IRType) -> str:
    """``f32``, ``Scale``, ``f32[4]``."""
    from ..types import short_name

    if isinstance(t, StructType):
        return t.name
    if isinstance(t, ArrayType):
        return f"{format_type(t.elem)}[{t.length}]"
    return short_name(t)


def format_expr(e: Expr) -> str:
    """One expression; binary operations are fully parenthesised below the top level."""
    return _expr(e, top=True)


def _expr(e: Expr, top: bool = False) -> str:
    if isinstance(e, Const):
        if isinstance(e.value, bool):
            return "True" if e.value else "False"
        return f"{e.value!r}{format_type(e.type)}"
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Field):
        return f"{_expr(e.base)}.{e.name}"
    if isinstance(e, Index):
        return f"{_expr(e.base)}[{_expr(e.index, True)}]"
    if isinstance(e, Unary):
        return f"{'-' if e.op == 'neg' else '~'}{_expr(e.operand)}"
    if isinstance(e, Not):
        return f"not {_expr(e.operand)}"
    if isinstance(e, (Binary, Compare, Logical)):
        text = f"{_expr(e.lhs)} {_SYMBOLS[e.op]} {_expr(e.rhs)}"
        return text if top else f"({text})"
    if isinstance(e, Select):
        text = f"{_expr(e.if_true)} if {_expr(e.cond)} else {_expr(e.if_false)}"
        return text if top else f"({text})"
    if isinstance(e, Cast):
        return f"{format_type(e.type)}({_expr(e.value, True)})"
    if isinstance(e, (CallIntrinsic, CallFunction)):
        args = ", ".join(_expr(a, True) for a in e.args)
        return f"{e.func}({args})"
    raise TypeError(f"not an IR expression: {e!r}")


def _stmts(body: tuple[Stmt, ...], indent: int, out: list[str]) -> None:
    pad = "  " * indent
    for s in body:
        if isinstance(s, Assign):
            out.append(f"{pad}{s.name} = {format_expr(s.value)}")
        elif isinstance(s, Return):
            out.append(f"{pad}return {format_expr(s.value)}")
        elif isinstance(s, Break):
            out.append(f"{pad}break")
        elif isinstance(s, Continue):
            out.append(f"{pad}continue")
        elif isinstance(s, If):
            out.append(f"{pad}if {format_expr(s.cond)}:")
            _stmts(s.body, indent + 1, out)
            if s.orelse:
                out.append(f"{pad}else:")
                _stmts(s.orelse, indent + 1, out)
        elif isinstance(s, ForRange):
            out.append(f"{pad}for {s.var} in range({format_expr(s.start)}, "
                       f"{format_expr(s.stop)}, {format_expr(s.step)}):")
            _stmts(s.body, indent + 1, out)
        elif isinstance(s, While):
            out.append(f"{pad}while {format_expr(s.cond)}:")
            _stmts(s.body, indent + 1, out)
        else:
            raise TypeError(f"not an IR statement: {s!r}")


def format_function(fn: Function) -> str:
    """A function as indented pseudo-Python with typed declarations."""
    args = ", ".join(f"{n}: {format_type(t)}" for n, t in fn.args)
    head = f"fn {fn.name}({args}) -> {format_type(fn.ret)}"
    lines = [f"{head}    # {fn.source}" if fn.source else head]
    lines.extend(f"  var {n}: {format_type(t)}" for n, t in fn.locals)
    _stmts(fn.body, 1, lines)
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
    if kir.params is not None:
        _format_struct(kir.params, "  ", set(), lines)
    for fn in kir.functions:
        lines.append("")
        lines.extend("  " + line for line in format_function(fn).splitlines())
    lines.append(f"  digest {kir.digest()}")
    return "\n".join(lines)

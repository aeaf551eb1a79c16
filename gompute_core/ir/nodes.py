"""The typed IR: small, frozen, printable and hashable.

Every expression carries its result type. Invariants the frontend guarantees
and renderers rely on (so no renderer re-derives promotion):

* ``Binary`` operands already have the node's type, except shifts whose right
  operand is cast to the left's type too; ``truediv`` only appears on floats
  (integers are cast to the float type first, as NumPy does).
* ``Compare`` operands have one common type; its own type is ``bool``.
* ``Logical`` and ``Not`` operands are ``bool``; conditions of ``If``,
  ``While`` and ``Select`` are ``bool``.
* ``Assign`` values already have the variable's declared type.
* Integer ``add/sub/mul/neg/lshift`` wrap at the type's width; ``floordiv`` and
  ``mod`` are Python's floor division and floor modulo; integer division or
  modulo by zero gives 0 (as NumPy does); ``i_min // -1`` wraps to ``i_min``.
  Float ``floordiv``/``mod`` follow NumPy (``np.floor_divide``/``np.mod``).
* Shifts by a count outside ``[0, width)`` give 0 (left, and right of
  unsigned or non-negative) or -1 (right of a negative signed value), as NumPy.

Types are NumPy scalar classes (see :mod:`gompute_core.types`),
:class:`StructType` for params records and :class:`ArrayType` for fixed
params arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from ..types import ScalarType


@dataclass(frozen=True)
class ArrayType:
    """A fixed-length params array ``g.Array[elem, length]``."""

    elem: IRType
    length: int


@dataclass(frozen=True)
class StructType:
    """A params record; ``layout`` is its :class:`gompute_core.abi.StructLayout`."""

    name: str
    layout: object  # gompute_core.abi.layout.StructLayout (kept loose to avoid a cycle)


IRType: TypeAlias = ScalarType | ArrayType | StructType

UnaryOp = Literal["neg", "invert"]
BinaryOp = Literal[
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow",
    "lshift", "rshift", "bitand", "bitor", "bitxor",
]
CompareOp = Literal["eq", "ne", "lt", "le", "gt", "ge"]
LogicalOp = Literal["and", "or"]
Intrinsic = Literal[
    # elementwise math, same type in and out (floats); abs/min/max on any number
    "abs", "min", "max", "sqrt", "exp", "log", "log2", "log10", "exp2", "sin", "cos",
    "tan", "tanh", "asin", "acos", "atan", "atan2", "sinh", "cosh", "floor", "ceil",
    "trunc", "fabs", "copysign", "fmod", "hypot", "expm1", "log1p", "erf",
    # predicates -> bool
    "isnan", "isinf", "isfinite",
]


@dataclass(frozen=True)
class Const:
    """A literal of a concrete type (weak literals are resolved by the frontend)."""

    value: int | float | bool
    type: ScalarType


@dataclass(frozen=True)
class Var:
    """A function argument or local variable."""

    name: str
    type: IRType


@dataclass(frozen=True)
class Field:
    """``base.name`` where ``base`` has a :class:`StructType`."""

    base: Expr
    name: str
    type: IRType


@dataclass(frozen=True)
class Index:
    """``base[index]`` where ``base`` has an :class:`ArrayType`; index is an integer.

    Out-of-range indices are undefined behaviour in kernels (no check is
    emitted); constant indices are checked by the frontend.
    """

    base: Expr
    index: Expr
    type: IRType


@dataclass(frozen=True)
class Unary:
    """``-x`` (neg) or ``~x`` (invert, integers and bool)."""

    op: UnaryOp
    operand: Expr
    type: ScalarType


@dataclass(frozen=True)
class Not:
    """Logical ``not`` of a bool."""

    operand: Expr
    type: ScalarType


@dataclass(frozen=True)
class Binary:
    """Arithmetic or bitwise operation; see the module invariants."""

    op: BinaryOp
    lhs: Expr
    rhs: Expr
    type: ScalarType


@dataclass(frozen=True)
class Compare:
    """A comparison of two operands of one type; the result is bool."""

    op: CompareOp
    lhs: Expr
    rhs: Expr
    type: ScalarType


@dataclass(frozen=True)
class Logical:
    """Short-circuit ``and``/``or`` of two bools."""

    op: LogicalOp
    lhs: Expr
    rhs: Expr
    type: ScalarType


@dataclass(frozen=True)
class Select:
    """``if_true if cond else if_false``; only the chosen side is evaluated."""

    cond: Expr
    if_true: Expr
    if_false: Expr
    type: ScalarType


@dataclass(frozen=True)
class Cast:
    """Conversion to ``type`` (C semantics; float->int truncates, NaN/overflow undefined)."""

    value: Expr
    type: ScalarType


@dataclass(frozen=True)
class CallIntrinsic:
    """A math intrinsic (``g.math.*``, ``abs``, ``min``, ``max``); args already have ``type``
    (for predicates, the argument's own float type)."""

    func: Intrinsic
    args: tuple[Expr, ...]
    type: ScalarType


@dataclass(frozen=True)
class CallFunction:
    """A call of another IR :class:`Function` of the same kernel (renderers inline or
    emit a forced-inline helper)."""

    func: str
    args: tuple[Expr, ...]
    type: IRType


Expr: TypeAlias = (
    Const | Var | Field | Index | Unary | Not | Binary | Compare | Logical | Select | Cast
    | CallIntrinsic | CallFunction
)


@dataclass(frozen=True)
class Assign:
    """``name = value``; ``name`` is declared in the function's ``locals``."""

    name: str
    value: Expr


@dataclass(frozen=True)
class If:
    """``if cond: body else: orelse`` (elif chains nest in ``orelse``)."""

    cond: Expr
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]


@dataclass(frozen=True)
class ForRange:
    """``for var in range(start, stop, step)``; all four share ``var``'s integer type.

    ``step`` is never zero (the frontend rejects a zero constant; a runtime zero
    makes the loop run no iterations). Python semantics: ``stop`` is evaluated
    once, and assigning to ``var`` in the body does not change the iteration.
    """

    var: str
    start: Expr
    stop: Expr
    step: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class While:
    """``while cond: body``."""

    cond: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class Break:
    """``break`` out of the innermost loop."""


@dataclass(frozen=True)
class Continue:
    """``continue`` the innermost loop."""


@dataclass(frozen=True)
class Return:
    """``return value``; ``value`` already has the function's return type."""

    value: Expr


Stmt: TypeAlias = Assign | If | ForRange | While | Break | Continue | Return


@dataclass(frozen=True)
class Function:
    """One lowered kernel function.

    ``args`` and ``locals`` are ``(name, type)`` pairs; names are unique within
    the function and valid identifiers in C and Python (the frontend renames
    any that collide with reserved words of either). Every path through
    ``body`` ends in a ``Return``.
    """

    name: str
    args: tuple[tuple[str, IRType], ...]
    ret: IRType
    locals: tuple[tuple[str, IRType], ...]
    body: tuple[Stmt, ...]
    # "file:line" of the Python definition, for messages; kept out of repr/eq so that
    # moving a kernel in its file does not change the IR digest (and recompile it)
    source: str = field(default="", compare=False, repr=False)

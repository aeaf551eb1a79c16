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


@dataclass(frozen=True)
class PointerType:
    """A raw kernel's device array argument ``g.GlobalPtr[elem]`` (1-D, unchecked bounds)."""

    elem: ScalarType


@dataclass(frozen=True)
class SharedType:
    """A block-shared array ``shared_array(elem, shape)`` of a raw kernel (1-D or 2-D,
    row-major, static size)."""

    elem: ScalarType
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        """Number of elements."""
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True)
class LocalType:
    """A per-thread array ``g.local_array(elem, shape)`` of a kernel function (1-D or 2-D,
    row-major, static size, zero-initialized where it is declared)."""

    elem: ScalarType
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        """Number of elements."""
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True)
class TupleType:
    """Several values returned together by a kernel function (``return a, b``), in order.
    ``weak`` keeps, per item, the Python-number kind the frontend typed it with (``None``:
    a NumPy type), so that unpacking computes with what Python returned; renderers use
    ``elems`` only (a weak item is represented by ``i64``/``f64``/``bool``, as always)."""

    elems: tuple[ScalarType, ...]
    weak: tuple[str | None, ...]


IRType: TypeAlias = (
    ScalarType | ArrayType | StructType | PointerType | SharedType | LocalType | TupleType
)
MemoryType: TypeAlias = PointerType | SharedType

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
    "trunc", "fabs", "copysign", "fmod", "hypot", "expm1", "log1p", "erf", "erfc", "fma",
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
    where: str = field(default="", compare=False, repr=False)
    """"file:line" of the access in the kernel's source, for checked mode's reports (kept
    out of repr/eq, as :attr:`Function.source`, so the IR digest ignores it)."""


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


GeometryFunc = Literal["global_id", "local_id", "block_id", "block_dim", "grid_dim"]
AtomicOp = Literal["add", "sub", "min", "max", "exch", "cas"]


@dataclass(frozen=True)
class Geometry:
    """A launch-geometry builtin of a raw kernel along ``dim`` (0, 1, 2 = x, y, z), read
    from the real launch on every backend; ``global_id(d)`` is
    ``block_id(d) * block_dim(d) + local_id(d)``. Always ``i64``."""

    func: GeometryFunc
    dim: int
    type: ScalarType


@dataclass(frozen=True)
class Load:
    """``base[index...]`` where ``base`` is a :class:`Var` of a :class:`PointerType` (one
    index) or :class:`SharedType` (one per dimension); indices are ``i64``. Out-of-range
    indices are undefined behaviour (no check is emitted)."""

    base: Var
    index: tuple[Expr, ...]
    type: ScalarType
    where: str = field(default="", compare=False, repr=False)
    """"file:line" of the access in the kernel's source, for checked mode's reports (kept
    out of repr/eq, as :attr:`Function.source`, so the IR digest ignores it)."""


@dataclass(frozen=True)
class LocalLoad:
    """``base[index...]`` of a per-thread local array (``base`` a :class:`Var` of a
    :class:`LocalType`; one ``i64`` index per dimension). Kept apart from :class:`Load`
    (device memory): a local array is private to its thread and lives in registers or
    the stack. Out-of-range indices are undefined behaviour (constant ones are checked
    by the frontend)."""

    base: Var
    index: tuple[Expr, ...]
    type: ScalarType
    where: str = field(default="", compare=False, repr=False)
    """"file:line" of the access, for checked mode's reports (out of repr/eq: the IR
    digest ignores it), as :attr:`Load.where`."""


@dataclass(frozen=True)
class MakeTuple:
    """``(items...)``, a :class:`TupleType` value: returned, or assigned to a temporary
    the frontend unpacks at once. Each item already has its element type."""

    items: tuple[Expr, ...]
    type: TupleType


@dataclass(frozen=True)
class TupleItem:
    """Item ``index`` (a constant) of the :class:`TupleType` value ``value`` (a call of a
    function returning a tuple, or a temporary)."""

    value: Expr
    index: int
    type: ScalarType


@dataclass(frozen=True)
class Atomic:
    """An atomic read-modify-write of ``base[index...]`` (as :class:`Load`), giving the
    element's OLD value. ``value`` has the element type; ``cas`` stores ``value`` only
    where the element equals ``compare`` (bit patterns, for floats). Float ``min``/``max``
    store ``value`` only if it is less (greater) than the element: a NaN never replaces."""

    op: AtomicOp
    base: Var
    index: tuple[Expr, ...]
    value: Expr
    compare: Expr | None
    type: ScalarType
    where: str = field(default="", compare=False, repr=False)
    """"file:line" of the access in the kernel's source, for checked mode's reports (kept
    out of repr/eq, as :attr:`Function.source`, so the IR digest ignores it)."""


Expr: TypeAlias = (
    Const | Var | Field | Index | Unary | Not | Binary | Compare | Logical | Select | Cast
    | CallIntrinsic | CallFunction | Geometry | Load | Atomic | LocalLoad | MakeTuple | TupleItem
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
    """``return value``; ``value`` already has the function's return type (None: the bare
    ``return`` of a raw kernel, which ends the calling thread)."""

    value: Expr | None
    where: str = field(default="", compare=False, repr=False)
    """"file:line" of a raw kernel's bare ``return``."""


@dataclass(frozen=True)
class Store:
    """``base[index...] = value`` of a raw kernel (``base`` and ``index`` as in
    :class:`Load`; ``value`` already has the element type)."""

    base: Var
    index: tuple[Expr, ...]
    value: Expr
    where: str = field(default="", compare=False, repr=False)
    """"file:line" of the access in the kernel's source, for checked mode's reports (kept
    out of repr/eq, as :attr:`Function.source`, so the IR digest ignores it)."""


@dataclass(frozen=True)
class LocalStore:
    """``base[index...] = value`` of a per-thread local array (``base`` and ``index`` as in
    :class:`LocalLoad`; ``value`` already has the element type)."""

    base: Var
    index: tuple[Expr, ...]
    value: Expr
    where: str = field(default="", compare=False, repr=False)
    """"file:line" of the access, for checked mode's reports (as :attr:`LocalLoad.where`)."""


@dataclass(frozen=True)
class Barrier:
    """``barrier()``: every thread of the block waits here; memory written before it (global
    and shared) is visible to the block after it. Reached under uniform control only."""

    where: str = field(default="", compare=False, repr=False)
    """"file:line" of the ``barrier()`` call."""


@dataclass(frozen=True)
class Fence:
    """``threadfence()``: this thread's global-memory accesses before it are ordered before
    its accesses after it, for every thread of the launch (a device-wide memory fence)."""


@dataclass(frozen=True)
class Evaluate:
    """An expression evaluated for its effect (an atomic whose old value is unused)."""

    value: Expr


Stmt: TypeAlias = (
    Assign | If | ForRange | While | Break | Continue | Return | Store | Barrier | Fence | Evaluate
    | LocalStore
)


@dataclass(frozen=True)
class Function:
    """One lowered kernel function.

    ``args`` and ``locals`` are ``(name, type)`` pairs; names are unique within
    the function and valid identifiers in C and Python (the frontend renames
    any that collide with reserved words of either). Every path through
    ``body`` ends in a ``Return``, except in a raw kernel's entry function
    (``ret`` None), whose end returns. A raw kernel's ``locals`` include its
    shared arrays (:class:`SharedType`; declared once, never assigned); any function's
    include its local arrays (:class:`LocalType`; zero-initialized at the function's
    start, declared once, only read and written element-wise). ``ret`` is a
    :class:`TupleType` for a function returning several values; unpacking one assigns it
    to a temporary local of that type, then each item to its variable.
    """

    name: str
    args: tuple[tuple[str, IRType], ...]
    ret: IRType | None
    locals: tuple[tuple[str, IRType], ...]
    body: tuple[Stmt, ...]
    # "file:line" of the Python definition, for messages; kept out of repr/eq so that
    # moving a kernel in its file does not change the IR digest (and recompile it)
    source: str = field(default="", compare=False, repr=False)

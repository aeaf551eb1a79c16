"""Lowering state: one :class:`Program` per ``lower`` call, one :class:`FnContext` per
function being lowered (a helper is lowered once per argument-type signature)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ..errors import KernelSyntaxError
from ..ir.nodes import Function, IRType
from .source import FunctionSource
from .values import Ty, TypingError, join


def fail_at(src: FunctionSource, node: ast.AST | None, message: str,
            construct: str | None = None) -> NoReturn:
    """Raise KernelSyntaxError at ``node``'s line in ``src``'s file."""
    line = getattr(node, "lineno", None) or src.node.lineno
    raise KernelSyntaxError(message, src.filename, line, construct)


@dataclass(frozen=True)
class Static:
    """A compile-time object named in kernel code: a module, class, function, type."""

    obj: Any
    text: str


@dataclass
class Specialization:
    """A lowered helper: its IR function and the type (with weakness) of its result."""

    function: Function
    ret: Ty


@dataclass
class Program:
    """Everything one ``lower`` call produces: helpers by IR name, in creation order."""

    main_name: str
    functions: dict[str, Function] = field(default_factory=dict)
    specializations: dict[tuple[Any, ...], Specialization] = field(default_factory=dict)
    stack: list[Any] = field(default_factory=list)
    issued: set[str] = field(default_factory=set)

    def helper_name(self, py_name: str) -> str:
        """A fresh IR name for a helper specialization: ``<main>_<py_name>``, then ``_2``,
        ``_3``, ... (never one issued before, whatever the Python names)."""
        clean = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in py_name)
        base = f"{self.main_name}_{clean.strip('_') or 'fn'}"
        while "__" in base:
            base = base.replace("__", "_")
        name, k = base, 1
        while name in self.issued or name == self.main_name:
            k += 1
            name = f"{base}_{k}"
        self.issued.add(name)
        return name


class Unresolved(Exception):
    """A local was read before any assignment reached it in this pass (collect passes only)."""


@dataclass
class Param:
    """A kernel function parameter: its IR name (or None if dropped) and type."""

    name: str | None
    ty: Ty | None


@dataclass
class FnContext:
    """Per-function lowering state, shared by the expression and statement handlers."""

    program: Program
    src: FunctionSource
    params: dict[str, Param]
    local_names: frozenset[str]
    ir_names: dict[str, str]
    var_types: dict[str, Ty]
    ret: Ty | None
    emit: bool = False
    returns: list[Ty] = field(default_factory=list)
    loop_depth: int = 0
    defined: set[str] = field(default_factory=set)
    lower_helper: Callable[..., Specialization] | None = None
    declared_ret: bool = False
    """True when the caller fixes the return type (the spec's element type), so a returned
    Choice converts each alternative to it on its own."""
    raw: bool = False
    """True in a raw kernel's own body (memory, builtins, bare ``return``)."""
    depth: int = 0
    """Nesting of the statement being lowered in if/while/for bodies (0: top level)."""
    varying: frozenset[str] | None = None
    """Raw kernels' last emit pass: the locals whose value depends on the thread (see
    :mod:`gompute_core.ir.uniformity`); None in the other passes (no barrier checks)."""
    divergent: list[int] = field(default_factory=list)
    """Lines of the enclosing conditions and loops that depend on the thread index."""
    exited: int | None = None
    """Line of a ``return`` some threads of a block may have taken (raw kernels)."""
    local_arrays: frozenset[str] = frozenset()
    """Names of the function's local arrays (declared with ``g.local_array`` or passed in
    as parameters): ``name[i] = v`` stores to them."""

    # -- errors -------------------------------------------------------------------------
    def fail(self, node: ast.AST | None, message: str, construct: str | None = None) -> NoReturn:
        """Raise KernelSyntaxError at ``node``'s line."""
        fail_at(self.src, node, message, construct)

    def typing(self, node: ast.AST, fn: Callable[..., Any], *args: Any) -> Any:
        """Call a typing rule, turning its TypingError into a KernelSyntaxError at ``node``."""
        try:
            return fn(*args)
        except TypingError as exc:
            self.fail(node, str(exc), type(node).__name__)

    def where(self, node: ast.AST) -> str:
        """``file:line`` of ``node`` in the function's source."""
        return f"{self.src.filename}:{getattr(node, 'lineno', None) or self.src.node.lineno}"

    # -- variables ----------------------------------------------------------------------
    def record_assignment(self, node: ast.AST, name: str, ty: Ty) -> None:
        """Join ``ty`` into the local's type."""
        old = self.var_types.get(name)
        if old is None:
            self.var_types[name] = ty
        elif old != ty:
            try:
                self.var_types[name] = join(old, ty)
            except TypingError as exc:
                self.fail(node, f"variable '{name}' is assigned incompatible values: {exc}",
                          "Assign")

    def local_type(self, node: ast.AST, name: str) -> Ty:
        """The declared type of a local, or Unresolved/KernelSyntaxError if it has none."""
        ty = self.var_types.get(name)
        if self.emit and ty is not None and name not in self.defined:
            self.fail(node, f"local variable '{name}' may be read before it is assigned "
                            "(on some path it has no value yet)", "Name")
        if ty is None:
            if self.emit:
                self.fail(node, f"local variable '{name}' is read before it is assigned", "Name")
            raise Unresolved(name)
        return ty

    def declared(self) -> tuple[tuple[str, IRType], ...]:
        """The Function's locals (by IR name, in order of first assignment); a parameter
        is a local too when the body assigns it (its argument then has another IR name)."""
        return tuple((self.ir_names[name], ty.type) for name, ty in self.var_types.items()
                     if name not in self.params or name in self.local_names)

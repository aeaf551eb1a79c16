"""Finding a kernel function's AST, its file and line, and the names it can see."""

from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import textwrap
import types
from dataclasses import dataclass, field
from typing import Any

from ..errors import KernelSyntaxError


@dataclass(frozen=True)
class FunctionSource:
    """A parsed kernel function: the ``def``/``lambda`` node with absolute line numbers."""

    fn: types.FunctionType
    node: ast.FunctionDef | ast.Lambda
    filename: str
    globals: dict[str, Any] = field(repr=False)
    closure: dict[str, Any] = field(repr=False)

    @property
    def name(self) -> str:
        """The Python name (``<lambda>`` for lambdas)."""
        return self.fn.__name__

    @property
    def location(self) -> str:
        """``file:line`` of the definition."""
        return f"{self.filename}:{self.node.lineno}"

    def lookup(self, name: str) -> tuple[bool, Any]:
        """``(found, value)`` of a free name: closure, then globals, then builtins."""
        if name in self.closure:
            return True, self.closure[name]
        if name in self.globals:
            return True, self.globals[name]
        if hasattr(builtins, name):
            return True, getattr(builtins, name)
        return False, None


_PARSED: dict[tuple[str, int], ast.Module] = {}


def _parse_file(filename: str) -> ast.Module | None:
    lines = linecache.getlines(filename)
    if not lines:
        return None
    key = (filename, hash("".join(lines)))
    tree = _PARSED.get(key)
    if tree is None:
        try:
            tree = ast.parse("".join(lines), filename)
        except SyntaxError:
            return None
        _PARSED[key] = tree
    return tree


def _candidates(tree: ast.AST, fn: types.FunctionType) -> list[ast.FunctionDef | ast.Lambda]:
    first = fn.__code__.co_firstlineno
    code_args = fn.__code__.co_varnames[: fn.__code__.co_argcount]
    found: list[ast.FunctionDef | ast.Lambda] = []
    for node in ast.walk(tree):
        if fn.__name__ == "<lambda>":
            if isinstance(node, ast.Lambda) and node.lineno == first:
                found.append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == fn.__name__:
            starts = [node.lineno] + [d.lineno for d in node.decorator_list]
            if min(starts) == first:
                found.append(node)  # type: ignore[arg-type]
    if len(found) > 1 and fn.__name__ == "<lambda>":
        same_args = [n for n in found if tuple(a.arg for a in n.args.args) == code_args]
        found = same_args or found
    return found


def parse_function(fn: Any) -> FunctionSource:
    """Locate and parse ``fn``'s source; raise KernelSyntaxError when it is not available."""
    if isinstance(fn, staticmethod):
        fn = fn.__func__
    if not isinstance(fn, types.FunctionType):
        raise KernelSyntaxError(
            f"kernel functions must be Python functions or lambdas, got {fn!r}",
            construct=type(fn).__name__)
    filename = fn.__code__.co_filename
    first = fn.__code__.co_firstlineno
    tree = _parse_file(filename)
    nodes = _candidates(tree, fn) if tree is not None else []
    if not nodes:
        nodes = _parse_fallback(fn, filename, first)
    if len(nodes) > 1:
        raise KernelSyntaxError(
            f"several lambdas with the same parameters on one line; define the kernel "
            f"function '{fn.__name__}' with def", filename, first, "Lambda")
    node = nodes[0]
    if isinstance(node, ast.AsyncFunctionDef):
        raise KernelSyntaxError("async functions are not kernel functions", filename,
                                node.lineno, "AsyncFunctionDef")
    closure = {}
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__, strict=True):
            try:
                closure[name] = cell.cell_contents
            except ValueError:
                continue
    return FunctionSource(fn, node, filename, fn.__globals__, closure)


def _parse_fallback(fn: types.FunctionType, filename: str,
                    first: int) -> list[ast.FunctionDef | ast.Lambda]:
    try:
        text = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        raise KernelSyntaxError(
            f"the source of kernel function '{fn.__name__}' is not available (functions "
            "defined with exec or in an interactive session without source cannot be lowered)",
            filename, first, "source") from None
    try:
        tree = ast.parse(text, filename)
    except SyntaxError:
        raise KernelSyntaxError(
            f"cannot parse the source of '{fn.__name__}' (a lambda inside a larger "
            "expression whose file changed?); define it with def", filename, first,
            "source") from None
    ast.increment_lineno(tree, first - 1)
    return _candidates(tree, fn)

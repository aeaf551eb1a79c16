"""Nesting limits: expressions deeper than the renderers' compilers accept are rejected.

Renderers emit one nested, parenthesized expression per IR expression; Python's parser
stops at 200 nested parentheses and clang (hiprtc) at 256 brackets, and the frontend
itself recurses once per AST level. A kernel expression nested deeper than
:data:`MAX_AST_DEPTH` (a flat sum of that many terms), or lowering to an IR expression
deeper than :data:`MAX_IR_DEPTH`, is a KernelSyntaxError at its line: split it into
assignments to locals.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator

from ..ir.nodes import Expr

MAX_AST_DEPTH = 64
"""Deepest accepted kernel-code expression (AST levels)."""

MAX_IR_DEPTH = 120
"""Deepest accepted IR expression (casts and exact comparisons add levels)."""


def ast_too_deep(stmt: ast.stmt) -> tuple[ast.AST, int] | None:
    """The outermost expression in ``stmt`` nested deeper than MAX_AST_DEPTH, with its
    depth (iterative: works on trees deeper than Python's recursion limit)."""
    stack: list[tuple[ast.AST, int, ast.AST | None]] = [(stmt, 0, None)]
    worst: tuple[ast.AST, int] | None = None
    while stack:
        node, depth, top = stack.pop()
        if isinstance(node, ast.expr):
            depth += 1
            top = top or node
            if depth > MAX_AST_DEPTH and (worst is None or depth > worst[1]):
                worst = (top, depth)
        stack.extend((child, depth, top) for child in ast.iter_child_nodes(node))
    return worst


def _children(e: object) -> Iterator[Expr]:
    for f in dataclasses.fields(e):  # type: ignore[arg-type]
        value = getattr(e, f.name)
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            if isinstance(item, Expr):  # type: ignore[arg-type]
                yield item


def ir_depth(expr: Expr) -> int:
    """Nesting depth of an IR expression (a leaf is 1), computed iteratively."""
    best = 0
    stack = [(expr, 1)]
    while stack:
        node, depth = stack.pop()
        best = max(best, depth)
        if depth > MAX_IR_DEPTH:
            break
        stack.extend((c, depth + 1) for c in _children(node))
    return best

"""Code lines of Python packages: no blank lines, comments or docstrings.

Usage: ``python scripts/code_lines.py backends/cuda/gompute_cuda backends/hip/gompute_hip``
prints each file's count and each argument's total.
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from pathlib import Path


def docstring_lines(source: str) -> set[int]:
    """Line numbers of every module, class and function docstring in ``source``."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                lines.update(range(body[0].lineno, body[0].end_lineno + 1))
        # attribute docstrings: a bare string right after an assignment
        for field in ("body", "orelse"):
            stmts = getattr(node, field, None)
            for stmt in stmts if isinstance(stmts, list) else ():
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                        and isinstance(stmt.value.value, str):
                    lines.update(range(stmt.lineno, stmt.end_lineno + 1))
    return lines


def code_lines(source: str) -> int:
    """Lines holding code tokens, docstrings excluded."""
    skip = docstring_lines(source)
    code: set[int] = set()
    ignored = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
               tokenize.DEDENT, tokenize.ENDMARKER, tokenize.ENCODING)
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in ignored:
            continue
        for line in range(tok.start[0], tok.end[0] + 1):
            if line not in skip:
                code.add(line)
    return len(code)


def main(paths: list[str]) -> None:
    """Print per-file and per-argument code lines."""
    for arg in paths:
        files = sorted(Path(arg).rglob("*.py")) if Path(arg).is_dir() else [Path(arg)]
        total = 0
        for f in files:
            n = code_lines(f.read_text())
            total += n
            print(f"{n:6d}  {f}")
        print(f"{total:6d}  total {arg}\n")


if __name__ == "__main__":
    main(sys.argv[1:])

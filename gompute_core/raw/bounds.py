"""A raw kernel's declared bounds: ``bounds={"a": "M*K", "x": "n", "lut": 256}``.

Each pointer parameter may be bounded by an integer constant or by an expression of the
kernel's integer scalar parameters: names, non-negative integer literals, ``+ - * //``
and parentheses (``"M*K"``, ``"(rows - 1) * ld + cols"``). The expression is checked when
the kernel is defined (``InvalidArgument`` naming the kernel, the pointer and what is
wrong) and evaluated on every launch with Python's exact integers, so no product
overflows; a launch whose buffer holds fewer elements than the value is refused before
the driver sees it.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgument
from ..ir.nodes import IRType, PointerType, StructType
from ..types import is_int

_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//"}


@dataclass(frozen=True)
class Bound:
    """``ptr`` holds at least ``text`` elements; ``code`` evaluates ``text`` over the
    arguments named in ``names`` (None: ``text`` is one parameter, at ``index``)."""

    ptr: str
    text: str
    names: tuple[tuple[str, int], ...]
    code: Any = None
    index: int = -1

    def need(self, values: Sequence[Any]) -> int:
        """The element count the launch's argument ``values`` (in signature order) ask of
        ``ptr``."""
        if self.code is None:
            return int(values[self.index]) if self.index >= 0 else int(self.text)
        return int(eval(self.code, {"__builtins__": {}},  # noqa: S307 - a checked AST
                        {n: int(values[k]) for n, k in self.names}))


def parse_bounds(kernel: str, signature: Sequence[tuple[str, IRType]],
                 bounds: Any) -> tuple[Bound, ...]:
    """The checked ``bounds`` of raw kernel ``kernel`` (``InvalidArgument`` otherwise)."""
    if bounds is None:
        return ()
    if not isinstance(bounds, dict):
        raise InvalidArgument(f"raw kernel {kernel!r}: bounds must be a dict {{pointer "
                              "parameter: length}} (a parameter name, an expression of "
                              "integer parameters such as 'M*K', or an int)")
    types = dict(signature)
    index = {n: k for k, (n, _) in enumerate(signature)}
    out = []
    for ptr, length in bounds.items():
        where = f"raw kernel {kernel!r}: bounds[{ptr!r}]"
        if not isinstance(types.get(ptr), PointerType):
            raise InvalidArgument(f"raw kernel {kernel!r}: bounds key {ptr!r} is not a "
                                  "GlobalPtr parameter")
        if isinstance(length, bool) or not isinstance(length, (int, str)):
            raise InvalidArgument(f"{where} = {length!r}: expected a parameter name, an "
                                  "expression of integer parameters ('M*K') or an int")
        if isinstance(length, int):
            if length < 0:
                raise InvalidArgument(f"{where} = {length}: a bound is not negative")
            out.append(Bound(ptr, str(length), ()))
            continue
        try:
            tree = ast.parse(length.strip(), mode="eval")
        except SyntaxError:
            raise InvalidArgument(f"{where} = {length!r} is not an expression") from None
        names: dict[str, int] = {}
        _check(tree.body, where, length, types, index, names)
        if isinstance(tree.body, ast.Name):
            out.append(Bound(ptr, length, tuple(names.items()), None, index[tree.body.id]))
        else:
            code = compile(tree, f"<bounds of {kernel}>", "eval")
            out.append(Bound(ptr, length, tuple(names.items()), code))
    return tuple(out)


def _check(node: ast.AST, where: str, text: str, types: dict[str, IRType],
           index: dict[str, int], names: dict[str, int]) -> None:
    if isinstance(node, ast.Name):
        t = types.get(node.id)
        if t is None:
            raise InvalidArgument(f"{where} = {text!r}: {node.id!r} is not a parameter of the "
                                  f"kernel (parameters: {', '.join(types)})")
        if isinstance(t, (PointerType, StructType)) or not is_int(t):
            raise InvalidArgument(f"{where} = {text!r}: {node.id!r} is not an integer "
                                  "parameter")
        names[node.id] = index[node.id]
    elif isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int) or node.value < 0:
            raise InvalidArgument(f"{where} = {text!r}: {node.value!r} is not a non-negative "
                                  "integer literal")
    elif isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        _check(node.left, where, text, types, index, names)
        _check(node.right, where, text, types, index, names)
    else:
        raise InvalidArgument(f"{where} = {text!r}: '{ast.unparse(node)}' is not allowed; "
                              "use integer parameters, integer literals, + - * // and "
                              "parentheses")

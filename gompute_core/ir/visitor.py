"""One dispatch style for everything that walks the IR (the printer and every renderer).

A subclass of :class:`Visitor` defines a method ``visit_<NodeClass>`` per IR node
class it handles (``visit_Binary``, ``visit_ForRange``); the table from node class to
method is built once, when the subclass is created, so :meth:`Visitor.visit` is a
dictionary lookup. A node the subclass has no method for is
:class:`~gompute_core.errors.Unsupported`, naming the node, the backend and the
renderer, never an ``AttributeError``; a ``visit_<Name>`` method whose name is no IR
node is a ``TypeError`` at class creation (a misspelt handler cannot go unnoticed).

Example::

    class Depth(Visitor):
        def visit_Const(self, e): return 1
        def visit_Binary(self, e): return 1 + max(self.visit(e.lhs), self.visit(e.rhs))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeAlias, get_args

from ..errors import Unsupported
from .nodes import Expr, Stmt

Node: TypeAlias = Expr | Stmt

NODE_CLASSES: tuple[type, ...] = (*get_args(Expr), *get_args(Stmt))
"""Every IR expression and statement class, in declaration order."""

_BY_NAME: dict[str, type] = {c.__name__: c for c in NODE_CLASSES}
_PREFIX = "visit_"


class Visitor:
    """Base of IR walkers: dispatch on the node's class through a per-class table.

    Extra positional arguments of :meth:`visit` are passed to the handler (an
    indentation, an output list). Subclasses name themselves in errors through
    :meth:`backend_name` and :meth:`renderer_name`.
    """

    _handlers: ClassVar[dict[type, Callable[..., Any]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        table: dict[type, Callable[..., Any]] = {}
        for attr in dir(cls):
            if not attr.startswith(_PREFIX):
                continue
            node_class = _BY_NAME.get(attr[len(_PREFIX):])
            if node_class is None:
                raise TypeError(f"{cls.__name__}.{attr}: {attr[len(_PREFIX):]} is not an IR "
                                f"node class (known: {', '.join(sorted(_BY_NAME))})")
            table[node_class] = getattr(cls, attr)
        cls._handlers = table

    @classmethod
    def handled(cls) -> frozenset[type]:
        """The IR node classes this visitor has a handler for."""
        return frozenset(cls._handlers)

    def backend_name(self) -> str:
        """The backend this visitor renders for, for error messages."""
        return "ir"

    def renderer_name(self) -> str:
        """The renderer's name in error messages (the class name by default)."""
        return type(self).__name__

    def visit(self, node: Node, *args: Any) -> Any:
        """Call the handler for ``node``'s class with ``node`` and ``args``."""
        handler = self._handlers.get(type(node))
        if handler is None:
            raise Unsupported(f"{self.backend_name()}: IR node {type(node).__name__} is not "
                              f"supported by {self.renderer_name()}")
        return handler(self, node, *args)

"""Fusion: compose scalar stages into one kernel function with no intermediate array.

``g.Unary(T, P, f)`` lifts a kernel function ``f(x, p)`` to an op object;
``g.Fused(T, P, [OpA, OpB, ...])`` composes ops (classes with a static
``eval(x, p)``, ``Unary`` objects or other ``Fused`` objects) in order. Each
stage's result is converted to ``T`` before the next stage, in the Python
oracle (``Fused.eval``) and in the lowered IR alike, exactly as if each stage
were a separate map over a ``T`` array - but the map over a ``Fused`` function
is one loop with no intermediate buffer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .errors import InvalidArgument
from .types import ScalarType, as_scalar_type, short_name


def _scalar(t: Any, what: str) -> ScalarType:
    st = as_scalar_type(t)
    if st is None:
        raise InvalidArgument(f"{what} must be a scalar type (g.f32, g.i32, ...), got {t!r}")
    return st


class Unary:
    """A kernel function ``f(x, p) -> T`` lifted to an op usable in :class:`Fused`."""

    def __init__(self, T: Any, P: Any, f: Callable[..., Any]) -> None:
        self.T = _scalar(T, "Unary's T")
        self.P = P
        if not callable(f):
            raise InvalidArgument(f"Unary's function must be callable, got {f!r}")
        self.fn = f

    def eval(self, x: Any, p: Any) -> Any:
        """Apply the function to ``x`` with params ``p`` and convert the result to ``T``."""
        return self.T(self.fn(x, p))

    __call__ = eval

    def __repr__(self) -> str:
        return f"Unary({short_name(self.T)}, {getattr(self.fn, '__qualname__', self.fn)!r})"


def stage_function(op: Any) -> Callable[..., Any]:
    """The plain function behind a Fused stage (a Unary's ``fn`` or a class's static ``eval``)."""
    if isinstance(op, Unary):
        return op.fn
    fn = op.eval
    return getattr(fn, "__func__", fn) if isinstance(op, type) else fn


class Fused:
    """Ops applied in order: ``Fused(T, P, [A, B]).eval(x, p) == T(B.eval(T(A.eval(x, p)), p))``."""

    def __init__(self, T: Any, P: Any, ops: Sequence[Any]) -> None:
        self.T = _scalar(T, "Fused's T")
        self.P = P
        if isinstance(ops, (str, bytes)) or not isinstance(ops, Sequence):
            raise InvalidArgument(f"Fused's ops must be a list of op classes, got {ops!r}")
        if not ops:
            raise InvalidArgument("Fused needs at least one op")
        for i, op in enumerate(ops):
            if isinstance(op, (Unary, Fused)):
                if op.T is not self.T:
                    raise InvalidArgument(
                        f"Fused op #{i} ({op!r}) works on {short_name(op.T)}, not "
                        f"{short_name(self.T)}")
                continue
            ev = getattr(op, "eval", None)
            if ev is None:
                raise InvalidArgument(f"Fused op #{i} ({op!r}) has no eval(x, p)")
            if not callable(ev):
                raise InvalidArgument(f"Fused op #{i} ({op!r}): eval is not callable")
        self.ops: tuple[Any, ...] = tuple(ops)

    def eval(self, x: Any, p: Any) -> Any:
        """The oracle: apply every op in order, converting each result to ``T``."""
        for op in self.ops:
            x = self.T(op.eval(x, p))
        return x

    __call__ = eval

    def stages(self) -> list[tuple[Callable[..., Any], str]]:
        """Every stage's plain function, nested Fused objects flattened, with a short name
        (the op class's name, or the lifted function's name)."""
        out: list[tuple[Callable[..., Any], str]] = []
        for op in self.ops:
            if isinstance(op, Fused):
                out.extend(op.stages())
            else:
                fn = stage_function(op)
                name = op.__name__ if isinstance(op, type) else getattr(fn, "__name__", "op")
                out.append((fn, name))
        return out

    def __repr__(self) -> str:
        names = ", ".join(getattr(op, "__qualname__", repr(op)) for op in self.ops)
        return f"Fused({short_name(self.T)}, [{names}])"

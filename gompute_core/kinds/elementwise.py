"""The ``elementwise`` kind: a NumPy-ufunc-like kernel from one scalar function.

``g.elementwise(name, f, ins, outs, P=None)``: ``f`` takes one scalar per input (plus
``p`` when ``P`` is given) and returns one value per output (a tuple when ``outs`` is a
sequence of several types). ``ins`` lists each input's type; an input declared
``g.Scalar[T]`` is one number for the whole launch, every other input is an array.
Array operands broadcast as NumPy's do, may be any strided view (negative strides,
column slices, transposes: read and written in place, never copied), and outputs not
given are allocated. ``run(*ins, out=None, p=None)`` returns the output (one array) or
the outputs (a tuple, when ``outs`` was a sequence); ``launch`` is the same without
allocation or synchronization, on device buffers and device arrays.

The kind has no device entry of its own: :mod:`.elementwise_source` writes a raw kernel
per variant (contiguous, or strided with ``d`` dimensions after collapsing), which every
backend that runs raw kernels compiles; :mod:`.elementwise_program` picks and launches
them (:mod:`.elementwise_layout` works out the broadcast, strides and variant).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import MethodType
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgument
from ..ir.kernel import RAW
from ..specs import Spec, _check_params, _check_type, _new, _positional_arity, _where
from ..types import ScalarType, as_scalar_type, short_name
from .base import Kind, register

if TYPE_CHECKING:
    from ..ir.kernel import KernelIR


@dataclass(frozen=True)
class ScalarArg:
    """An input declared ``g.Scalar[T]``: one value of ``T`` for the whole launch."""

    T: ScalarType

    def __repr__(self) -> str:
        return f"g.Scalar[g.{short_name(self.T)}]"


class Scalar:
    """``g.Scalar[g.f32]`` in an elementwise kernel's ``ins``: that input is one number (a
    NumPy scalar of exactly ``T``, or a Python number ``T`` holds exactly), not an array."""

    def __class_getitem__(cls, t: Any) -> ScalarArg:
        st = as_scalar_type(t)
        if st is None:
            raise InvalidArgument(f"g.Scalar[{t!r}]: expected a Gompute scalar type "
                                  "(g.i8 ... g.f64 or bool)")
        return ScalarArg(st)


@dataclass(frozen=True, eq=False)
class ElementwiseSpec(Spec):
    """A spec of the ``elementwise`` kind: ``ins`` (element types), ``scalars`` (which
    inputs are ``g.Scalar``), ``names`` (the inputs' parameter names, used in messages),
    ``outs`` and ``single`` (``outs`` was one type: ``run`` returns an array, not a
    tuple)."""

    ins: tuple[ScalarType, ...] = ()
    scalars: tuple[bool, ...] = ()
    names: tuple[str, ...] = ()
    outs: tuple[ScalarType, ...] = ()
    single: bool = True

    @property
    def value_types(self) -> tuple[tuple[str, ScalarType], ...]:
        """``(role, type)`` of every input (by parameter name) and output (``out0``...)."""
        return (*zip(self.names, self.ins, strict=True),
                *((f"out{k}", t) for k, t in enumerate(self.outs)))

    def is_scalar(self, k: int) -> bool:
        """Whether input ``k`` is a ``g.Scalar``."""
        return self.scalars[k]

    @property
    def array_count(self) -> int:
        """Array operands: the array inputs and the outputs."""
        return self.scalars.count(False) + len(self.outs)

    def __repr__(self) -> str:
        ins = ", ".join(f"{n}: {'Scalar[' + short_name(t) + ']' if s else short_name(t)}"
                        for n, t, s in zip(self.names, self.ins, self.scalars, strict=True))
        outs = ", ".join(short_name(t) for t in self.outs)
        p = self.params.__qualname__ if self.params is not None else "None"
        return (f"<Spec {self.name!r} elementwise ({ins}) -> ({outs}) params={p} "
                f"block_size={self.block_size}>")


def _run(k: Any, *args: Any, out: Any = None, p: Any = None) -> Any:
    return k.program.run(args, out, p)


class ElementwiseKind(Kind):
    """``outs = f(*ins, p)`` over broadcast, possibly strided arrays (module docstring)."""

    name = "elementwise"
    default_role = "out0"
    output_role = "out0"
    pipelines = False
    checkable = True
    needs = frozenset({RAW})
    """Its entries are raw kernels (no barriers, shared memory or atomics): it runs on
    every backend that runs raw kernels."""

    def lower(self, spec: Spec, common: dict[str, Any]) -> KernelIR:
        """The element function in the kernel language, as the contiguous variant calls it
        (``KernelSyntaxError`` with file and line for a function outside the language,
        whatever the backend); the device program is :mod:`.elementwise_source`'s raw
        kernels."""
        from ..ir.kernel import KernelIR as IR
        from .elementwise_source import make_variant

        raw = make_variant(spec, None).lower()  # type: ignore[arg-type]
        return IR(**common, functions=raw.functions, element=raw.element, block=raw.block)

    def open(self, device: Any, spec: Spec, checked: bool = False) -> Any:
        """The loaded program of ``spec`` on ``device`` (``Kernel``'s ``program``): its
        variants compiled on first use, the contiguous one at once (or taken from
        ``$GOMPUTE_ARTIFACT_DIR`` when ``gompute build`` wrote it); ``checked``: each
        variant a checked raw kernel (the element function's accesses checked)."""
        from .elementwise_program import ElementwiseProgram

        return ElementwiseProgram(spec, device, checked)  # type: ignore[arg-type]

    def arity_error(self, got: int) -> InvalidArgument | None:
        """None: ``run`` takes any number of positional inputs and names a wrong count
        itself, with the inputs' names."""
        return None

    def launch(self, program: Any) -> Callable[..., None]:
        return program.launch

    def run(self, kernel: Any) -> Callable[..., Any]:
        return MethodType(_run, kernel)


ELEMENTWISE = register(ElementwiseKind())


def _types(ctor: str, what: str, values: Any, allow_scalar: bool
           ) -> tuple[tuple[ScalarType, ...], tuple[bool, ...]]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        values = (values,)
    types, scalars = [], []
    for k, v in enumerate(values):
        if isinstance(v, ScalarArg):
            if not allow_scalar:
                raise InvalidArgument(f"{ctor}: {what}[{k}] is {v!r}; outputs are arrays")
            types.append(v.T)
            scalars.append(True)
        else:
            types.append(_check_type(ctor, f"{what}[{k}]", v))
            scalars.append(False)
    return tuple(types), tuple(scalars)


def elementwise(name: str, fn: Callable[..., Any], ins: Sequence[Any], outs: Any,
                P: type | None = None, *, block_size: int = 256) -> Spec:
    """An elementwise kernel: ``outs = fn(*ins[, p])`` applied to every element of the
    broadcast inputs (see the module docstring).

    ``ins``: one type per input of ``fn``, ``g.Scalar[T]`` for an input that is one number;
    ``outs``: one type (``run`` returns an array) or a sequence of types (``fn`` returns a
    tuple of that many values; ``run`` returns a tuple); ``P``: a ``@g.params`` class
    passed to ``fn`` as its last argument, or None.
    """
    ctor = f"g.elementwise({name!r})"
    in_types, scalars = _types(ctor, "ins", ins, True)
    single = as_scalar_type(outs) is not None
    out_types, _ = _types(ctor, "outs", outs, False)
    if not out_types:
        raise InvalidArgument(f"{ctor}: outs names no output type")
    if in_types and all(scalars):
        raise InvalidArgument(f"{ctor}: every input is a g.Scalar; an elementwise kernel "
                              "needs at least one array (or no inputs at all)")
    P = _check_params(ctor, P)
    if not inspect.isfunction(fn):
        raise InvalidArgument(f"{ctor}: the kernel function must be a Python function or a "
                              f"lambda, got {fn!r}")
    count = _positional_arity(ctor, "kernel function", fn)
    expect = len(in_types) + (P is not None)
    if count != expect:
        shape = ", ".join([f"x{k}" for k in range(len(in_types))] + (["p"] if P else []))
        raise InvalidArgument(f"{ctor}: kernel function {_where(fn)} takes {count} "
                              f"argument(s); expected {expect}: f({shape})")
    names = tuple(inspect.signature(fn).parameters)[:len(in_types)]
    return _new(ctor, name, ELEMENTWISE, block_size, spec_class=ElementwiseSpec, params=P,
                fn=fn, ins=in_types, scalars=scalars, names=names, outs=out_types,
                single=single)

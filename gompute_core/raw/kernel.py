"""``@g.raw_kernel``: a raw kernel's definition, its signature, and its lowering.

A raw kernel is a Python function in the kernel language plus stores to its
arrays, a bare ``return``, and :mod:`g.builtins <gompute_core.raw.builtins>`.
Its parameters are annotated: ``g.GlobalPtr[T]`` (a device array), a scalar
type (``g.f32``, ``g.u64``...) or one ``@g.params`` class. The definition is
checked and registered under its name at once (names are unique across specs
and raw kernels in the process); the body is lowered on first use (or by
:meth:`RawKernelDef.lower`), so a kernel outside the language fails there with
the ``KernelSyntaxError`` and line.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import AbiError, InvalidArgument
from ..ir.kernel import RAW, KernelIR
from ..ir.nodes import IRType, PointerType, StructType
from ..types import as_scalar_type
from .bounds import Bound, parse_bounds

MAX_BLOCK_THREADS = 1024
"""The most threads a block may have on every supported backend."""
MAX_BLOCK_DIMS = (1024, 1024, 64)
"""The most threads per block along x, y and z (CUDA's and HIP's limits)."""


def block_shape(value: Any, what: str) -> tuple[int, int, int]:
    """``value`` (an int, a tuple of 1 to 3 ints, or a ``g.Dim3``) as a checked block shape."""
    from ..runtime.dim3 import Dim3

    if isinstance(value, Dim3):
        dims: tuple[Any, ...] = (value.x, value.y, value.z)
    elif isinstance(value, tuple):
        dims = value
    else:
        dims = (value,)
    if not 1 <= len(dims) <= 3:
        raise InvalidArgument(f"{what}: a block shape has 1 to 3 dimensions, got {value!r}")
    out = []
    for axis, d in zip("xyz", dims, strict=False):
        if isinstance(d, bool) or not hasattr(d, "__index__"):
            raise InvalidArgument(f"{what}: block {axis} must be an int, got {d!r}")
        out.append(d.__index__())
    while len(out) < 3:
        out.append(1)
    for axis, d, limit in zip("xyz", out, MAX_BLOCK_DIMS, strict=True):
        if not 1 <= d <= limit:
            raise InvalidArgument(f"{what}: block {axis}={d} is outside 1..{limit}")
    if out[0] * out[1] * out[2] > MAX_BLOCK_THREADS:
        raise InvalidArgument(f"{what}: block {tuple(out)} has {out[0] * out[1] * out[2]} "
                              f"threads; at most {MAX_BLOCK_THREADS}")
    return (out[0], out[1], out[2])


@dataclass(frozen=True, eq=False)
class RawKernelDef:
    """A ``@g.raw_kernel`` function: name, block shape, signature, and where it was made.

    ``signature`` lists ``(parameter name, IR type)``; ``bounds`` lists the declared
    :class:`~gompute_core.raw.bounds.Bound` of pointer parameters (a parameter name, an
    expression of integer parameters or a constant: ``launch`` checks the buffer holds
    that many elements).
    """

    name: str
    fn: Callable[..., Any]
    block: tuple[int, int, int] | None
    signature: tuple[tuple[str, IRType], ...]
    params_class: type | None
    bounds: tuple[Bound, ...]
    defined_at: str
    defined_in: str
    kind: str = RAW
    source: str | None = None
    """C text of a kernel from ``g.RawKernel.from_source`` (``fn`` is then None)."""
    source_backends: tuple[str, ...] = ()
    """The backends that C text is written for."""
    _ir: list[KernelIR] = field(default_factory=list, init=False, repr=False)

    def lower(self) -> KernelIR:
        """The kernel's IR (lowered once); ``KernelSyntaxError`` with file:line for code
        outside the language."""
        if not self._ir:
            from ..frontend import lower_raw

            functions = () if self.source is not None else \
                lower_raw(self.fn, [t for _, t in self.signature], self.name)
            params = None if self.params_class is None else \
                next(t for _, t in self.signature if isinstance(t, StructType))
            self._ir.append(KernelIR(name=self.name, kind=RAW, block_size=_threads(self.block),
                                     value_types=(), params=params, functions=functions,
                                     element=self.name, block=self.block))
        return self._ir[0]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise InvalidArgument(f"raw kernel {self.name!r} runs on a device: launch it with "
                              f"g.RawKernel({self.name!r}, backend).launch(grid, block, args)")

    def __repr__(self) -> str:
        sig = ", ".join(f"{n}: {_describe(t)}" for n, t in self.signature)
        return f"<raw kernel {self.name}({sig}) block={self.block} at {self.defined_at}>"


def _threads(block: tuple[int, int, int] | None) -> int:
    return 0 if block is None else block[0] * block[1] * block[2]


def _describe(t: IRType) -> str:
    from ..frontend.values import describe_type

    return describe_type(t)


def _param_type(fn: Callable[..., Any], name: str, annotation: Any
                ) -> tuple[IRType, type | None]:
    if annotation is inspect.Parameter.empty:
        raise InvalidArgument(f"raw kernel {fn.__name__!r} parameter {name!r} has no "
                              "annotation: declare g.GlobalPtr[T], a scalar type (g.f32, "
                              "g.u64, ...) or a @g.params class")
    return _typed(f"raw kernel {fn.__name__!r}", name, annotation)


def _typed(owner: str, name: str, annotation: Any) -> tuple[IRType, type | None]:
    """The IR type of a declared parameter type, and its params class if it is one."""
    if isinstance(annotation, PointerType):
        return annotation, None
    scalar = as_scalar_type(annotation)
    if scalar is not None:
        return scalar, None
    if isinstance(annotation, type):
        from ..abi import struct_type_of

        try:
            return struct_type_of(annotation), annotation
        except AbiError as exc:
            raise InvalidArgument(f"{owner} parameter {name!r}: {annotation.__qualname__} is "
                                  f"not a @g.params class ({exc})") from None
    raise InvalidArgument(f"{owner} parameter {name!r}: {annotation!r} is not g.GlobalPtr[T], "
                          "a scalar type or a @g.params class")


def define_source(name: str, source: str, backend: Any, signature: Any,
                  block: Any) -> RawKernelDef:
    """Check and register a raw kernel given as C text (``g.RawKernel.from_source``)."""
    from ..specs import _caller, _check_name, _register

    kname = _check_name("RawKernel.from_source", name)
    if not isinstance(source, str) or not source.strip():
        raise InvalidArgument(f"RawKernel.from_source({kname!r}): source must be C text")
    backends = (backend,) if isinstance(backend, str) else tuple(backend)
    if not backends or not all(isinstance(b, str) for b in backends):
        raise InvalidArgument(f"RawKernel.from_source({kname!r}): backend must be a backend "
                              f"name or a sequence of them, got {backend!r}")
    if isinstance(signature, (str, bytes)) or not hasattr(signature, "__iter__"):
        raise InvalidArgument(f"RawKernel.from_source({kname!r}): signature must list the "
                              "parameter types in order")
    owner = f"RawKernel.from_source({kname!r})"
    out: list[tuple[str, IRType]] = []
    params_class = None
    for k, item in enumerate(signature):
        pname, annotation = item if isinstance(item, tuple) and len(item) == 2 and \
            isinstance(item[0], str) else (f"arg{k}", item)
        t, cls = _typed(owner, pname, annotation)
        if cls is not None:
            if params_class is not None:
                raise InvalidArgument(f"{owner}: at most one @g.params parameter")
            params_class = cls
        out.append((pname, t))
    shape = None if block is None else block_shape(block, owner)
    defined_at, defined_in = _caller()
    return _register(RawKernelDef(kname, None, shape, tuple(out), params_class,  # type: ignore[arg-type]
                                  (), defined_at, defined_in, source=source,
                                  source_backends=backends))


def signature_of(fn: Callable[..., Any]) -> tuple[tuple[tuple[str, IRType], ...], type | None]:
    """The checked signature of ``fn`` and its params class (at most one)."""
    try:
        # string annotations (``from __future__ import annotations``) see what the body
        # sees: the module's globals and the function's closure (a kernel made by a factory
        # over its element type annotates ``g.GlobalPtr[T]``)
        closure = inspect.getclosurevars(fn).nonlocals
        hints = inspect.get_annotations(fn, eval_str=True, locals=closure)
    except Exception as exc:  # noqa: BLE001 - any failure evaluating user annotations
        raise InvalidArgument(f"raw kernel {getattr(fn, '__name__', fn)!r}: its annotations "
                              f"cannot be evaluated: {exc}") from None
    sig = inspect.signature(fn)
    out: list[tuple[str, IRType]] = []
    params_class = None
    for p in sig.parameters.values():
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) or \
                p.default is not p.empty:
            raise InvalidArgument(f"raw kernel {fn.__name__!r}: parameter {p.name!r} must be a "
                                  "plain positional parameter without a default")
        t, cls = _param_type(fn, p.name, hints.get(p.name, p.empty))
        if cls is not None:
            if params_class is not None:
                raise InvalidArgument(f"raw kernel {fn.__name__!r}: at most one @g.params "
                                      f"parameter (also {p.name!r})")
            params_class = cls
        out.append((p.name, t))
    return tuple(out), params_class


def raw_kernel(fn: Callable[..., Any] | None = None, *, name: str | None = None,
               block: Any = None, bounds: dict[str, str | int] | None = None) -> Any:
    """Define a raw kernel: ``@g.raw_kernel`` or ``@g.raw_kernel(name=, block=, bounds=)``.

    ``block`` declares the block shape (an int, a tuple or a ``g.Dim3``): every launch
    is then checked against it. ``bounds={"data": "n"}`` makes every launch check that
    the buffer passed as ``data`` holds at least ``n`` elements; the value may also be an
    expression of integer parameters (``"M*K"``) or an int (see :mod:`.bounds`).
    """
    from ..specs import _caller, _check_name, _register

    def define(f: Callable[..., Any]) -> RawKernelDef:
        if not inspect.isfunction(f):
            raise InvalidArgument(f"@g.raw_kernel decorates a function, got {f!r}")
        kname = _check_name("g.raw_kernel", f.__name__ if name is None else name)
        shape = None if block is None else block_shape(block, f"raw kernel {kname!r}")
        signature, params_class = signature_of(f)
        defined_at, defined_in = _caller()
        return _register(RawKernelDef(kname, f, shape, signature, params_class,
                                      parse_bounds(kname, signature, bounds), defined_at,
                                      defined_in))

    if fn is not None:
        return define(fn)
    return define

"""Spec constructors: what a kernel computes, independent of any backend.

A :class:`Spec` is immutable. It names the kernel (a C identifier, unique in
the process), its kind, block size, value types, params class and the Python
functions it applies. ``spec.lower()`` turns it into the backend-neutral
:class:`~gompute_core.ir.kernel.KernelIR` (cached), and ``spec.fold(partials)``
is the host-side fold of reduce partials shared by every backend.

The constructors (``g.map``, ``g.reduce``, ...) live with their kind, in
:mod:`gompute_core.kinds` (one module per kind: its validation, lowering, launch,
run and Dask rules); this module keeps what every kind shares: the ``Spec``
record, the process registry of kernel names and the argument checks. The old
names ``gompute_core.specs.map`` ... ``gompute_core.specs.scatter`` still resolve
(to the kinds' constructors).
"""

from __future__ import annotations

import importlib
import inspect
import keyword
import os
import re
import sys
import threading
import typing
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import InvalidArgument
from .ir.kernel import KernelIR
from .types import ScalarType, as_scalar_type, is_int, short_name, u64

Preset = typing.Literal["sum", "min", "max", "any", "all", "cumsum", "cumprod", "cummax",
                        "cummin"]

_C_KEYWORDS = frozenset("""
    auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef
    union unsigned void volatile while bool true false class namespace template typename this
    new delete operator private protected public virtual friend using throw try catch
    """.split())
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

_registry_lock = threading.Lock()
_registry: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
"""Every live kernel defined in this process by entry name: specs and raw kernels
(``gompute_core.raw.kernel.RawKernelDef``) share one namespace, as their entry symbols do.
Held weakly: a spec lives as long as someone holds it (a module-level spec, through its
module); a dropped one is freed and its name can be defined again."""


@dataclass(frozen=True, eq=False)
class Spec:
    """One kernel: kind, block size, value types, params class and functions.

    Value-type attributes that do not apply to the kind are None: ``T`` (map,
    map_indexed, reduce, gather, scatter), ``In``/``Out`` (map_to),
    ``A``/``B``/``Out`` (zip), ``Idx`` (gather, scatter). ``fn`` is the
    element function (map kinds), ``combine``/``identity``/``pre`` describe a
    reduce or a scan, ``preset`` names a built-in one (``"sum"``, ``"min"``, ...,
    ``"cumsum"``, ...) and ``inclusive`` says what a scan folds.
    ``kind`` is the kind's name (``"map"``, ...; compare it with strings as before)
    and ``kind_object`` the kind itself (:mod:`gompute_core.kinds`).
    ``defined_at`` is the ``file:line`` of the constructor call and
    ``defined_in`` the name of the module that made it: a spec pickles by
    reference to that module and its name (see :meth:`__reduce__`).
    """

    name: str
    kind: str
    block_size: int
    params: type | None
    T: ScalarType | None = None
    In: ScalarType | None = None
    Out: ScalarType | None = None
    A: ScalarType | None = None
    B: ScalarType | None = None
    Idx: ScalarType | None = None
    fn: Callable[..., Any] | None = None
    combine: Callable[..., Any] | None = None
    identity: Any = None
    pre: Callable[..., Any] | None = None
    preset: Preset | None = None
    inclusive: bool = True
    """A scan's: ``y[i]`` folds ``x[i]`` too (False: the elements before ``i`` only)."""
    defined_at: str = ""
    defined_in: str = ""
    kind_object: Any = field(default=None, repr=False)
    """The :class:`~gompute_core.kinds.base.Kind` (``kind`` is its name)."""
    _ir: list[KernelIR] = field(default_factory=list, init=False, repr=False)

    @property
    def value_types(self) -> tuple[tuple[str, ScalarType], ...]:
        """``(role, type)`` pairs of the roles this kind uses, in ABI order."""
        return tuple((r, getattr(self, r)) for r in self.kind_object.roles)

    def lower(self) -> KernelIR:
        """Lower to a :class:`KernelIR` (computed once per spec, then cached).

        Raises ``KernelSyntaxError`` for a function outside the kernel language.
        """
        if self._ir:
            return self._ir[0]
        from .lowering import lower_spec

        kir = lower_spec(self)
        self._ir.append(kir)
        return kir

    def fold(self, partials: np.ndarray) -> np.generic:
        """Fold reduce ``partials`` (one per block, dtype ``T``) into one ``T`` scalar.

        Presets use NumPy's reductions (``min``/``max`` propagate NaN); a
        custom ``combine`` runs as plain Python on NumPy scalars from
        ``identity``. An empty ``partials`` gives the identity.
        """
        return self.kind_object.fold(self, partials)

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        """Pickle by reference: the defining module and the spec's name.

        Unpickling imports that module (which defines the spec again, as
        importing it did here) and returns the spec registered under the name,
        as pickle does for functions. A spec made in ``__main__`` cannot be
        found by another process: ``InvalidArgument`` says so when pickling.
        """
        if self.defined_in in ("", "__main__"):
            raise InvalidArgument(
                f"spec {self.name!r} (defined at {self.defined_at}) cannot be pickled: it was "
                f"made in {self.defined_in or 'an unknown module'!r}, which another process "
                "(a Dask worker) cannot import; define it at the top level of an importable "
                "module and import it from there")
        return spec_by_reference, (self.defined_in, self.name)

    def __copy__(self) -> Spec:
        return self  # immutable: a copy is the spec itself

    def __deepcopy__(self, memo: dict[int, Any]) -> Spec:
        return self

    def __repr__(self) -> str:
        types = ", ".join(f"{r}={short_name(t)}" for r, t in self.value_types)
        p = self.params.__qualname__ if self.params is not None else "None"
        return (f"<Spec {self.name!r} {self.kind} {types} params={p} "
                f"block_size={self.block_size}>")


def registered_spec(name: str) -> Spec | None:
    """The spec registered under ``name`` in this process, or None (also for a raw kernel)."""
    found = _registry.get(name)
    return found if isinstance(found, Spec) else None


def registered_kernel(name: str) -> Any:
    """The spec or raw kernel registered under ``name`` in this process, or None."""
    return _registry.get(name)


def registered_names() -> list[str]:
    """Every registered kernel name (for "did you mean" messages)."""
    with _registry_lock:
        return list(_registry)


def spec_by_reference(module: str, name: str) -> Spec:
    """The spec ``name`` made by importing ``module`` (how a pickled spec is restored).

    Raises ``InvalidArgument`` when importing ``module`` does not define it (a
    spec made inside a function, or only under some condition).
    """
    spec = registered_spec(name)
    if spec is None:
        importlib.import_module(module)
        spec = registered_spec(name)
    if spec is None:
        raise InvalidArgument(
            f"spec {name!r} is not defined by importing {module!r} in this process (was it "
            "made inside a function or under a condition?); make specs at the top level of "
            "their module so that every process that unpickles them defines them on import")
    return spec


_HERE = os.path.dirname(os.path.abspath(__file__))
_INTERNAL = (os.path.abspath(__file__), os.path.join(_HERE, "raw", "kernel.py"))
"""Files whose frames :func:`_caller` skips (the constructors' own), besides every file
of :data:`_KIND_MODULES`."""
_KIND_MODULES = os.path.join(_HERE, "kinds")
"""The folder of the kinds' modules (their constructors call :func:`_new`)."""


def _caller() -> tuple[str, str]:
    """``file:line`` and module name of the first frame outside the kernel constructors."""
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if path not in _INTERNAL and os.path.dirname(path) != _KIND_MODULES:
            break
        frame = frame.f_back
    if frame is None:
        return "<unknown>", ""
    return f"{frame.f_code.co_filename}:{frame.f_lineno}", frame.f_globals.get("__name__", "")


def _where(fn: Any) -> str:
    code = getattr(fn, "__code__", None)
    if code is None:
        return repr(fn)
    return f"{getattr(fn, '__qualname__', fn)} ({code.co_filename}:{code.co_firstlineno})"


MAX_NAME_LENGTH = 200
"""Longest accepted spec name (it becomes a C symbol, file names and cache keys)."""


def _check_name(ctor: str, name: Any) -> str:
    if isinstance(name, str) and len(name) > MAX_NAME_LENGTH:
        raise InvalidArgument(f"spec name {name[:40]!r}... is {len(name)} characters long; "
                              f"the limit is {MAX_NAME_LENGTH}")
    if not isinstance(name, str) or not _IDENT.match(name):
        raise InvalidArgument(f"{ctor}: name {name!r} is not a C identifier "
                              "(letters, digits and '_', not starting with a digit)")
    if name in _C_KEYWORDS or keyword.iskeyword(name) or "__" in name:
        raise InvalidArgument(f"{ctor}: name {name!r} is reserved in C, C++ or Python "
                              "(keywords and names containing '__' are not allowed)")
    return name


def _check_block(ctor: str, block_size: Any) -> int:
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)):
        raise InvalidArgument(f"{ctor}: block_size must be an int in 1..1024, "
                              f"got {block_size!r}")
    if not 1 <= int(block_size) <= 1024:
        raise InvalidArgument(f"{ctor}: block_size must be in 1..1024, got {block_size}")
    return int(block_size)


def _check_type(ctor: str, role: str, t: Any, *, allow_bool: bool = True,
                ints_only: bool = False) -> ScalarType:
    st = as_scalar_type(t)
    if st is None:
        raise InvalidArgument(f"{ctor}: {role} must be a Gompute scalar type (g.i8 ... g.f64 "
                              f"or bool), got {t!r}")
    if ints_only and not is_int(st):
        raise InvalidArgument(f"{ctor}: {role} must be an integer type, got {short_name(st)}")
    if st is np.bool_ and not allow_bool:
        raise InvalidArgument(f"{ctor}: {role} cannot be bool for this kind")
    return st


def _check_params(ctor: str, P: Any) -> type | None:
    if P is None:
        return None
    from .abi import is_params_class

    if not isinstance(P, type) or not is_params_class(P):
        raise InvalidArgument(f"{ctor}: P must be a @g.params class or None, got {P!r}")
    return P


def _positional_arity(ctor: str, what: str, fn: Any) -> int:
    """Number of positional parameters of ``fn`` (or of its ``eval`` for fused objects)."""
    target = fn
    if not inspect.isfunction(fn) and not inspect.ismethod(fn):
        ev = getattr(fn, "eval", None)
        if not callable(ev):
            raise InvalidArgument(f"{ctor}: {what} must be a Python function, a lambda or a "
                                  f"g.Fused/g.Unary object, got {fn!r}")
        target = ev
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"{ctor}: cannot read the signature of {what} {fn!r}: {exc}"
                              ) from None
    count = 0
    for prm in sig.parameters.values():
        if prm.kind in (prm.POSITIONAL_ONLY, prm.POSITIONAL_OR_KEYWORD):
            count += 1
        elif prm.kind is prm.KEYWORD_ONLY and prm.default is prm.empty:
            raise InvalidArgument(f"{ctor}: {what} {_where(target)} has a keyword-only "
                                  f"parameter {prm.name!r}; kernel functions take "
                                  "positional scalars only")
        elif prm.kind in (prm.VAR_POSITIONAL, prm.VAR_KEYWORD):
            raise InvalidArgument(f"{ctor}: {what} {_where(target)} has *args/**kwargs; "
                                  "kernel functions take a fixed number of arguments")
    return count


def _check_arity(ctor: str, what: str, fn: Any, shape: str, base: int,
                 has_params: bool) -> None:
    """``fn`` takes ``base`` value arguments plus ``p`` (``p`` optional when P is None)."""
    n = _positional_arity(ctor, what, fn)
    allowed = {base + 1} if has_params else {base, base + 1}
    if n not in allowed:
        expect = " or ".join(str(a) for a in sorted(allowed))
        raise InvalidArgument(f"{ctor}: {what} {_where(fn)} takes {n} argument(s); "
                              f"expected {expect}: {shape}")


def _check_fused(ctor: str, f: Any, T: ScalarType, P: type | None) -> None:
    """A ``g.Fused``/``g.Unary`` function must be declared for the spec's ``T`` and ``P``."""
    from .fusion import Fused, Unary

    if isinstance(f, (Fused, Unary)):
        if f.T is not T:
            raise InvalidArgument(f"{ctor}: {f!r} works on {short_name(f.T)}, the spec's T "
                                  f"is {short_name(T)}")
        if f.P is not P:
            raise InvalidArgument(f"{ctor}: {f!r} takes params {f.P!r}, the spec's P is {P!r}")


def _identity_value(ctor: str, identity: Any, T: ScalarType) -> int | float | bool:
    """``identity`` converted to ``T``'s value domain, or ``InvalidArgument``."""
    if isinstance(identity, (bool, np.bool_)):
        identity = int(identity)
    if not isinstance(identity, (int, float, np.integer, np.floating)):
        raise InvalidArgument(f"{ctor}: identity must be a number, got {identity!r}")
    if T is np.bool_:
        if identity not in (0, 1):
            raise InvalidArgument(f"{ctor}: identity {identity!r} is not a bool (0 or 1)")
        return bool(identity)
    if is_int(T):
        if isinstance(identity, (float, np.floating)) and not float(identity).is_integer():
            raise InvalidArgument(f"{ctor}: identity {identity!r} is not an integer, "
                                  f"T is {short_name(T)}")
        value = int(identity)
        info = np.iinfo(T)
        if not info.min <= value <= info.max:
            raise InvalidArgument(f"{ctor}: identity {identity!r} does not fit "
                                  f"{short_name(T)} ({info.min}..{info.max})")
        return value
    value = float(identity)
    with np.errstate(over="ignore"):
        converted = float(T(value))
    if np.isinf(converted) and not np.isinf(value):
        raise InvalidArgument(f"{ctor}: identity {identity!r} overflows {short_name(T)}")
    return converted


def _register(spec: Any) -> Any:
    """Enter ``spec`` (a Spec or a raw kernel) in the process registry, weakly; a name a
    live kernel defined elsewhere is an error naming both locations.

    Re-running the same definition (same ``file:line``, e.g. ``importlib.reload``)
    replaces the earlier spec; so does a definition of a name whose kernel was dropped.
    """
    with _registry_lock:
        old = _registry.get(spec.name)
        if old is not None and old.defined_at != spec.defined_at:
            what = "raw kernel" if spec.kind == "raw" else "spec"
            other = "raw kernel" if old.kind == "raw" else old.kind
            raise InvalidArgument(f"{what} name {spec.name!r} (defined at {spec.defined_at}) "
                                  f"is already used by a {other} defined at "
                                  f"{old.defined_at}; names are unique in the process")
        _registry[spec.name] = spec
    return spec


def _new(ctor: str, name: Any, kind: Any, block_size: Any, *, spec_class: type[Spec] = Spec,
         **fields: Any) -> Spec:
    """A new spec of ``kind`` (a :class:`~gompute_core.kinds.base.Kind`), registered;
    ``spec_class`` is ``Spec`` or a subclass carrying a kind's own fields."""
    defined_at, defined_in = _caller()
    spec = spec_class(name=_check_name(ctor, name), kind=kind.name,
                block_size=_check_block(ctor, block_size), defined_at=defined_at,
                defined_in=defined_in, kind_object=kind, **fields)
    return _register(spec)


def specs_in(namespace: dict[str, Any]) -> list[Any]:
    """Every distinct Spec and raw kernel bound to a name in ``namespace`` (a module's
    ``vars()``)."""
    from .raw.kernel import RawKernelDef

    seen: dict[int, Any] = {}
    for value in namespace.values():
        if isinstance(value, (Spec, RawKernelDef)):
            seen.setdefault(id(value), value)
    return list(seen.values())


INDEX_TYPE = u64
"""The type of ``i`` in a ``map_indexed`` kernel function."""

_MOVED = {"map": "map", "map_fn": "map", "map_indexed": "map", "map_to": "map_to",
          "zip": "zip", "reduce": "reduce", "sum": "reduce", "min": "reduce",
          "max": "reduce", "any": "reduce", "all": "reduce", "gather": "move",
          "scatter": "move"}
"""The constructors that moved to :mod:`gompute_core.kinds`, by the module holding them."""


def __getattr__(name: str) -> Any:
    """``gompute_core.specs.map`` and the other old constructor names: the kinds'."""
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"gompute_core.kinds.{module}"), name)


__all__ = [
    "Spec", "registered_spec", "spec_by_reference", "specs_in", "INDEX_TYPE",
]

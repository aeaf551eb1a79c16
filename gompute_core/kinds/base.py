"""The :class:`Kind` base class and the registry of spec kinds.

A kind (``map``, ``reduce``, ``gather``, ...) is one :class:`Kind` object, made
once in its own module (:mod:`.map`, :mod:`.map_to`, :mod:`.zip`,
:mod:`.reduce`, :mod:`.move`) and entered in the registry with
:func:`register`. The object owns everything that differs between kinds:

* its **value-type roles** (``T``; ``In``/``Out``; ``A``/``B``/``Out``;
  ``T``/``Idx``) and **entry arguments** in ABI order (:attr:`Kind.entry_args`,
  copied into every :class:`~gompute_core.ir.kernel.KernelIR` it lowers, so
  hosts lay out arguments without a per-kind table);
* its **constructor** (``g.map``, ``g.reduce``, ...: validation, then a
  :class:`~gompute_core.specs.Spec`) and its **lowering** (:meth:`Kind.lower`), which
  describes the device entry as a structural node every renderer implements once
  (``KernelIR.entry``: the element kinds' (:class:`ElementKind`), reduce's, gather's and
  scatter's);
* the **grid rule** (:meth:`Kind.per_block`), the checked per-kind
  **launch** front end (:meth:`Kind.bind_launch`, bound to a
  :class:`~gompute_core.kinds.program.KernelProgram`), and ``Kernel.run``'s front
  end, which validates the arrays and picks the **host plan** (elementwise,
  pipelined, fold, move) of :class:`~gompute_core.kinds.run.Runner`
  (:meth:`Kind.bind_run`);
* the host-side **fold** of partials (:meth:`Kind.fold`) and the **Dask chunk
  rule** (:attr:`Kind.dask_inputs`, :meth:`Kind.dask_chunk`);
* what it **needs** of a backend (:attr:`Kind.needs`: kernel feature names;
  :mod:`.support` decides from them which backends run it).

``spec.kind`` stays the kind's name, a ``str`` (``spec.kind == "map"``), so
specs pickle, hash and print as before; ``spec.kind_object`` (or
:func:`kind_named`) is the :class:`Kind`. A ``Kind`` also compares equal to its
name and hashes like it. The modules here import only the kernel language
(``specs``, ``ir``, ``lowering``, ``types``, ``errors``); what a front end needs
of the execution layer (the program, the runner, ``runtime.checks``) reaches it
through the object it is bound to.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..codegen.entries import UNROLL
from ..errors import InvalidArgument
from ..ir.entry import ElementLoop, EntryArray
from ..lowering import lower_element
from ..types import ScalarType, u64

if TYPE_CHECKING:
    from ..ir.kernel import EntryArgKind, KernelIR
    from ..specs import Spec

U64_LIMIT = 2**64
"""Counts passed to a launch are ``u64``."""


def count(n: Any, role: str = "count") -> int:
    """A non-negative element count (``InvalidArgument`` naming ``role`` otherwise)."""
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise InvalidArgument(f"{role}: expected a non-negative int, got {n!r}")
    value = n.__index__()
    if value < 0:
        raise InvalidArgument(f"{role}: expected a non-negative int, got {value}")
    return value


def launch_count(value: Any, name: str) -> int:
    """A launch's count argument ``name`` as a ``u64`` (the slow path of the front ends)."""
    if type(value) is int and 0 <= value < U64_LIMIT:
        return value
    n = count(value, f"launch: {name}")
    if n >= U64_LIMIT:
        raise InvalidArgument(f"launch: {name} {n} is not a u64")
    return n


class Kind(ABC):
    """One spec kind: its roles, entry, constructor, lowering, launch, run, fold and Dask
    rules (see the module docstring). Subclasses set the class attributes and implement
    :meth:`lower`, :meth:`launch` and :meth:`run`; one instance per kind is registered."""

    name: str = ""
    """The kind's name: ``spec.kind`` and ``KernelIR.kind`` of its specs."""
    roles: tuple[str, ...] = ()
    """Value-type roles, in ABI order."""
    entry_args: tuple[tuple[str, EntryArgKind], ...] = ()
    """The entry point's arguments before the params struct (8 bytes each)."""
    default_role: str = "T"
    """The role ``Kernel.alloc`` allocates when none is named."""
    arrays: tuple[tuple[str, str], ...] = ()
    """An elementwise kind's arrays in entry order: ``(role, access)``, access ``in``,
    ``out`` or ``inout`` (what the run plan uploads and downloads)."""
    pipelines: bool = True
    """Whether ``run`` may cut the work into chunks on a device with streams (not when an
    element's result depends on its absolute position)."""
    needs: frozenset[str] = frozenset({"entries"})
    """The kernel features a backend must declare to run this kind
    (:mod:`gompute_core.kinds.support`): the seven kinds whose entries backends render
    need ``entries`` (the backend renders their entry points)."""
    dask_inputs: tuple[tuple[str, str], ...] = ()
    """The arrays ``gompute_core.dask.map_blocks`` takes for this kind: ``(name, role)``;
    empty when map_blocks does not run it."""
    output_role: str = "T"
    checkable: bool = False
    """Whether :meth:`open` runs the kind's user code in checked mode (``checked=True``:
    every array access of the element function and its helpers checked, see
    ``docs/raw-kernels.md``); a kind that cannot refuses ``checked=True``."""
    run_args: tuple[str, ...] = ()
    """``run``'s positional arguments, in order (a last ``p`` may be left out)."""
    """The role of the array ``run`` returns (elementwise kinds and Dask's results)."""

    # ---- identity: a Kind is its name ------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if isinstance(other, Kind):
            return other.name == self.name
        if isinstance(other, str):
            return other == self.name
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.name)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<Kind {self.name!r}>"

    # ---- what each kind implements -----------------------------------------------------------
    @abstractmethod
    def lower(self, spec: Spec, common: dict[str, Any]) -> KernelIR:
        """The :class:`KernelIR` of ``spec`` (``common``: the fields every kind sets)."""

    @abstractmethod
    def launch(self, program: Any) -> Callable[..., None]:
        """The checked ``launch`` of this kind bound to ``program`` (a ``KernelProgram``):
        ``Kernel.launch`` is this callable itself, with no frame in between."""

    @abstractmethod
    def run(self, kernel: Any) -> Callable[..., Any]:
        """``Kernel.run``'s front end bound to ``kernel``: validates the arrays, then runs
        the kind's host plan on ``kernel``'s runner."""

    # ---- shared defaults ----------------------------------------------------------------------
    def open(self, device: Any, spec: Spec, checked: bool = False) -> Any:
        """The loaded program of ``spec`` on ``device`` when this kind brings its own
        device program (:mod:`.scan`'s raw kernels); None (the default) when the backend
        compiles the kind's entry point and the core loads it as a ``KernelProgram``.
        ``checked`` is True only for a :attr:`checkable` kind."""
        return None

    def per_block(self, kernel: KernelIR) -> int:
        """Elements one block of the C-family entry covers per unrolled step (the grid
        rule): a small count needs no more blocks than this covers (16-byte vectors,
        ``UNROLL`` deep)."""
        widest = max(np.dtype(t).itemsize for role, t in kernel.value_types if role != "Idx")
        return kernel.block_size * (16 // widest) * UNROLL

    def arity_error(self, got: int) -> InvalidArgument | None:
        """The refusal of ``run`` called with ``got`` positional arguments, or None when a
        kernel of this kind takes that many."""
        names = self.run_args
        least = len(names) - (names[-1:] == ("p",))
        if least <= got <= len(names):
            return None
        optional = " (p may be left out when the spec has no params)" \
            if least < len(names) else ""
        return InvalidArgument(f"run: a {self.name} kernel takes ({', '.join(names)})"
                               f"{optional}, got {got} argument{'s' * (got != 1)}")

    def fold(self, spec: Spec, partials: np.ndarray) -> np.generic:
        """Fold partials into the result: only kinds that write partials have one."""
        raise InvalidArgument(f"spec {spec.name!r} is a {self.name}, not a reduce: no fold")

    def dask_chunk(self, chunk: Any, spec: Spec, p: Any, blocks: tuple[Any, ...],
                   block_info: Any) -> Any:
        """One Dask chunk's result (``chunk`` runs a spec: ``chunk.run(spec, *args)``)."""
        raise InvalidArgument(f"spec {spec.name!r} is a {self.name}; map_blocks runs "
                              f"{', '.join(k.name for k in kinds() if k.dask_inputs)}")


class CheckedByElementwise:
    """Mixed into a kind whose entry a backend renders (``map``, ``map_indexed``,
    ``map_to``, ``zip``; before :class:`Kind`): checked, its spec runs as the equivalent
    elementwise program (:mod:`.element_checked`); unchecked, the backend's entry as
    before."""

    checkable = True
    indexed = False
    """Whether the element function takes the element's index (``map_indexed``)."""

    def open(self, device: Any, spec: Spec, checked: bool = False) -> Any:
        """A :class:`~.element_checked.CheckedElements` when ``checked``; None (the
        backend's entry) else."""
        if not checked:
            return None
        from .element_checked import CheckedElements

        return CheckedElements(device, spec)


class ElementKind(CheckedByElementwise, Kind):
    """A kind whose entry is one :class:`~gompute_core.ir.entry.ElementLoop`
    (``map``, ``map_indexed``, ``map_to``, ``zip``): ``output[i] = f(inputs[i]...[, i], p)``
    for ``i`` in ``[0, n)``. Its :attr:`~Kind.arrays` pair in order with the pointers of
    its :attr:`~Kind.entry_args` (those read, ``in``/``inout``, are the inputs; the one
    written, ``out``/``inout``, the output), its ``u64`` argument is the count; the
    renderers need nothing else of it."""

    def element_loop(self, types: Mapping[str, ScalarType], function: str) -> ElementLoop:
        """The loop calling IR function ``function`` over arrays of ``types`` (by role)."""
        pointers = [name for name, arg in self.entry_args if arg == "pointer"]
        count = next(name for name, arg in self.entry_args if arg == "u64")
        arrays = [(EntryArray(name, types[role]), access)
                  for name, (role, access) in zip(pointers, self.arrays, strict=True)]
        inputs = tuple(a for a, access in arrays if access != "out")
        output = next(a for a, access in arrays if access != "in")
        return ElementLoop(count, inputs, output, function, self.indexed)

    def lower(self, spec: Spec, common: dict[str, Any]) -> KernelIR:
        loop = self.element_loop(dict(spec.value_types), f"{spec.name}_fn")
        values = tuple(a.type for a in loop.inputs) + ((u64,) if loop.indexed else ())
        return lower_element(spec, common, values, loop)


_REGISTRY: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    """Enter ``kind`` in the registry (its name must be new); returns it."""
    if not kind.name or kind.name in _REGISTRY:
        raise InvalidArgument(f"kind {kind.name!r} is unnamed or registered twice")
    _REGISTRY[kind.name] = kind
    return kind


def kind_named(name: str) -> Kind:
    """The registered kind called ``name`` (``InvalidArgument`` naming the known ones)."""
    found = _REGISTRY.get(name)
    if found is None:
        raise InvalidArgument(f"no spec kind {name!r} (kinds: {', '.join(_REGISTRY)})")
    return found


def kinds() -> tuple[Kind, ...]:
    """Every registered kind, in registration order."""
    return tuple(_REGISTRY.values())


def kind_names() -> tuple[str, ...]:
    """The names of every registered kind, in registration order."""
    return tuple(_REGISTRY)

"""Structural descriptions of a kind's device entry, which renderers implement once.

A kind whose entry is one of these shapes says so in its lowering
(``KernelIR.entry``); every renderer (the C family, the CPU's numba module, the
reference backend) renders or interprets the shape, never the kind's name, so a kind
built from them runs on every backend without a per-kind template.

:class:`ElementLoop` is the shape of the element kinds (``map``, ``map_indexed``,
``map_to``, ``zip``): one independent element per index of ``[0, n)``.
:class:`BlockReduce` is ``reduce``'s: one partial per block, each the fold of its
block's share of the input. :class:`IndexedMove` is ``gather``'s and ``scatter``'s: an
indexed copy with no kernel function. Scan keeps its raw kernels (issue 19, item 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..types import ScalarType
from .nodes import Const


@dataclass(frozen=True)
class EntryArray:
    """One array argument of an entry: the name of its pointer among
    ``KernelIR.entry_args`` and its element type."""

    name: str
    type: ScalarType


@dataclass(frozen=True)
class ElementLoop:
    """``for i in [0, count) in parallel: output[i] = function(inputs[0][i], ...[, i][, p])``.

    ``count`` names the ``u64`` entry argument holding the element count; ``inputs`` are
    the arrays read per element, in the order ``function`` takes them; ``output`` is the
    array written (it may also be an input: an in-place loop, whose pointer is then not
    ``const``); ``indexed`` passes the element's index (a ``u64``) after the inputs;
    ``function`` is the IR function called per element (it takes ``p`` last when the
    kernel has params). Elements are independent, so a renderer may run them in any order
    and vectorize them.
    """

    count: str
    inputs: tuple[EntryArray, ...]
    output: EntryArray
    function: str
    indexed: bool = False

    def arrays(self) -> dict[str, ScalarType]:
        """Every array's element type by entry name: the inputs, then the output."""
        return {a.name: a.type for a in (*self.inputs, self.output)}

    def writes(self, name: str) -> bool:
        """Whether the loop writes the array ``name`` (its pointer is not ``const``)."""
        return name == self.output.name


@dataclass(frozen=True)
class BlockReduce:
    """``for b in [0, blocks): partials[b] = fold(combine, identity, pre(input[i]) for i in
    block b's share of [0, count))``, ``blocks`` the launch's grid.

    ``count`` names the ``u64`` entry argument holding the element count; ``input`` is the
    array read (``const``), ``partials`` the one written (one element per block);
    ``combine`` is the IR function ``combine(a, b) -> T`` (associative; it never takes
    ``p``); ``pre`` the IR function applied to each element first (it takes ``p`` last
    when the kernel has params), or None; ``identity`` the fold's start (a ``T``
    constant). ``reassociate`` says that ``combine`` is also commutative and may be
    regrouped (the presets): a renderer may then give a block any share of the elements
    and fold them in any order (lanes, trees, grid strides); otherwise block ``b``'s share
    is the ``b``-th contiguous chunk and every fold keeps element order.
    """

    count: str
    input: EntryArray
    partials: EntryArray
    combine: str
    identity: Const
    pre: str | None = None
    reassociate: bool = False

    def arrays(self) -> dict[str, ScalarType]:
        """Every array's element type by entry name: the input, then the partials."""
        return {self.input.name: self.input.type, self.partials.name: self.partials.type}

    def writes(self, name: str) -> bool:
        """Whether the entry writes the array ``name`` (its pointer is not ``const``)."""
        return name == self.partials.name


@dataclass(frozen=True)
class IndexedMove:
    """``for i in [0, count): j = idx[i]; if 0 <= j < bound: out[i] = src[j]`` (``direction``
    ``"gather"``) or ``out[j] = src[i]`` (``"scatter"``).

    ``count`` and ``bound`` name the ``u64`` entry arguments holding the index count and
    the bound of the indices (``len(src)`` for a gather, ``len(out)`` for a scatter);
    indices outside ``[0, bound)`` (negative included) are skipped. ``src`` and ``idx``
    are read (``const``), ``out`` is written. A gather's elements are independent; a
    scatter's are too unless ``idx`` repeats an index, where the last write wins on a
    renderer that runs them in order (:attr:`ordered`: the CPU keeps its loop serial) and
    any one of them elsewhere. There is no kernel function and no params.
    """

    count: str
    bound: str
    src: EntryArray
    idx: EntryArray
    out: EntryArray
    direction: Literal["gather", "scatter"]

    @property
    def ordered(self) -> bool:
        """Whether two indices may name the same element of ``out`` (a scatter), so a
        renderer that promises the last write wins must run the indices in order."""
        return self.direction == "scatter"

    def arrays(self) -> dict[str, ScalarType]:
        """Every array's element type by entry name: the source, the indices, the output."""
        return {a.name: a.type for a in (self.src, self.idx, self.out)}

    def writes(self, name: str) -> bool:
        """Whether the entry writes the array ``name`` (its pointer is not ``const``)."""
        return name == self.out.name

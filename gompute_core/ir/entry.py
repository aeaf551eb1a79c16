"""Structural descriptions of a kind's device entry, which renderers implement once.

A kind whose entry is one of these shapes says so in its lowering
(``KernelIR.entry``); every renderer (the C family, the CPU's numba module, the
reference backend) renders or interprets the shape, never the kind's name, so a kind
built from them runs on every backend without a per-kind template.

:class:`ElementLoop` is the shape of the element kinds (``map``, ``map_indexed``,
``map_to``, ``zip``): one independent element per index of ``[0, n)``. Reduce,
gather/scatter and scan keep their per-kind entries for now (issue 19, item 1).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..types import ScalarType


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

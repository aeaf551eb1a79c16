"""The spec kinds, one :class:`~gompute_core.kinds.base.Kind` object each, and the host side
every backend shares.

:mod:`.base` is the ``Kind`` class and the registry (:func:`kind_named`,
:func:`kinds`); :mod:`.map` (map, map_indexed), :mod:`.map_to`, :mod:`.zip`,
:mod:`.reduce`, :mod:`.move` (gather, scatter) and :mod:`.scan` are the kinds: each owns its
roles, entry arguments, constructor, lowering, launch and run front ends, fold
and Dask chunk rule. :mod:`.elementwise` (``g.elementwise``) has no entry of its
own: it writes raw kernels (:mod:`.elementwise_source`) and runs them itself
(:mod:`.elementwise_program`). Importing this package registers them all; the list of
kinds is the registry's. :mod:`.program` is the loaded program the launch front
ends drive (argument buffer, operand checks, grid, streams); :mod:`.run` is
``Kernel.run``'s host plans (elementwise, pipelined, fold, move).
"""

# isort: off
# importing a kind's module registers it: this order is the order kinds are listed in
from .base import Kind, kind_named, kind_names, kinds
from .map import MAP, MAP_INDEXED
from .map_to import MAP_TO
from .zip import ZIP
from .reduce import REDUCE
from .move import GATHER, SCATTER
from .scan import SCAN
from .elementwise import ELEMENTWISE
# isort: on

__all__ = ["Kind", "kind_named", "kind_names", "kinds", "MAP", "MAP_INDEXED", "MAP_TO", "ZIP",
           "REDUCE", "GATHER", "SCATTER", "SCAN", "ELEMENTWISE"]

"""Running a block's threads as loops on a sequential target (a CPU thread), the way PoCL
and KernelAbstractions.jl run work-groups: target-independent transforms of a raw
kernel's IR that a CPU backend renders, whatever its output language.

* :mod:`.fission` splits the body at every ``barrier()`` into *block statements* (run
  once per block) and *phases* (runs of statements a loop over the block's threads
  executes), chooses which locals need one slot per thread, and which loops run in
  lockstep (:func:`plan`, :class:`Plan`).
* :mod:`.interchange` moves a phase's uniform loops and ifs out of the thread loop, so
  the statements between them (*leaves*) each become a loop over the threads that a
  compiler vectorizes across threads (:func:`moved`).
* :mod:`.registers` keeps a small constant loop that updates a register tile inside its
  leaf, unrolled, with the tile's elements in scalars (:func:`tiles`); its limits
  (:data:`~.registers.REGISTERS`: one vector register per element, 32 on x86-64 with
  AVX-512) are a rendering choice, never a correctness one.

The bundled CPU backend (numba) renders these plans; a third-party CPU backend (C with
OpenMP, say) may render the same plans in its own language.
"""

from __future__ import annotations

from .fission import BlockIf, BlockLoop, Item, Lockstep, Phase, Plan, counted_while, exposed, plan
from .interchange import Leaf, Node, Outer, leaves, moved, outer_vars
from .registers import accumulates, small, tiles, unroll

__all__ = [
    "BlockIf", "BlockLoop", "Item", "Leaf", "Lockstep", "Node", "Outer", "Phase", "Plan",
    "accumulates", "counted_while", "exposed", "leaves", "moved", "outer_vars", "plan",
    "small", "tiles", "unroll",
]

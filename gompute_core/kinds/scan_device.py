"""The scan kind's device program: raw kernels the core generates per spec.

Written once, in the kernel language with ``g.builtins``, so every backend that
runs raw kernels runs a scan with no code of its own. Per level of the plan
(:func:`gompute_core.kinds.scan.levels`):

* ``<name>_scan_first`` (level 0) and ``<name>_scan_upper`` (the levels above):
  thread ``t`` folds chunk ``t`` (elements ``[t*chunk, min((t+1)*chunk, n))``)
  in order, in place, and writes the chunk's total to ``totals[t]``; level 0
  applies ``pre(x, p)`` and is inclusive or exclusive, the upper levels scan
  the totals inclusively;
* ``<name>_scan_fix``: thread ``t`` combines chunk ``t + 1``'s elements with
  the scanned total of the chunks before it, ``combine(totals[t], y)`` (host
  devices: one thread per chunk walks memory in order);
* ``<name>_scan_fix_each``: the same combine, one thread per element from the
  second chunk on (GPUs: neighbouring threads touch neighbouring elements).

The kernels take no barriers, shared memory or atomics; each thread works on a
contiguous chunk whose bounds come from the data size alone, so the result is
the same on every backend and for every thread count.

No ``from __future__ import annotations`` here: the raw kernels' annotations are
evaluated where they are defined (``g.GlobalPtr[T]`` of the spec's ``T``).
"""

import threading
from typing import Any

from ..abi.params import params
from ..raw import builtins as B
from ..raw.kernel import raw_kernel
from ..raw.types import GlobalPtr
from ..specs import _positional_arity
from ..types import u32, u64

_made: dict[Any, tuple[Any, Any, Any, Any]] = {}
_made_lock = threading.Lock()


@params
class NoParams:
    """The params record of a scan whose spec has none (never read)."""

    unused: u32


def stage_of(spec: Any) -> Any:
    """``x, p -> pre(x, p)`` (or ``x``) as a kernel function."""
    pre = spec.pre
    if pre is None:
        def stage(x: Any, p: Any) -> Any:
            return x
    elif _positional_arity(spec.name, "pre", pre) == 2:
        def stage(x: Any, p: Any) -> Any:
            return pre(x, p)  # without params, p is the unused NoParams record
    else:
        def stage(x: Any, p: Any) -> Any:
            return pre(x)
    return stage


def scan_kernels(spec: Any) -> tuple[Any, Any, Any, Any]:
    """The raw kernel definitions of scan ``spec`` (registered once per process under
    ``<name>_scan_first``, ``_scan_upper``, ``_scan_fix`` and ``_scan_fix_each``)."""
    with _made_lock:
        found = _made.get(spec)
        if found is None:
            found = _made[spec] = _define(spec)
        return found


def _define(spec: Any) -> tuple[Any, Any, Any, Any]:
    T, combine, P = spec.T, spec.combine, spec.params or NoParams
    identity = spec.T(spec.identity)
    stage = stage_of(spec)

    def first(data: GlobalPtr[T], n: u64, totals: GlobalPtr[T], chunk: u64,
              inclusive: u64, p: P) -> None:
        t = u64(B.global_id(0))
        lo = t * chunk
        if lo < n:
            hi = min(lo + chunk, n)
            if inclusive != 0:
                acc = stage(data[lo], p)
                data[lo] = acc
                for i in range(lo + 1, hi):
                    acc = combine(acc, stage(data[i], p))
                    data[i] = acc
                totals[t] = acc
            else:
                acc2 = T(identity)
                for i in range(lo, hi):
                    x = stage(data[i], p)
                    data[i] = acc2
                    acc2 = combine(acc2, x)
                totals[t] = acc2

    def upper(data: GlobalPtr[T], n: u64, totals: GlobalPtr[T], chunk: u64) -> None:
        t = u64(B.global_id(0))
        lo = t * chunk
        if lo < n:
            hi = min(lo + chunk, n)
            acc = data[lo]
            for i in range(lo + 1, hi):
                acc = combine(acc, data[i])
                data[i] = acc
            totals[t] = acc

    def fix(data: GlobalPtr[T], n: u64, totals: GlobalPtr[T], chunk: u64) -> None:
        t = u64(B.global_id(0))
        lo = (t + 1) * chunk
        if lo < n:
            hi = min(lo + chunk, n)
            carry = totals[t]
            for i in range(lo, hi):
                data[i] = combine(carry, data[i])

    def fix_each(data: GlobalPtr[T], n: u64, totals: GlobalPtr[T], chunk: u64) -> None:
        i = u64(B.global_id(0)) + chunk
        if i < n:
            data[i] = combine(totals[i // chunk - 1], data[i])

    name = spec.name
    return (raw_kernel(first, name=f"{name}_scan_first"),
            raw_kernel(upper, name=f"{name}_scan_upper"),
            raw_kernel(fix, name=f"{name}_scan_fix"),
            raw_kernel(fix_each, name=f"{name}_scan_fix_each"))

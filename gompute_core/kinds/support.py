"""Which kinds a backend runs: decided by the core from the backend's kernel features.

A backend declares **kernel features** (``BackendInfo.features``), not kind
names; each kind states what it needs (:attr:`~gompute_core.kinds.base.Kind.needs`)
and runs on every backend that has it. The features (:data:`FEATURES`):

* ``entries``: the backend renders the entry points of the seven spec kinds with
  rendered entries (map, map_to, zip, map_indexed, reduce, gather, scatter), with the core's
  C-family entries (``gompute_core.codegen``) or its own. That set is fixed: a
  kind added later never needs ``entries``;
* ``raw``: it compiles and launches raw kernels (``g.raw_kernel``);
* ``barriers``, ``shared_memory``, ``atomics``: its raw kernels may use
  ``g.builtins.barrier``, ``shared_array`` and the atomics (a kind whose device
  program the core generates as raw kernels names the ones it uses).

``BackendInfo.kinds`` (kind names) is still read, deprecated: every kind named
there runs; a backend that sets no ``features`` gets ``raw`` and the raw
kernel builtins (:data:`RAW_FEATURES`) when it names ``"raw"``, and nothing
else (so it keeps running exactly the kinds it names, plus kinds built on raw
kernels).
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidArgument
from ..ir.kernel import RAW
from .base import Kind, kinds

ENTRIES = "entries"
FEATURES = frozenset({ENTRIES, RAW, "barriers", "shared_memory", "atomics"})
"""Every kernel feature a backend may declare."""
RAW_FEATURES = frozenset({RAW, "barriers", "shared_memory", "atomics"})
"""What ``g.builtins`` gives every raw kernel: a backend naming the ``"raw"`` kind has it."""


def backend_features(info: Any) -> frozenset[str]:
    """The kernel features of the backend ``info`` (a ``BackendInfo``) describes."""
    declared = getattr(info, "features", None)
    if declared is None:  # deprecated: a backend that names kinds only
        return RAW_FEATURES if RAW in info.kinds else frozenset()
    features = frozenset(declared)
    unknown = features - FEATURES
    if unknown:
        raise InvalidArgument(f"backend {info.name!r} declares unknown kernel feature(s) "
                              f"{', '.join(sorted(unknown))} (known: "
                              f"{', '.join(sorted(FEATURES))})")
    return features


def runs(info: Any, kind: Kind) -> bool:
    """True when the backend ``info`` describes runs specs of ``kind``."""
    return kind.name in info.kinds or kind.needs <= backend_features(info)


def runs_raw(info: Any) -> bool:
    """True when the backend ``info`` describes runs raw kernels."""
    return RAW in info.kinds or RAW in backend_features(info)


def supported_kinds(info: Any) -> tuple[str, ...]:
    """The kinds (and ``"raw"``) the backend ``info`` describes runs, in registry order."""
    names = tuple(k.name for k in kinds() if runs(info, k))
    return (*names, RAW) if runs_raw(info) else names

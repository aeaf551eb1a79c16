"""Checked mode on the host: whether it is on, and the fault record read back as an error.

A raw kernel loaded with ``checked=True`` (or with ``GOMPUTE_CHECKED=1`` in the
environment) runs the IR that :func:`gompute_core.ir.checked.instrument` writes. Its
:class:`FaultRecord` is one small device buffer per loaded kernel, zeroed when it is
made; :meth:`FaultRecord.raise_if_set` reads it (at ``RawKernel.synchronize``), clears it
and raises :class:`~gompute_core.errors.OutOfBounds` or
:class:`~gompute_core.errors.DataRace` for the first fault since the last read.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import (
    BarrierDivergence,
    DataRace,
    GomputeWarning,
    InvalidArgument,
    OutOfBounds,
    Unsupported,
)
from ..ir.checked import BARRIER, BOUNDS, RACE, RACE_KINDS, RECORD_WORDS, Instrumented, Site
from ..ir.nodes import IRType, PointerType

CHECKED_ENV = "GOMPUTE_CHECKED"
"""``GOMPUTE_CHECKED=1`` turns checked mode on for every raw kernel of the process whose
``checked`` is not given."""


def checked_default() -> bool:
    """True when ``$GOMPUTE_CHECKED`` asks for checked mode (``1``); ``0`` or unset: off."""
    value = os.environ.get(CHECKED_ENV, "").strip()
    if value in ("", "0"):
        return False
    if value == "1":
        return True
    raise InvalidArgument(f"${CHECKED_ENV}={value!r}: expected 1 (checked) or 0 (unchecked)")


def want_checked(checked: Any) -> bool:
    """The ``checked=`` argument (None: the environment's answer) as a bool."""
    if checked is None:
        return checked_default()
    if not isinstance(checked, bool):
        raise InvalidArgument(f"checked must be True, False or None, got {checked!r}")
    return checked


def checked_unavailable(kernel: str, what: str, checked: Any,
                        hint: str = "load its @g.raw_kernel definition") -> None:
    """A kernel that cannot be instrumented (C source, a prebuilt artifact, a spec whose
    entry a backend renders): refused with ``checked=True``; with ``$GOMPUTE_CHECKED=1``
    it runs unchecked, with a warning. ``kernel`` names it (a raw kernel's name, or a
    description such as ``spec 'x'``), ``what`` says why, ``hint`` what to do instead."""
    label = f"raw kernel {kernel!r}" if kernel.isidentifier() else kernel
    if checked is True:
        raise Unsupported(f"{label}: checked mode instruments kernels written in Python; "
                          f"this one is {what} ({hint})")
    if checked is None and checked_default():
        warnings.warn(f"${CHECKED_ENV}=1: {label} is {what} and runs unchecked",
                      GomputeWarning, stacklevel=3)


def checked_slots(ins: Instrumented) -> tuple[tuple[str, IRType], ...]:
    """The checked entry's arguments (the user's, each pointer's extent, the record)."""
    return ins.kernel.functions[-1].args


def checked_arguments(kernel: Any, args: Sequence[Any], record: FaultRecord) -> list[Any]:
    """``args`` (a checked ``RawKernel``'s user arguments), each pointer's element count and
    the fault record: the entry's arguments. Pointers are converted (checked) here, once."""
    names = [n for n, _ in kernel.signature]
    if args.__class__ is not list and args.__class__ is not tuple and (
            isinstance(args, (str, bytes)) or not isinstance(args, Sequence)):
        raise InvalidArgument(f"{kernel.name}: args must be a list of the kernel's "
                              f"{len(names)} arguments, got {args!r}")
    if len(args) != len(names):
        raise InvalidArgument(f"{kernel.name}: takes {len(names)} arguments "
                              f"({', '.join(names)}), got {len(args)}")
    full = list(args)
    extents = []
    for k, (_, t) in enumerate(kernel.signature):
        if isinstance(t, PointerType):
            buf = full[k] = kernel._convert[k](args[k])
            extents.append(np.uint64(buf.nbytes // buf.dtype.itemsize))
    return [*full, *extents, record.buffer]


def _thread(flat: int, bx: int, by: int) -> tuple[int, int, int]:
    return (flat % bx, flat // bx % by, flat // (bx * by))


class FaultRecord:
    """The fault record of one checked kernel on one device (see the module docstring)."""

    def __init__(self, kernel: str, device: Any, sites: tuple[Site, ...]) -> None:
        self.kernel = kernel
        self.sites = sites
        self.buffer = device.alloc(RECORD_WORDS * 8)
        self.buffer.dtype = np.dtype(np.uint64)
        self.buffer.fill(0)
        self._host = np.zeros(RECORD_WORDS, np.uint64)

    def raise_if_set(self) -> None:
        """Read the record (the device is synchronized); if a fault is there, clear the
        record and raise it."""
        self.buffer.download(self._host)
        code = int(self._host[0])
        if code == 0:
            return
        words = [int(w) for w in self._host]
        self.buffer.fill(0)
        raise self.error(words)

    def error(self, w: list[int]) -> OutOfBounds | DataRace | BarrierDivergence:
        """The error a record's words describe."""
        kind, site = w[0] >> 32, self.sites[(w[0] & 0xFFFFFFFF) - 1]
        block, thread = (w[3], w[4], w[5]), (w[6], w[7], w[8])
        at = f"thread {thread} of block {block}"
        if kind == BOUNDS:
            index = w[1] - (1 << 64) if w[1] >= 1 << 63 else w[1]
            dims = "" if site.shape is None or len(site.shape) == 1 else \
                f" (dimension {w[9]} of {site.shape})"
            return OutOfBounds(
                f"{site.where}: raw kernel {self.kernel!r}: {site.access} of "
                f"{site.array!r} at index {index}{dims} is out of bounds (extent {w[2]}) in "
                f"{at}; the access was not performed (a read gives 0)",
                kernel=self.kernel, array=site.array, access=site.access, index=index,
                extent=w[2], dim=w[9], where=site.where, block=block, thread=thread)
        if kind == BARRIER:
            returned = self.sites[(w[9] >> 43) - 1] if w[9] else None
            who = _thread((w[9] & 0x7FF) - 1, w[10], w[11]) if returned else None
            left = "" if returned is None else \
                f"; thread {who} returned at {returned.where}"
            return BarrierDivergence(
                f"{site.where}: raw kernel {self.kernel!r}: barrier() reached by {w[1]} of "
                f"the {w[2]} threads of block {block}{left} (every thread of a block must "
                "reach each barrier)",
                kernel=self.kernel, where=site.where, block=block, arrived=w[1],
                threads=w[2], returned_thread=who,
                returned_where=None if returned is None else returned.where)
        assert kind == RACE, kind
        other = w[2]
        other_site = self.sites[(other >> 43) - 1]
        other_thread = _thread((other & 0x7FF) - 1, w[10], w[11])
        race = RACE_KINDS[w[9]]
        element: int | tuple[int, ...] = w[1]
        if site.shape is not None and len(site.shape) == 2:
            element = divmod(w[1], site.shape[1])
        return DataRace(
            f"{site.where}: raw kernel {self.kernel!r}: data race on shared array "
            f"{site.array!r} element {element} ({race}, between two barriers): {site.access} "
            f"by thread {thread} at {site.where}, {other_site.access} by thread "
            f"{other_thread} at {other_site.where}, in block {block}",
            kernel=self.kernel, array=site.array, element=element, kind=race, block=block,
            thread=thread, where=site.where, other_thread=other_thread,
            other_where=other_site.where)

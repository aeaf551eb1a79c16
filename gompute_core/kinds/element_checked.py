"""Checked mode for the kinds whose entry a backend renders: ``map``, ``map_indexed``,
``map_to`` and ``zip``.

Their entries are written by each backend, so the core cannot pass them a fault record.
Checked, such a spec runs instead as the equivalent elementwise program
(:func:`equivalent`: the same element function, params and block size, one contiguous
input per array the kind reads and one output per array it writes; ``map_indexed`` passes
the element's index as its kind does), whose variants the core writes as raw kernels and
instruments like any other (:mod:`.elementwise_program`). :class:`CheckedElements` keeps
the kind's own ``launch(arrays..., n, p)`` and ``run`` front ends: ``run`` validates the
arrays exactly as unchecked (the kind's ``run``), then hands them to
:meth:`CheckedElements.elementwise` instead of the :class:`~.run.Runner`.

The unchecked path is untouched: :meth:`~.base.CheckedByElementwise.open` returns None,
and the backend's entry runs as before.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

import numpy as np

from .base import launch_count
from .elementwise import ELEMENTWISE, ElementwiseSpec
from .elementwise_layout import Operand
from .elementwise_operands import host_operand
from .elementwise_program import ElementwiseProgram

if TYPE_CHECKING:
    from ..backend.device import Device, Stream
    from ..specs import Spec
    from .base import Kind
    from .foreign import DeviceArray


def equivalent(spec: Spec) -> ElementwiseSpec:
    """The elementwise spec computing what ``spec`` (a map kind) computes: inputs are the
    arrays its kind reads (``in``/``inout``), outputs those it writes (``out``/``inout``),
    named by the kind's ``run`` arguments. Not registered (``spec`` holds the name)."""
    kind = spec.kind_object
    types = dict(spec.value_types)
    names = kind.run_args[:len(kind.arrays)]
    ins = [(name, types[role]) for name, (role, way) in zip(names, kind.arrays, strict=True)
           if way != "out"]
    outs = tuple(types[role] for role, way in kind.arrays if way != "in")
    return ElementwiseSpec(
        name=spec.name, kind=ELEMENTWISE.name, block_size=spec.block_size,
        params=spec.params, fn=spec.fn, defined_at=spec.defined_at,
        defined_in=spec.defined_in, kind_object=ELEMENTWISE,
        ins=tuple(t for _, t in ins), scalars=(False,) * len(ins),
        names=tuple(n for n, _ in ins), outs=outs, single=True, indexed=kind.indexed)


class CheckedElements:
    """A map kind's spec on ``device``, checked: its equivalent elementwise program behind
    the kind's ``launch`` and ``run`` (module docstring)."""

    def __init__(self, device: Device, spec: Spec) -> None:
        self.device, self.spec = device, spec
        self.kind: Kind = spec.kind_object
        self.program = ElementwiseProgram(equivalent(spec), device, checked=True)
        self.artifact = self.program.artifact
        """The contiguous variant's artifact (``Kernel.artifact``)."""
        self.dtypes = {role: np.dtype(t) for role, t in spec.value_types}
        names = self.kind.run_args[:len(self.kind.arrays)]
        self._reads = [k for k, (_, way) in enumerate(self.kind.arrays) if way != "out"]
        self._writes = [k for k, (_, way) in enumerate(self.kind.arrays) if way != "in"]
        self._roles = [(name, np.dtype(getattr(spec, role)), way != "in")
                       for name, (role, way) in zip(names, self.kind.arrays, strict=True)]
        self._signature = inspect.Signature(
            [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD)
             for name in (*names, "n")]
            + [inspect.Parameter("p", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)])

    @property
    def stream(self) -> Stream:
        """The stream ``launch`` and ``run`` enqueue on (settable)."""
        return self.program.stream

    @stream.setter
    def stream(self, value: Stream) -> None:
        self.program.stream = value

    @property
    def runner(self) -> CheckedElements:
        """What ``Kernel.run``'s front end hands the validated arrays to: this program
        (:meth:`elementwise`), not a :class:`~.run.Runner`."""
        return self

    def launch(self, *args: Any, **kwargs: Any) -> None:
        """The kind's ``launch(arrays..., n, p=None)`` (``launch(buf, n, p)`` for a map):
        the first ``n`` elements of each buffer, enqueued without synchronizing; a fault
        raises at :meth:`synchronize`."""
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        *arrays, n, p = bound.args
        count = launch_count(n, "n")
        if count:
            self.program.launch(*(arrays[k] for k in self._reads),
                                out=arrays[self._writes[0]], n=count, p=p)

    def elementwise(self, arrays: tuple[np.ndarray | DeviceArray, ...], n: int,
                    p: Any) -> None:
        """Run on the arrays ``Kernel.run`` validated (the kind's arrays in order, each
        flat, of ``n`` elements), wait, and raise the first fault."""
        ops = [self._operand(a, k, n) for k, a in enumerate(arrays)]
        ins = [ops[k] for k in self._reads]
        self.program.execute(list(ins), ins, [ops[k] for k in self._writes], p)

    def _operand(self, a: np.ndarray | DeviceArray, k: int, n: int) -> Operand:
        name, dtype, writes = self._roles[k]
        if isinstance(a, np.ndarray):
            return host_operand(a, name, dtype, writes)
        return Operand(name, dtype, (n,), (1,), a.addr, False, stream=a.stream, keep=a.keep)

    def synchronize(self) -> None:
        """Wait for the device and raise the first fault since the last synchronization
        (``OutOfBounds`` naming the element function's array and line)."""
        self.program.synchronize()

    def close(self) -> None:
        """Nothing to free: the variants hold no scratch (``Kernel.close``)."""

    def __repr__(self) -> str:
        return f"<CheckedElements {self.spec.name!r} ({self.kind}) on {self.device!r}>"


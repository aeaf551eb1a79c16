"""``Kernel`` and ``AutoKernel``: one spec loaded on one backend's device.

``run`` is the convenience path (validate here, then the core's
:class:`~gompute_core.kinds.run.Runner`: the caller's arrays on host-memory
devices, a pipelined or staged upload/launch/download elsewhere).
``alloc``/``launch``/``context.synchronize`` is the
allocation-free path: ``launch`` *is* the program's bound ``launch`` (no
extra Python frame). See ``docs/handles.md`` for the decisions.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..errors import BackendUnavailable, GomputeWarning, InvalidArgument, Unsupported
from ..ir.kernel import KernelIR
from ..kinds.program import MAX_REDUCE_BLOCKS, refuse_closed
from ..kinds.run import Runner
from ..plugins import manager
from ..plugins.records import Artifact, BackendInfo, CompileRequest
from ..specs import Spec
from ..types import short_name
from . import checks
from .compile import find_prebuilt

_DEFAULT_ROLE = {
    "map": "T", "map_indexed": "T", "reduce": "T", "gather": "T", "scatter": "T",
    "map_to": "Out", "zip": "Out",
}


_RUN_ARGUMENTS = {
    "map": ("data", "p"), "map_indexed": ("data", "p"), "map_to": ("inp", "out", "p"),
    "zip": ("a", "b", "out", "p"), "reduce": ("data", "p"), "gather": ("src", "idx", "out"),
    "scatter": ("src", "idx", "out"),
}
"""``run``'s positional arguments per kind (``p`` may be omitted)."""


def _arity_error(kind: str, got: int) -> InvalidArgument | None:
    """The refusal of ``run`` called with ``got`` positional arguments, or None when a
    ``kind`` kernel takes that many."""
    names = _RUN_ARGUMENTS[kind]
    least = len(names) - (names[-1] == "p")
    if least <= got <= len(names):
        return None
    optional = " (p may be left out when the spec has no params)" if least < len(names) else ""
    return InvalidArgument(f"run: a {kind} kernel takes ({', '.join(names)}){optional}, got "
                           f"{got} argument{'s' * (got != 1)}")


def capability_gap(info: BackendInfo, spec: Spec) -> str:
    """Why ``info``'s backend cannot run ``spec`` (kind or value type), or ``""``."""
    if spec.kind not in info.kinds:
        return f"backend {info.name!r} does not support {spec.kind} kernels"
    for role, t in spec.value_types:
        if short_name(t) in info.unsupported_types:
            return f"backend {info.name!r} does not support {short_name(t)} ({role})"
    return ""


class Kernel:
    """``spec`` compiled and loaded on ``backend``'s device ``device``.

    Use as a context manager or call :meth:`close` (idempotent). With
    ``artifact_dir`` (or ``$GOMPUTE_ARTIFACT_DIR``) a prebuilt artifact from
    ``gompute build`` is used instead of compiling.
    """

    spec: Spec
    backend: str
    ordinal: int
    kernel_ir: KernelIR
    artifact: Artifact
    launch: Any

    def __init__(self, spec: Spec, backend: str, device: int = 0, *,
                 artifact_dir: str | None = None) -> None:
        if not isinstance(spec, Spec):
            raise InvalidArgument(f"spec: expected a Spec (g.map, g.sum, ...), got {spec!r}")
        if not isinstance(backend, str):
            raise InvalidArgument(f"backend: expected a backend name, got {backend!r}")
        self._open(spec, backend, device, artifact_dir)

    def _open(self, spec: Spec, backend: str, ordinal: int, artifact_dir: str | None) -> None:
        """Lower, compile (or find prebuilt), load; set every attribute of the handle."""
        self._closed_flag = True
        info = manager.require(backend).info
        gap = capability_gap(info, spec)
        if gap:
            raise Unsupported(f"{spec.name}: {gap}")
        kir = spec.lower()
        device = manager.open_device(backend, ordinal)
        device.check_arguments(kir)  # before compiling: the driver would refuse the launch
        artifact = find_prebuilt(kir, backend, device.arch, artifact_dir)
        if artifact is None:
            artifact = manager.compile_artifact(
                CompileRequest(backend=backend, kernel=kir, arch=device.arch))
        program = device.program(artifact, kir)
        self.spec, self.backend, self.ordinal = spec, backend, ordinal
        self.kernel_ir, self.artifact = kir, artifact
        self.device = device
        self.program = program
        self.launch = program.launch
        self._runner = Runner(program, spec)
        self._P = spec.params
        self._types = {role: np.dtype(t) for role, t in spec.value_types}
        self._run = getattr(self, f"_run_{spec.kind}")
        self._at = (device, program.stream)
        """What ``checks.array`` needs to take foreign arrays: the device and run's stream."""
        self._closed_flag = False

    # ----------------------------------------------------------------- public surface
    @property
    def context(self) -> Any:
        """The device (``k.context.synchronize()`` waits for all launched work)."""
        return self.device

    @property
    def block_size(self) -> int:
        """Threads per block (the spec's ``block_size``)."""
        return self.spec.block_size

    @property
    def stream(self) -> Any:
        """The stream ``launch`` enqueues on (settable when the backend allows it)."""
        return self.program.stream

    @stream.setter
    def stream(self, value: Any) -> None:
        self.program.stream = value
        self._at = (self.device, self.program.stream)

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed_flag

    def reduce_blocks(self, count: int) -> int:
        """Partials a reduce launch over ``count`` elements writes.

        ``min(ceil(count / block_size), 1024)`` (0 for 0).
        """
        n = checks.count(count)
        return min(-(-n // self.spec.block_size), MAX_REDUCE_BLOCKS)

    def fold(self, partials: np.ndarray) -> np.generic:
        """Fold downloaded reduce partials into the result (see :meth:`Spec.fold`)."""
        return self.spec.fold(partials)

    def alloc(self, count: int, role: str | None = None) -> Any:
        """A device buffer of ``count`` ELEMENTS of the value type playing ``role``.

        ``role`` defaults to ``T``, or ``Out`` for map_to and zip; pass ``"In"``,
        ``"A"``, ``"B"`` or ``"Idx"`` for the other arrays. The buffer is the
        backend's (``upload``/``download`` in BYTES, ``free()``).
        """
        self._check_open()
        n = checks.count(count)
        role = role or _DEFAULT_ROLE[self.spec.kind]
        dtype = self._types.get(role)
        if dtype is None:
            raise InvalidArgument(f"role: a {self.spec.kind} kernel has no value type {role!r} "
                                  f"(roles: {', '.join(self._types)})")
        buf = self.device.alloc(n * dtype.itemsize)
        buf.dtype = dtype  # how other libraries see it (interop)
        return buf

    def run(self, *args: Any) -> Any:
        """Validate, then run; returns the output array or the reduce result.

        map/map_indexed ``(data, p)`` -> ``data``; map_to ``(inp, out, p)`` ->
        ``out``; zip ``(a, b, out, p)`` -> ``out``; reduce ``(data, p)`` -> a
        ``T`` scalar (the identity for empty input); gather/scatter
        ``(src, idx, out)`` -> ``out``. ``p`` may be omitted when P is None.
        Arrays are NumPy arrays, or any array on the host or on this kernel's
        device exposing ``__cuda_array_interface__``, ``__dlpack__`` or
        ``__array_interface__`` (CuPy, torch, numba, JAX): device arrays are
        used in place, stream-ordered with their producer (``docs/interop.md``).
        """
        try:
            return self._run(*args)
        except TypeError:
            wrong = _arity_error(self.spec.kind, len(args))
            if wrong is None:
                raise  # the call had the right shape: an error inside
            raise wrong from None

    def close(self) -> None:
        """Free the buffers ``run`` keeps; later calls raise ``InvalidArgument`` (idempotent)."""
        if self._closed_flag:
            return
        self._closed_flag = True
        self.launch = refuse_closed
        self._run = refuse_closed
        self.program.close()
        self._runner.close()

    def __enter__(self) -> Kernel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed_flag else f"device {self.ordinal}"
        return f"<{type(self).__name__} {self.spec.name!r} on {self.backend} ({state})>"

    def _check_open(self) -> None:
        if self._closed_flag:
            refuse_closed()

    # ----------------------------------------------------------------- per-kind runners
    def _run_map(self, data: Any, p: Any = None) -> Any:
        d = checks.array(data, "data", self._types["T"], True, self._at)
        checks.params(p, self._P, self.spec.name)
        if d.size:
            self._runner.elementwise((d,), d.size, p)
        return data

    _run_map_indexed = _run_map

    def _run_map_to(self, inp: Any, out: Any, p: Any = None) -> Any:
        i = checks.array(inp, "inp", self._types["In"], False, self._at)
        o = checks.array(out, "out", self._types["Out"], True, self._at)
        checks.same_shape(inp, "inp", out, "out")
        checks.no_partial_overlap(i, "inp", o, "out")
        checks.params(p, self._P, self.spec.name)
        if i.size:
            self._runner.elementwise((i, o), i.size, p)
        return out

    def _run_zip(self, a: Any, b: Any, out: Any, p: Any = None) -> Any:
        x = checks.array(a, "a", self._types["A"], False, self._at)
        y = checks.array(b, "b", self._types["B"], False, self._at)
        o = checks.array(out, "out", self._types["Out"], True, self._at)
        checks.same_shape(a, "a", b, "b")
        checks.same_shape(a, "a", out, "out")
        checks.no_partial_overlap(x, "a", o, "out")
        checks.no_partial_overlap(y, "b", o, "out")
        checks.params(p, self._P, self.spec.name)
        if x.size:
            self._runner.elementwise((x, y, o), x.size, p)
        return out

    def _run_reduce(self, data: Any, p: Any = None) -> Any:
        d = checks.array(data, "data", self._types["T"], False, self._at)
        checks.params(p, self._P, self.spec.name)
        if d.size == 0:
            return self.spec.T(self.spec.identity)
        return self._runner.reduce(d, p)

    def _gather_scatter(self, src: Any, idx: Any, out: Any) -> tuple[np.ndarray, ...]:
        s = checks.array(src, "src", self._types["T"], False, self._at)
        i = checks.array(idx, "idx", self._types["Idx"], False, self._at)
        o = checks.array(out, "out", self._types["T"], True, self._at)
        checks.disjoint(s, "src", o, "out")
        checks.disjoint(i, "idx", o, "out")
        return s, i, o

    def _run_gather(self, src: Any, idx: Any, out: Any) -> Any:
        s, i, o = self._gather_scatter(src, idx, out)
        checks.same_shape(idx, "idx", out, "out")
        if i.size:
            self._runner.move(s, i, o, i.size, s.size)
        return out

    def _run_scatter(self, src: Any, idx: Any, out: Any) -> Any:
        s, i, o = self._gather_scatter(src, idx, out)
        checks.same_shape(src, "src", idx, "idx")
        if s.size and o.size:
            self._runner.move(s, i, o, s.size, o.size)
        return out


class AutoKernel(Kernel):
    """A ``Kernel`` on the best backend that can run ``spec``.

    Backends are tried in priority order (CUDA, HIP, then CPU; or the order
    of ``GOMPUTE_BACKENDS``). One that is unavailable (no driver, no device)
    or cannot run the kind/types is skipped silently. One that is available
    but fails to compile or load the kernel — or a plugin that failed to
    import — is skipped with a ``GomputeWarning`` naming the cause;
    ``AutoKernel.strict(spec)`` raises instead.
    """

    def __init__(self, spec: Spec, *, strict: bool = False,
                 artifact_dir: str | None = None) -> None:
        if not isinstance(spec, Spec):
            raise InvalidArgument(f"spec: expected a Spec (g.map, g.sum, ...), got {spec!r}")
        spec.lower()  # kernel-language errors are the user's, whatever the backend
        self.strict_mode = strict
        tried: list[str] = []
        env = manager.env_order()
        for rec in manager.backends():
            if not rec.loaded and (env is None or rec.name in env):
                self._skip_broken(spec, f"plugin {rec.name!r} is installed but unusable: "
                                        f"{rec.error}", tried)
        for name in manager.ordered_backends():
            avail = manager.probe(name)
            if not avail.available:
                tried.append(f"{name}: {avail.reason}")
                continue
            gap = capability_gap(manager.record(name).info, spec)
            if gap:
                tried.append(f"{name}: {gap}")
                continue
            try:
                self._open(spec, name, 0, artifact_dir)
            except Exception as exc:
                self._skip_broken(spec, f"backend {name!r} is available but could not "
                                        f"compile or load {spec.name!r}: "
                                        f"{type(exc).__name__}: {exc}", tried, exc)
                continue
            return
        detail = "; ".join(tried) if tried else \
            "no backends installed (pip install gompute-cpu adds the CPU backend)"
        raise BackendUnavailable(f"AutoKernel({spec.name!r}): no backend can run it: {detail}")

    def _skip_broken(self, spec: Spec, message: str, tried: list[str],
                     cause: BaseException | None = None) -> None:
        if self.strict_mode:
            raise BackendUnavailable(f"AutoKernel.strict({spec.name!r}): {message}") from cause
        warnings.warn(f"AutoKernel({spec.name!r}): {message}; trying the next backend",
                      GomputeWarning, stacklevel=3)
        tried.append(message)

    @classmethod
    def strict(cls, spec: Spec, *, artifact_dir: str | None = None) -> AutoKernel:
        """Like ``AutoKernel(spec)``, but a backend that is available and fails raises."""
        return cls(spec, strict=True, artifact_dir=artifact_dir)

    def selected(self) -> str:
        """The name of the backend in use."""
        return self.backend

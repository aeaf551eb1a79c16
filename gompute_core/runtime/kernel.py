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
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..compilation import compile_artifact
from ..errors import BackendUnavailable, GomputeWarning, InvalidArgument, Unsupported
from ..ir.kernel import KernelIR
from ..kinds.program import refuse_closed
from ..kinds.reduce import MAX_REDUCE_BLOCKS
from ..kinds.run import Runner
from ..kinds.support import runs
from ..plugins import manager
from ..plugins.records import Artifact, BackendInfo, CompileRequest
from ..raw.checked import checked_unavailable, want_checked
from ..specs import Spec
from ..types import short_name
from . import checks
from .compile import compile_options, contracted, find_prebuilt


def spec_checked(spec: Spec, checked: Any) -> bool:
    """Whether ``spec`` runs checked: ``checked`` (None: ``$GOMPUTE_CHECKED``) where its
    kind is :attr:`~gompute_core.kinds.base.Kind.checkable`; ``checked=True`` on another
    kind is ``Unsupported``, the environment's request runs it unchecked with a warning."""
    want = want_checked(checked)
    if not want or spec.kind_object.checkable:
        return want
    why = f"a {spec.kind} spec, whose entry each backend renders (the elementwise, map, " \
        "map_indexed, map_to, zip, scan and reduce kinds run checked as raw kernels the " \
        "core writes; this kind has no such form, and calls no function of yours)"
    checked_unavailable(f"spec {spec.name!r}", why, checked,
                        "write it as a raw kernel to have its accesses checked")
    return False


def capability_gap(info: BackendInfo, spec: Spec) -> str:
    """Why ``info``'s backend cannot run ``spec`` (kind or value type), or ``""``."""
    if not runs(info, spec.kind_object):
        return f"backend {info.name!r} does not support {spec.kind} kernels"
    for role, t in spec.value_types:
        if short_name(t) in info.unsupported_types:
            return f"backend {info.name!r} does not support {short_name(t)} ({role})"
    return ""


class Kernel:
    """``spec`` compiled and loaded on ``backend``'s device ``device``.

    Use as a context manager or call :meth:`close` (idempotent). With
    ``artifact_dir`` (or ``$GOMPUTE_ARTIFACT_DIR``) a prebuilt artifact from
    ``gompute build`` is used instead of compiling. ``options`` are extra compiler
    options (NVRTC's, hiprtc's, ...; the CPU backend takes none); ``contract=True``
    lets the compiler fuse ``a * b + c`` into one fused multiply-add, so results may
    differ between backends and from the oracle (off by default: the same bits
    everywhere). Both are part of the compile cache's key. ``checked=True`` (default:
    ``$GOMPUTE_CHECKED``) runs the spec in checked mode, where its kind allows it
    (``Kind.checkable``): every access of the element function and its helpers to a
    params array or a local array is checked, and ``run`` (or :meth:`synchronize` after
    ``launch``) raises ``OutOfBounds`` for the first one out of range
    (``docs/raw-kernels.md``).
    """

    spec: Spec
    backend: str
    ordinal: int
    kernel_ir: KernelIR
    artifact: Artifact
    launch: Any
    checks = checks
    """The argument checks the kinds' ``run`` front ends use (``runtime.checks``)."""

    def __init__(self, spec: Spec, backend: str, device: int = 0, *,
                 artifact_dir: str | None = None, options: Sequence[str] = (),
                 contract: bool = False, checked: bool | None = None) -> None:
        if not isinstance(spec, Spec):
            raise InvalidArgument(f"spec: expected a Spec (g.map, g.sum, ...), got {spec!r}")
        if not isinstance(backend, str):
            raise InvalidArgument(f"backend: expected a backend name, got {backend!r}")
        self._open(spec, backend, device, artifact_dir,
                   compile_options(options, f"Kernel({spec.name!r})"), contract,
                   spec_checked(spec, checked))

    def _open(self, spec: Spec, backend: str, ordinal: int, artifact_dir: str | None,
              options: tuple[str, ...] = (), contract: bool = False,
              checked: bool = False) -> None:
        """Lower, compile (or find prebuilt), load; set every attribute of the handle."""
        self._closed_flag = True
        info = manager.require(backend).info
        gap = capability_gap(info, spec)
        if gap:
            raise Unsupported(f"{spec.name}: {gap}")
        if (options or contract) and "entries" not in spec.kind_object.needs:
            raise Unsupported(f"Kernel({spec.name!r}): options= and contract= do not reach the "
                              f"raw kernels a {spec.kind} spec generates yet (they would be "
                              "silently ignored)")
        kir = contracted(spec.lower(), contract, f"Kernel({spec.name!r})")
        device = manager.open_device(backend, ordinal)
        device.check_kernel(kir)  # before compiling: block size and argument bytes
        # a kind with its own device program
        program = spec.kind_object.open(device, spec, checked) if checked else \
            spec.kind_object.open(device, spec)
        if program is None:
            artifact = find_prebuilt(kir, backend, device.arch, artifact_dir, options)
            if artifact is None:
                artifact = compile_artifact(CompileRequest(
                    backend=backend, kernel=kir, arch=device.arch, options=options))
            program = device.program(artifact, kir)
        else:
            artifact = program.artifact
        self.spec, self.backend, self.ordinal = spec, backend, ordinal
        self.kernel_ir, self.artifact = kir, artifact
        self.checked = checked
        """Whether the spec runs in checked mode."""
        self.device = device
        self.program = program
        self.launch = program.launch
        runner = getattr(program, "runner", None)  # a checked map kind runs its arrays itself
        self._runner = Runner(program, spec) if runner is None else runner
        self._P = spec.params
        self._types = {role: np.dtype(t) for role, t in spec.value_types}
        self._run = spec.kind_object.run(self)
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

    def synchronize(self) -> None:
        """Wait for all work on the device; in checked mode, raise the first fault of the
        kernel since the last synchronization (``OutOfBounds``)."""
        sync = getattr(self.program, "synchronize", None) if self.checked else None
        if sync is None:
            self.device.synchronize()
        else:
            sync()

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
        role = role or self.spec.kind_object.default_role
        dtype = self._types.get(role)
        if dtype is None:
            raise InvalidArgument(f"role: a {self.spec.kind} kernel has no value type {role!r} "
                                  f"(roles: {', '.join(self._types)})")
        buf = self.device.alloc(n * dtype.itemsize)
        buf.dtype = dtype  # how other libraries see it (interop)
        return buf

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """Validate, then run; returns the output array or the reduce result.

        map/map_indexed ``(data, p)`` -> ``data``; map_to ``(inp, out, p)`` ->
        ``out``; zip ``(a, b, out, p)`` -> ``out``; reduce ``(data, p)`` -> a
        ``T`` scalar (the identity for empty input); gather/scatter
        ``(src, idx, out)`` -> ``out``. ``p`` may be omitted when P is None.
        Arrays are NumPy arrays, or any array on the host or on this kernel's
        device exposing ``__cuda_array_interface__``, ``__dlpack__`` or
        ``__array_interface__`` (CuPy, torch, numba, JAX): device arrays are
        used in place, stream-ordered with their producer (``docs/interop.md``).
        elementwise ``(*ins, out=None, p=None)`` -> the output, or a tuple of them
        (``docs/elementwise.md``).
        """
        try:
            return self._run(*args, **kwargs)
        except TypeError:
            wrong = self.spec.kind_object.arity_error(len(args))
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
        self._runner.close()
        close = getattr(self.program, "close", None)
        if close is not None:  # a kind's own program (scan) keeps scratch buffers
            close()

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


class AutoKernel(Kernel):
    """A ``Kernel`` on the best backend that can run ``spec``.

    Backends are tried in priority order (CUDA, HIP, then CPU; or the order
    of ``GOMPUTE_BACKENDS``). One that is unavailable (no driver, no device)
    or cannot run the kind/types is skipped silently. One that is available
    but fails to compile or load the kernel — or a plugin that failed to
    import — is skipped with a ``GomputeWarning`` naming the cause;
    ``AutoKernel.strict(spec)`` raises instead. ``contract`` and ``checked`` as for
    :class:`Kernel`.
    """

    def __init__(self, spec: Spec, *, strict: bool = False,
                 artifact_dir: str | None = None, contract: bool = False,
                 checked: bool | None = None) -> None:
        if not isinstance(spec, Spec):
            raise InvalidArgument(f"spec: expected a Spec (g.map, g.sum, ...), got {spec!r}")
        # kernel-language errors (and a bad contract) are the user's, whatever the backend
        contracted(spec.lower(), contract, f"AutoKernel({spec.name!r})")
        check = spec_checked(spec, checked)
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
                self._open(spec, name, 0, artifact_dir, (), contract, check)
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
    def strict(cls, spec: Spec, *, artifact_dir: str | None = None,
               contract: bool = False, checked: bool | None = None) -> AutoKernel:
        """Like ``AutoKernel(spec)``, but a backend that is available and fails raises."""
        return cls(spec, strict=True, artifact_dir=artifact_dir, contract=contract,
                   checked=checked)

    def selected(self) -> str:
        """The name of the backend in use."""
        return self.backend

"""``g.runtime``: the device layer under the map API (``Compute``, ``shutdown``).

``Compute`` wraps one backend's :class:`~gompute_core.backend.Device`
for work the spec kinds do not express: raw allocations and their
transfers, loading modules, pinned host arrays, streams, events and graph
capture, the same calls on every backend (``docs/runtime.md``).
Capabilities a backend's device lacks raise ``Unsupported`` naming them.
"""

from __future__ import annotations

from typing import Any

from ..errors import BackendUnavailable, InvalidArgument, Unsupported
from ..plugins import manager
from .dim3 import Dim3

__all__ = ["Compute", "Dim3", "shutdown"]


class Compute:
    """A device of the first available backend: CUDA, then HIP, then the CPU.

    The order is ``BackendInfo.priority`` (or ``GOMPUTE_BACKENDS``);
    ``preferred`` names one backend, which must then be available.
    """

    def __init__(self, preferred: str | None = None, device: int = 0) -> None:
        if preferred is not None:
            if not isinstance(preferred, str):
                raise InvalidArgument(f"preferred: expected a backend name, got {preferred!r}")
            self.device = manager.open_device(preferred, device)
            self.backend = preferred
            return
        reasons = []
        for name in manager.ordered_backends():
            avail = manager.probe(name)
            if avail.available:
                self.device = manager.open_device(name, device)
                self.backend = name
                return
            reasons.append(f"{name}: {avail.reason}")
        detail = "; ".join(reasons) or \
            "no backends installed (pip install gompute-cpu adds the CPU backend)"
        raise BackendUnavailable(f"Compute: no backend is available: {detail}")

    def _device_method(self, name: str) -> Any:
        method = getattr(self.device, name, None)
        if method is None:
            raise Unsupported(f"backend {self.backend!r} devices do not provide {name}()")
        return method

    def alloc(self, nbytes: int) -> Any:
        """Allocate ``nbytes`` BYTES of device memory (the backend's Buffer)."""
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
            raise InvalidArgument(f"nbytes: expected a non-negative int, got {nbytes!r}")
        return self.device.alloc(nbytes)

    def load_module(self, image: bytes) -> Any:
        """Load a compiled image (cached per device and image by the backend)."""
        load = self._device_method("load_module")
        if not isinstance(image, (bytes, bytearray, memoryview)):
            raise InvalidArgument(f"image: expected bytes, got {type(image).__name__}")
        return load(bytes(image))

    def create_stream(self) -> Any:
        """A new stream on this device (capability ``"streams"``): ``synchronize``,
        ``query``, ``wait_event``, and ``begin_capture``/``end_capture`` where the device
        declares ``"graphs"``."""
        return self._device_method("create_stream")()

    def create_event(self, timing: bool = True) -> Any:
        """A new event (capability ``"events"``): ``record(stream=None)``,
        ``synchronize``, ``query``, ``elapsed_us(start)`` (needs ``timing``)."""
        if not isinstance(timing, bool):
            raise InvalidArgument(f"timing: expected a bool, got {timing!r}")
        return self._device_method("create_event")(timing)

    def pinned(self, shape: Any, dtype: Any = "uint8") -> Any:
        """An uninitialized, C-contiguous host array of ``shape`` (an int or a tuple of
        them) and ``dtype`` for fast transfers: page-locked where the device declares
        ``"pinned_memory"``, an ordinary NumPy array elsewhere."""
        import numpy as np

        dims = (shape,) if isinstance(shape, (int, np.integer)) else shape
        if not isinstance(dims, tuple) or any(
                isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0
                for d in dims):
            raise InvalidArgument(f"shape: expected a non-negative int or a tuple of them, "
                                  f"got {shape!r}")
        try:
            dt = np.dtype(dtype)
        except TypeError as exc:
            raise InvalidArgument(f"dtype: not a NumPy dtype: {dtype!r}") from exc
        if dt.hasobject:
            raise InvalidArgument(f"dtype: host memory for transfers cannot hold Python "
                                  f"objects ({dt})")
        return self.device.pinned(tuple(int(d) for d in dims), dt)

    @property
    def stream(self) -> Any:
        """The device's default stream."""
        return self.device.stream

    @property
    def capabilities(self) -> frozenset[str]:
        """What the device declares (a subset of ``gompute_core.backend.CAPABILITIES``)."""
        return frozenset(self.device.capabilities)

    def has(self, capability: str) -> bool:
        """True when the device declares ``capability`` (``InvalidArgument`` for a name
        no device can declare)."""
        from ..backend.device import CAPABILITIES  # not at import: the SDK imports us

        if capability not in CAPABILITIES:
            raise InvalidArgument(f"capability: one of {sorted(CAPABILITIES)}, got "
                                  f"{capability!r}")
        return self.device.has(capability)

    def synchronize(self) -> None:
        """Wait for all work on the device; device faults raise ``SyncFailed``."""
        self.device.synchronize()

    @property
    def arch(self) -> str:
        """The device's architecture (``sm_90``, ``gfx90a``, the CPU's name)."""
        return self.device.arch

    def __repr__(self) -> str:
        return f"<Compute {self.backend} device {self.device.ordinal} ({self.arch})>"


def shutdown() -> None:
    """Close every cached device of every backend (later use opens them again)."""
    manager.close_devices()

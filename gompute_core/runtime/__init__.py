"""``g.runtime``: the device layer under the map API (``Compute``, ``shutdown``).

``Compute`` wraps one backend's :class:`~gompute_core.backend.Device`
for work the spec kinds do not express: raw allocations, loading modules,
streams. Capabilities a backend's device lacks raise ``Unsupported``.
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
        return self._device_method("load_module")(image)

    def create_stream(self) -> Any:
        """A new stream on this device."""
        return self._device_method("create_stream")()

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

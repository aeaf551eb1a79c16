"""``AddressMap``: a device's live buffers by address, for drivers whose buffers are handles.

The core packs every pointer argument as a 64-bit address (``Buffer.addr``, plus an
offset where ``Kernel.run`` pipelines chunks or a raw kernel is passed an interior
pointer). A driver whose buffers are handles with no address a host can compute with
(OpenCL's ``cl_mem``, a Vulkan or Metal buffer) hands out *synthetic* addresses instead
(:meth:`AddressMap.reserve`) and, in its launcher, turns a packed address back into its
buffer and the offset into it (:meth:`AddressMap.find`). The OpenCL example backend is
built this way.
"""

from __future__ import annotations

import bisect
import threading
from typing import TYPE_CHECKING

from ..errors import LaunchFailed

if TYPE_CHECKING:
    from .buffer import Buffer


class AddressMap:
    """The live buffers of one device, sorted by address (thread-safe).

    :meth:`reserve` gives synthetic addresses from :attr:`BASE` (never 0, so a null
    pointer stays invalid), each :attr:`ALIGN`-aligned and followed by a gap of at least
    :attr:`ALIGN` bytes, so that an address one past a buffer's end never lands in the
    next buffer. A buffer of zero bytes holds one address.
    """

    BASE = 1 << 44
    ALIGN = 1 << 12

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self._lock = threading.Lock()
        self._starts: list[int] = []
        self._buffers: list[Buffer] = []
        self._next = self.BASE

    def reserve(self, nbytes: int) -> int:
        """A new synthetic address for a buffer of ``nbytes`` bytes."""
        with self._lock:
            addr = self._next
            self._next += -(-max(nbytes, 1) // self.ALIGN) * self.ALIGN + self.ALIGN
        return addr

    def add(self, buf: Buffer) -> None:
        """Map ``buf`` (at ``buf.addr``, ``buf.nbytes`` long) until :meth:`remove`."""
        with self._lock:
            i = bisect.bisect_left(self._starts, buf.addr)
            self._starts.insert(i, buf.addr)
            self._buffers.insert(i, buf)

    def remove(self, buf: Buffer) -> None:
        """Forget ``buf`` (a released buffer); nothing happens for one never added."""
        with self._lock:
            i = bisect.bisect_left(self._starts, buf.addr)
            while i < len(self._starts) and self._starts[i] == buf.addr:
                if self._buffers[i] is buf:
                    del self._starts[i], self._buffers[i]
                    return
                i += 1

    def find(self, addr: int) -> tuple[Buffer, int]:
        """The live buffer holding ``addr`` and the offset of ``addr`` in it;
        ``LaunchFailed`` naming the address when none does."""
        with self._lock:
            i = bisect.bisect_right(self._starts, addr) - 1
            buf = self._buffers[i] if i >= 0 else None
        if buf is None or not addr < buf.addr + max(buf.nbytes, 1):
            raise LaunchFailed(f"{self.backend}: no live buffer at address {addr:#x}")
        return buf, addr - buf.addr

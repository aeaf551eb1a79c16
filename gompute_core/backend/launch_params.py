"""The params argument of a backend's ``launch``: checked once per class, packed, cached.

Every backend's program turns the ``p`` of a launch into the bytes of the
kernel's params struct (or values derived from them: the CPU's leaves). This
module is that step, shared: :class:`ParamsCache` checks that ``p`` fits the
kernel (a params object of the kernel's layout, or None for a kernel without
params; the result per class is remembered), packs it and caches the result
by identity, so a loop launching with one params object packs it once.

Only plain ``@g.params`` objects are cached by identity: they are frozen
dataclasses, so the same object always packs to the same bytes. A custom
boundary object is the user's class (possibly mutable, and its ``to_gpu``
may read anything), so it is packed on every launch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..abi import is_params_class, layout_of, pack
from ..abi.codecs import info_of
from ..errors import InvalidArgument
from ..ir.kernel import KernelIR

_UNSET = object()
"""Identity no params object has: the cache's initial key."""


def _params_base(cls: type) -> type | None:
    """The ``@g.params`` class ``cls`` packs as (itself or a base; None if none)."""
    for c in cls.__mro__:
        if is_params_class(c):
            return c
    return None


class ParamsCache:
    """``convert(pack(p))`` for the params ``p`` of ``kernel``'s launches.

    ``get(p)`` raises ``InvalidArgument`` naming the kernel when ``p`` does not
    fit it; for a kernel without params it returns ``convert(b"")`` for
    ``p is None``. Thread-safe: the cached pair is replaced as one reference,
    and the per-class verdicts are idempotent.
    """

    def __init__(self, kernel: KernelIR, convert: Callable[[bytes], Any] = bytes) -> None:
        self.kernel_name = kernel.name
        struct = kernel.params
        self.layout = struct.layout if struct is not None else None  # type: ignore[attr-defined]
        self.convert = convert
        self._cacheable: dict[type, bool] = {}
        self._last: tuple[Any, Any] = (_UNSET, None)

    def holds(self, p: Any) -> bool:
        """True when ``p`` is the object whose result is cached (it will not be re-packed)."""
        return p is self._last[0]

    def get(self, p: Any) -> Any:
        """``convert`` of ``p``'s packed bytes (cached by identity for plain params)."""
        last = self._last
        if p is last[0]:
            return last[1]
        cls = type(p)
        cacheable = self._cacheable.get(cls)
        if cacheable is None:
            cacheable = self._admit(cls, p)
        value = self.convert(pack(p) if self.layout is not None else b"")
        if cacheable:
            self._last = (p, value)
        return value

    def _admit(self, cls: type, p: Any) -> bool:
        """Check that objects of ``cls`` fit the kernel; True when they may be cached."""
        if self.layout is None:
            if p is not None:
                raise InvalidArgument(f"p: kernel {self.kernel_name!r} takes no params, "
                                      f"got {cls.__name__}")
            cacheable = True
        else:
            base = _params_base(cls)
            if base is None or layout_of(base) != self.layout:
                raise InvalidArgument(f"p: kernel {self.kernel_name!r} expects params of layout "
                                      f"{self.layout.name}, got {cls.__name__}")
            cacheable = info_of(base).gpu is None
        self._cacheable[cls] = cacheable
        return cacheable

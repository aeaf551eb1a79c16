"""Checks every backend's buffer transfers make before touching a driver.

A transfer past either end is an ``InvalidArgument`` naming the operation,
raised before any copy starts, so the user's data is untouched.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgument


def byte_count(value: Any, what: str, name: str) -> int:
    """``value`` as a non-negative byte count (``InvalidArgument`` naming ``name``)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise InvalidArgument(f"{what}: {name} must be a non-negative int, got {value!r}")
    return int(value)


def host_span(host: Any, nbytes: int | None, what: str,
              writable: bool = False) -> tuple[np.ndarray, int]:
    """A flat ``uint8`` view of the C-contiguous host array ``host`` and the bytes to move
    (``nbytes``, default all of it); ``writable`` for the destination of a download."""
    if not isinstance(host, np.ndarray):
        raise InvalidArgument(f"{what}: expected a NumPy array, got {type(host).__name__}")
    if not host.flags.c_contiguous:
        raise InvalidArgument(f"{what}: the host array must be C-contiguous")
    if writable and not host.flags.writeable:
        raise InvalidArgument(f"{what}: the host array is read-only")
    n = host.nbytes if nbytes is None else byte_count(nbytes, what, "nbytes")
    if n > host.nbytes:
        raise InvalidArgument(f"{what}: nbytes={n} exceeds the host array's {host.nbytes} bytes")
    return host.reshape(-1).view(np.uint8), n


def device_span(offset: Any, n: int, size: int, what: str) -> int:
    """``offset`` after checking that bytes ``[offset, offset + n)`` lie in a buffer of
    ``size`` bytes."""
    offset = byte_count(offset, what, "offset")
    if offset + n > size:
        raise InvalidArgument(f"{what}: offset={offset}, nbytes={n}: bytes [{offset}, "
                              f"{offset + n}) are past the end of a {size}-byte buffer")
    return offset

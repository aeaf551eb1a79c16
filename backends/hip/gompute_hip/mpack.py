"""A small MessagePack decoder for AMDGPU code-object metadata (``NT_AMDGPU_METADATA``).

The metadata note (code object v3 and later) is one MessagePack map of
strings, integers, booleans, arrays and maps; this decodes the whole
MessagePack format except extension types, which the metadata never uses.
"""

from __future__ import annotations

import struct
from typing import Any

from gompute_core.errors import InvalidArgument

_FIXED: dict[int, tuple[str, int]] = {
    0xCA: (">f", 4), 0xCB: (">d", 8),
    0xCC: (">B", 1), 0xCD: (">H", 2), 0xCE: (">I", 4), 0xCF: (">Q", 8),
    0xD0: (">b", 1), 0xD1: (">h", 2), 0xD2: (">i", 4), 0xD3: (">q", 8),
}
_LENGTH: dict[int, tuple[str, int, str]] = {
    # tag -> (struct format of the length, its size, what follows)
    0xC4: (">B", 1, "bin"), 0xC5: (">H", 2, "bin"), 0xC6: (">I", 4, "bin"),
    0xD9: (">B", 1, "str"), 0xDA: (">H", 2, "str"), 0xDB: (">I", 4, "str"),
    0xDC: (">H", 2, "array"), 0xDD: (">I", 4, "array"),
    0xDE: (">H", 2, "map"), 0xDF: (">I", 4, "map"),
}


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise InvalidArgument(f"msgpack: truncated at byte {self.pos} (need {n} more)")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def value(self) -> Any:
        tag = self.take(1)[0]
        if tag <= 0x7F:
            return tag
        if tag >= 0xE0:
            return tag - 0x100
        if 0x80 <= tag <= 0x8F:
            return self.container("map", tag & 0x0F)
        if 0x90 <= tag <= 0x9F:
            return self.container("array", tag & 0x0F)
        if 0xA0 <= tag <= 0xBF:
            return self.take(tag & 0x1F).decode("utf-8")
        if tag == 0xC0:
            return None
        if tag in (0xC2, 0xC3):
            return tag == 0xC3
        if tag in _FIXED:
            fmt, size = _FIXED[tag]
            return struct.unpack(fmt, self.take(size))[0]
        if tag in _LENGTH:
            fmt, size, what = _LENGTH[tag]
            length = struct.unpack(fmt, self.take(size))[0]
            if what == "bin":
                return self.take(length)
            if what == "str":
                return self.take(length).decode("utf-8")
            return self.container(what, length)
        raise InvalidArgument(f"msgpack: unsupported type tag 0x{tag:02x} at byte {self.pos - 1}")

    def container(self, what: str, length: int) -> Any:
        if what == "array":
            return [self.value() for _ in range(length)]
        result = {}
        for _ in range(length):
            key = self.value()
            result[key] = self.value()
        return result


def unpackb(data: bytes) -> Any:
    """Decode one MessagePack value occupying all of ``data`` (``InvalidArgument`` if not)."""
    reader = _Reader(bytes(data))
    value = reader.value()
    if reader.pos != len(reader.data):
        raise InvalidArgument(f"msgpack: {len(reader.data) - reader.pos} trailing bytes")
    return value

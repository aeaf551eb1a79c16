"""Reading an AMDGPU code object (the ELF hiprtc produces): target, symbols, kernel metadata
(a test tool: the HIP backend checks an artifact's target against the device from the
artifact's record, not its ELF).

Used by the tests that prove each entry point exists with the kernarg layout the C ABI
table of :mod:`gompute_core.ir.kernel` promises, and that an image names its gfx target.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import msgpack
from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from gompute_core.errors import InvalidArgument

NT_AMDGPU_METADATA = 32
"""Note type of the MessagePack metadata (code object v3+), owner ``"AMDGPU"``."""


@dataclass(frozen=True)
class KernelArg:
    """One kernel argument as the metadata describes it."""

    offset: int
    size: int
    value_kind: str  # "global_buffer", "by_value", "hidden_*", ...

    @property
    def hidden(self) -> bool:
        """True for arguments the runtime appends (not part of the C signature)."""
        return self.value_kind.startswith("hidden_")


@dataclass(frozen=True)
class KernelMeta:
    """One kernel of ``amdhsa.kernels``."""

    name: str
    symbol: str  # the kernel descriptor, "<name>.kd"
    kernarg_segment_size: int
    kernarg_segment_align: int
    max_flat_workgroup_size: int
    args: tuple[KernelArg, ...]

    @property
    def explicit_args(self) -> tuple[KernelArg, ...]:
        """The arguments of the C signature, in order."""
        return tuple(a for a in self.args if not a.hidden)


@dataclass(frozen=True)
class CodeObject:
    """What the ELF says: target triple, global symbols and kernel metadata."""

    target: str  # "amdgcn-amd-amdhsa--gfx90a"
    functions: tuple[str, ...]  # global STT_FUNC symbols
    objects: tuple[str, ...]  # global STT_OBJECT symbols (kernel descriptors among them)
    kernels: tuple[KernelMeta, ...]

    @property
    def arch(self) -> str:
        """The ``gfx`` target with its features (``"gfx90a"``, ``"gfx90a:xnack-"``)."""
        return self.target.rpartition("--")[2]

    def kernel(self, name: str) -> KernelMeta:
        """The kernel called ``name`` (``KeyError`` naming the kernels present)."""
        for k in self.kernels:
            if k.name == name:
                return k
        raise KeyError(f"no kernel {name!r} in the code object (has: "
                       f"{', '.join(k.name for k in self.kernels) or 'none'})")


def _kernel(meta: dict) -> KernelMeta:
    args = tuple(KernelArg(int(a[".offset"]), int(a[".size"]), str(a[".value_kind"]))
                 for a in meta.get(".args", ()))
    return KernelMeta(
        name=str(meta[".name"]), symbol=str(meta[".symbol"]),
        kernarg_segment_size=int(meta[".kernarg_segment_size"]),
        kernarg_segment_align=int(meta[".kernarg_segment_align"]),
        max_flat_workgroup_size=int(meta.get(".max_flat_workgroup_size", 0)),
        args=args,
    )


def _metadata(desc: bytes) -> object:
    """The MessagePack document of an ``NT_AMDGPU_METADATA`` note (``InvalidArgument`` if
    it is not one whole, valid document)."""
    try:
        return msgpack.unpackb(bytes(desc))
    except (ValueError, msgpack.UnpackException) as exc:  # ExtraData is a ValueError
        raise InvalidArgument(f"AMDGPU metadata note is not valid MessagePack: "
                              f"{type(exc).__name__}: {exc}") from exc


def read_code_object(image: bytes) -> CodeObject:
    """Parse ``image``; ``InvalidArgument`` when it is not an AMDGPU code object (v3+)."""
    try:
        elf = ELFFile(io.BytesIO(bytes(image)))
        machine = elf.header.e_machine
    except ELFError as exc:
        raise InvalidArgument(f"not an ELF code object: {exc}") from exc
    if machine != "EM_AMDGPU":
        raise InvalidArgument(f"not an AMDGPU code object (e_machine {machine})")
    metadata = None
    for section in elf.iter_sections():
        if section["sh_type"] != "SHT_NOTE":
            continue
        for note in section.iter_notes():
            if note["n_name"] == "AMDGPU" and note["n_type"] == NT_AMDGPU_METADATA:
                metadata = _metadata(note["n_desc"])
    if not isinstance(metadata, dict) or "amdhsa.target" not in metadata:
        raise InvalidArgument("AMDGPU code object without NT_AMDGPU_METADATA (code object v2?)")
    functions: list[str] = []
    objects: list[str] = []
    symtab = elf.get_section_by_name(".symtab")
    for sym in symtab.iter_symbols() if symtab is not None else ():
        if sym["st_info"]["bind"] != "STB_GLOBAL":
            continue
        if sym["st_info"]["type"] == "STT_FUNC":
            functions.append(sym.name)
        elif sym["st_info"]["type"] == "STT_OBJECT":
            objects.append(sym.name)
    return CodeObject(
        target=str(metadata["amdhsa.target"]),
        functions=tuple(functions), objects=tuple(objects),
        kernels=tuple(_kernel(k) for k in metadata.get("amdhsa.kernels", ())),
    )

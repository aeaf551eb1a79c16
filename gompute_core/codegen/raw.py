"""The entry point of a raw kernel: its own function rendered as the ``extern "C"`` kernel.

The signature is the kernel's own, in order (:func:`gompute_core.backend.signature_layout`
is its C ABI): a ``g.GlobalPtr[T]`` is a pointer to ``T``'s storage type in the
dialect's global address space, never ``restrict`` (a launch may pass one buffer
for two pointers); a scalar is passed in its storage type (``bool`` as a ``u8``,
``f16`` as its 16 bits) and converted once at the top; the params record by
value, except an empty one, which is no argument (a local zero value stands in).
The body declares the shared arrays first, then the locals, then the
statements; a declared block shape becomes the dialect's launch bound
(:attr:`CRenderer.launch_bounds <gompute_core.codegen.renderer.CRenderer.launch_bounds>`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir import nodes as ir
from ..ir.kernel import KernelIR
from .cexpr import var_name
from .ctypes_ import mem_type, reg_type, struct_cname

if TYPE_CHECKING:
    from .renderer import CRenderer


def raw_entry(r: CRenderer, kir: KernelIR) -> str:
    """The source of raw kernel ``kir``'s entry point (its last function) for dialect ``r``."""
    f = kir.functions[-1]
    w = r.writer
    params: list[str] = []
    prologue = ""
    for name, t in f.args:
        v = var_name(name)
        if isinstance(t, ir.PointerType):
            params.append(f"{r.pointer_space}{mem_type(t.elem)}* {v}")
        elif isinstance(t, ir.StructType):
            if t.layout.size == 0:  # type: ignore[attr-defined]
                prologue += f"  const {struct_cname(t)} {v} = {r.zero_initializer()};\n"
            else:
                params.append(f"{struct_cname(t)} {v}")
        elif mem_type(t) != reg_type(t):
            params.append(f"{mem_type(t)} gp_arg_{name}")
            prologue += f"  {reg_type(t)} {v} = {w.load(f'gp_arg_{name}', t)};\n"
        else:
            params.append(f"{reg_type(t)} {v}")
    bounds = ""
    if kir.block is not None:
        x, y, z = kir.block
        bounds = r.launch_bounds.format(threads=x * y * z, x=x, y=y, z=z)
    types = dict(f.args) | dict(f.locals)
    return (f"{r.kernel_qualifier} {bounds}{r.entry_symbol(kir)}({', '.join(params) or 'void'})"
            f" {{\n{w.local_decls(f.locals)}{prologue}{w.stmts(f.body, '  ', types)}}}\n")

"""The shared C-family renderer: ``CRenderer`` and its building blocks.

Backends subclass :class:`CRenderer` (CUDA in ``gompute_cuda.renderer``, HIP in
``gompute_hip``, OpenCL in ``examples/gompute-opencl``) and call
``Dialect().render(kernel_ir)``. ``C_RESERVED`` (C and C++ keywords), ``C_LIBRARY``
(C and GPU library functions, which ``C_FAMILY_RESERVED`` adds to the keywords as the
default reserved words) and
``INT_TYPEDEFS`` (the default ``gp_*`` typedefs) are the defaults a dialect
extends or replaces; ``struct_cname(params)`` is the C name of a
params struct (``P_`` + its layout name), for hosts that write launch wrappers.
"""

from .ctypes_ import C_FAMILY_RESERVED, C_LIBRARY, C_RESERVED, INT_TYPEDEFS, struct_cname
from .renderer import CRenderer

__all__ = ["C_FAMILY_RESERVED", "C_LIBRARY", "C_RESERVED", "INT_TYPEDEFS", "CRenderer",
           "struct_cname"]

"""The shared C-family renderer: ``CRenderer`` and its building blocks.

Backends subclass :class:`CRenderer` (CUDA in ``gompute_cuda.renderer``, HIP in
``gompute_hip``) and call ``Dialect().render(kernel_ir)``.
"""

from .renderer import CRenderer

__all__ = ["CRenderer"]

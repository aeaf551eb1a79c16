"""gompute-opencl: a Gompute backend for OpenCL devices, written against the plugin guide.

The entry point ``opencl`` (group ``gompute.backends``) is :mod:`gompute_opencl.plugin`.
Kernels are rendered to OpenCL C by :class:`~gompute_opencl.renderer.OpenCLRenderer` (the
core's C-family renderer with OpenCL's class attributes), built with the platform's compiler
into a device binary, and launched through pyopencl.
"""

__version__ = "0.1.0"

"""Raw kernels: hand-written kernels in the kernel language with device memory, launch
geometry, barriers, shared memory and atomics (``g.raw_kernel``, ``g.RawKernel``,
``g.builtins``, ``g.GlobalPtr``), loaded and launched through every backend's compile,
load and launch primitives. See ``docs/raw-kernels.md``."""

"""Test harnesses that run the HIP backend's output on NVIDIA hardware (never shipped).

* :mod:`.on_nvrtc`: the ``hip_nvrtc`` in-process backend (HIP source, NVRTC, the CUDA
  backend's devices) behind ``bench/hip_on_nvrtc.py``.
* :mod:`.fixture`: the hip_on_cuda fixture, a ``libamdhip64.so``/``libhiprtc.so``/
  ``libamd_comgr.so.2`` over CUDA and NVRTC that ``gompute_hip`` runs on unmodified
  (README.md beside this file).

Both prepend ``hip_to_cuda.h`` to the HIP source.
"""

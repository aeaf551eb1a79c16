"""gompute-cuda: the CUDA backend of Gompute (NVRTC compilation, pycuda runtime).

Modules: ``renderer`` (the CUDA dialect of the shared C renderer), ``nvrtc``
(ctypes binding), ``compiler`` (render + compile + caches), ``driver`` (pycuda
import, error mapping), ``device``, ``memory``, ``stream`` (streams, events,
graphs), ``program`` (launch paths), ``plugin`` (the hooks).
"""

__version__ = "0.1.0"

"""The GPU layer of the backend SDK: one runtime for every GPU backend, over a driver table.

A GPU backend provides a :class:`GpuDriver` (its binding's primitives: memory, host
registration, modules, launch, streams, events, graphs, errors, contexts), subclasses
:class:`GpuDevice` (backend name, DLPack device type, which artifacts load) and brings
its compiler. Written once here: the device (module cache, arch check, pinning, peer
access, interop hooks), :class:`GpuBuffer`, :class:`GpuStream`, :class:`GpuEvent`,
:class:`GpuGraph`, the launcher of spec and raw kernels (:class:`GpuLauncher`) and one
lifetime policy: every native object is released once, by its ``close()``/``free()``,
its collection, or the device's ``close()``.
"""

from .device import MAX_THREADS_PER_LAUNCH, GpuDevice, GpuLauncher, list_devices, probe
from .driver import DeviceProps, GpuDriver, primitive, query
from .memory import GpuBuffer
from .objects import CAPTURE_MODES, GpuEvent, GpuGraph, GpuGraphExec, GpuStream, Lifetimes

__all__ = ["CAPTURE_MODES", "MAX_THREADS_PER_LAUNCH", "DeviceProps", "GpuBuffer", "GpuDevice",
           "GpuDriver", "GpuEvent", "GpuGraph", "GpuGraphExec", "GpuLauncher", "GpuStream",
           "Lifetimes", "list_devices", "primitive", "probe", "query"]

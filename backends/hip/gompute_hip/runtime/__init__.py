"""The HIP runtime on hip-python: device, buffers, pinned memory, streams, events, graphs, programs.

Imported only when a device is opened or probed, so ``import gompute_hip`` and
compilation work on machines without a HIP runtime.
"""

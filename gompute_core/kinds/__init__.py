"""Every spec kind's host side, written once for every backend.

:mod:`.program` is the checked ``launch`` of each kind over a backend's
launcher (argument order, buffer and count checks, the reduce block cap,
launch geometry); :mod:`.run` is ``Kernel.run``'s upload/launch/download
(pipelined on devices with streams) or, on host-memory devices, a launch on
the caller's arrays.
"""

"""gompute-hip: the AMD GPU backend of Gompute (hip-python runtime, hiprtc compiler).

Modules: :mod:`.renderer` (the HIP dialect of the shared C renderer),
:mod:`.compiler` (hiprtc), :mod:`.targets` (which gfx targets the installed
compiler supports), :mod:`.codeobject` (reading the ELF), :mod:`.libs` (finding
the HIP libraries), :mod:`.runtime` (device, memory, streams, programs) and
:mod:`.plugin` (the hooks). Importing the package loads no HIP library.
"""

__version__ = "0.1.0"

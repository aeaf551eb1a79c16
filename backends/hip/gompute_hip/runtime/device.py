"""The HIP device: made current per thread, module cache, allocation, streams, programs.

HIP selects the device per host thread (``hipSetDevice``), so every entry
point that depends on the current device first makes this one current on
the calling thread (one thread-local check once it is). Launches go to the
device's own stream, never the legacy null stream.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

import numpy as np

from gompute_core.errors import (
    InitFailed,
    InvalidArgument,
    ModuleLoadFailed,
    NoDevice,
    SyncFailed,
)
from gompute_core.ir.kernel import KernelIR
from gompute_core.plugins.records import Artifact, Availability, DeviceInfo

from .. import libs
from ..codeobject import read_code_object
from .errors import SUCCESS, check, code_of, raise_for
from .memory import HipBuffer, pinned_empty
from .program import HipModule, HipProgram
from .streams import HipEvent, HipStream

_current = threading.local()


def _version_text(version: int) -> str:
    return f"{version // 10_000_000}.{version // 100_000 % 100}.{version % 100_000}"


def _base_arch(arch: str) -> str:
    return arch.split(":")[0]


def list_devices(hip: Any) -> tuple[DeviceInfo, ...]:
    """Every AMD GPU HIP reports (after a successful ``hipInit``)."""
    count = check(hip.hipGetDeviceCount(), "hipGetDeviceCount", NoDevice)
    if count:
        major = int(libs.hip_python_version().split(".")[0] or 0)
        libs.require_hip_symbol("hipGetDevicePropertiesR0600" if major >= 6
                                else "hipGetDeviceProperties")
    devices = []
    for ordinal in range(int(count)):
        props = hip.hipDeviceProp_t()
        check(hip.hipGetDeviceProperties(props, ordinal), f"hipGetDeviceProperties({ordinal})",
              InitFailed)
        name = props.name.decode(errors="replace") if isinstance(props.name, bytes) \
            else str(props.name)
        arch = props.gcnArchName
        arch = arch.decode(errors="replace") if isinstance(arch, bytes) else str(arch)
        devices.append(DeviceInfo(ordinal, name, arch, int(props.totalGlobalMem)))
    return tuple(devices)


def probe() -> Availability:
    """Availability of HIP here; never raises (missing library or GPU is the reason)."""
    from ..compiler import compiler_version

    try:
        compiler = compiler_version()
    except Exception:  # noqa: BLE001 - a probe reports, it never raises
        compiler = ""
    try:
        hip = libs.hip()
        code = code_of(hip.hipInit(0)[0])
        if code != SUCCESS:
            return Availability("hip", False, reason=f"no AMD GPU (hipInit: {code})",
                                compiler=compiler)
        devices = list_devices(hip)
    except Exception as exc:  # noqa: BLE001 - a probe reports, it never raises
        return Availability("hip", False, reason=str(exc), compiler=compiler)
    if not devices:
        return Availability("hip", False, reason="no AMD GPU (hipGetDeviceCount: 0)",
                            compiler=compiler)
    return Availability("hip", True, devices=devices, compiler=compiler)


class HipDevice:
    """One AMD GPU: the :class:`~gompute_core.runtime.protocols.Device` of the HIP backend."""

    backend = "hip"

    def __init__(self, ordinal: int) -> None:
        self.hip = libs.hip()
        code = code_of(self.hip.hipInit(0)[0])
        if code != SUCCESS:
            raise_for(code, "hipInit", InitFailed)
        devices = list_devices(self.hip)
        if not 0 <= ordinal < len(devices):
            raise NoDevice(f"HIP device {ordinal} does not exist ({len(devices)} found)")
        info = devices[ordinal]
        self.ordinal = ordinal
        self.name = info.name
        self.arch = info.arch  # e.g. "gfx90a:sramecc+:xnack-", as hiprtc's --offload-arch takes it
        self.memory_bytes = info.memory_bytes
        self.make_current()
        attr = self.hip.hipDeviceAttribute_t.hipDeviceAttributeMultiprocessorCount
        self.multiprocessors = int(check(self.hip.hipDeviceGetAttribute(attr, ordinal),
                                         "hipDeviceGetAttribute", InitFailed))
        self.runtime_version = _version_text(int(check(self.hip.hipRuntimeGetVersion(),
                                                       "hipRuntimeGetVersion", InitFailed)))
        self._modules: dict[str, HipModule] = {}
        self._lock = threading.Lock()
        self._stream = HipStream(self)

    def __repr__(self) -> str:
        return f"<HipDevice {self.ordinal} {self.name} ({self.arch})>"

    def make_current(self) -> None:
        """Make this device current on the calling thread (``hipSetDevice`` once per thread)."""
        if getattr(_current, "ordinal", None) != self.ordinal:
            check(self.hip.hipSetDevice(self.ordinal), f"hipSetDevice({self.ordinal})", NoDevice)
            _current.ordinal = self.ordinal

    # ---- memory --------------------------------------------------------------------
    def alloc(self, nbytes: int) -> HipBuffer:
        """``nbytes`` bytes of device memory."""
        return HipBuffer(self, nbytes)

    def pinned(self, shape: Any, dtype: Any = np.uint8) -> np.ndarray:
        """A page-locked host array (freed when the array is garbage collected)."""
        return pinned_empty(self, shape, dtype)

    def fp64_ratio(self) -> float:
        """FP64 throughput as a fraction of FP32 (1/2 on MI200-class parts, less on RDNA)."""
        attr = self.hip.hipDeviceAttribute_t.hipDeviceAttributeSingleToDoublePrecisionPerfRatio
        ratio = int(check(self.hip.hipDeviceGetAttribute(attr, self.ordinal),
                          "hipDeviceGetAttribute", InitFailed))
        return 1.0 / ratio if ratio else 0.0

    # ---- streams and events ---------------------------------------------------------
    @property
    def stream(self) -> HipStream:
        """The device's default stream (launches of new programs go here)."""
        return self._stream

    def create_stream(self) -> HipStream:
        """A new stream on this device."""
        return HipStream(self)

    def create_event(self, timing: bool = True) -> HipEvent:
        """A new event (with timing unless ``timing=False``)."""
        return HipEvent(self, timing)

    def synchronize(self) -> None:
        """Wait for all work on the device; a device fault raises ``SyncFailed``."""
        self.make_current()
        check(self.hip.hipDeviceSynchronize(), "hipDeviceSynchronize", SyncFailed)

    # ---- modules and programs --------------------------------------------------------
    def load_module(self, image: bytes) -> HipModule:
        """Load a code object once per device and image (cached by the image's sha256)."""
        if not isinstance(image, (bytes, bytearray, memoryview)):
            raise InvalidArgument(f"load_module: image must be bytes, got {type(image).__name__}")
        key = hashlib.sha256(image).hexdigest()
        with self._lock:
            module = self._modules.get(key)
            if module is None:
                self._check_target(bytes(image))
                module = HipModule(self, bytes(image))
                self._modules[key] = module
        return module

    def _check_target(self, image: bytes) -> None:
        try:
            built_for = read_code_object(image).arch
        except InvalidArgument as exc:
            raise ModuleLoadFailed(f"not a loadable AMDGPU code object: {exc}") from exc
        if _base_arch(built_for) != _base_arch(self.arch):
            raise ModuleLoadFailed(f"code object built for {built_for} cannot load on device "
                                   f"{self.ordinal} ({self.name}, {self.arch})")

    def program(self, artifact: Artifact, kernel: KernelIR) -> HipProgram:
        """Load ``artifact`` (module cache) and return the launchable program of ``kernel``."""
        if artifact.backend != "hip":
            raise ModuleLoadFailed(f"artifact for backend {artifact.backend!r} given to HIP")
        return HipProgram(self, self.load_module(artifact.image), kernel, artifact.entry)

    def close(self) -> None:
        """Unload modules and release the default stream (the device may be reopened)."""
        with self._lock:
            modules, self._modules = list(self._modules.values()), {}
        for module in modules:
            check(self.hip.hipModuleUnload(module.handle), "hipModuleUnload", ModuleLoadFailed)
        self._stream.destroy()

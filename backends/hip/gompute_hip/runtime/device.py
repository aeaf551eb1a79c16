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

from gompute_core.backend import (
    ArgBuffer,
    Artifact,
    Availability,
    Device,
    DeviceInfo,
    HostPinning,
    RawArgBuffer,
)
from gompute_core.errors import (
    InitFailed,
    InvalidArgument,
    ModuleLoadFailed,
    NoDevice,
    SyncFailed,
)
from gompute_core.ir.kernel import KernelIR

from .. import libs
from ..codeobject import read_code_object
from .errors import SUCCESS, check, code_of, raise_for
from .memory import HipBuffer, pinned_empty
from .program import MAX_THREADS_PER_LAUNCH, HipLauncher, HipModule, HipRawLauncher
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


class HipDevice(Device):
    """One AMD GPU: the :class:`~gompute_core.backend.Device` of the HIP backend."""

    backend = "hip"
    capabilities = frozenset({"streams", "events", "graphs", "pinned_memory", "f64_atomics"})

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
        self.max_argument_bytes = 4096  # HIP's documented kernel-argument limit
        self.make_current()
        self.multiprocessors = self.attribute("MultiprocessorCount")
        self.max_block_dims = (self.attribute("MaxBlockDimX"), self.attribute("MaxBlockDimY"),
                               self.attribute("MaxBlockDimZ"))
        self.max_block_threads = self.attribute("MaxThreadsPerBlock")
        self.max_shared_bytes = self.attribute("MaxSharedMemoryPerBlock")
        self.runtime_version = _version_text(int(check(self.hip.hipRuntimeGetVersion(),
                                                       "hipRuntimeGetVersion", InitFailed)))
        self._modules: dict[str, HipModule] = {}
        self._lock = threading.Lock()
        self._stream = HipStream(self)
        self._pinning = HostPinning(self._register_host, self._unregister_host)

    def __repr__(self) -> str:
        return f"<HipDevice {self.ordinal} {self.name} ({self.arch})>"

    def attribute(self, name: str) -> int:
        """``hipDeviceGetAttribute`` of ``hipDeviceAttribute<name>`` on this device."""
        attr = getattr(self.hip.hipDeviceAttribute_t, f"hipDeviceAttribute{name}")
        return int(check(self.hip.hipDeviceGetAttribute(attr, self.ordinal),
                         f"hipDeviceGetAttribute({name})", InitFailed))

    def make_current(self) -> None:
        """Make this device current on the calling thread (``hipSetDevice`` once per thread)."""
        if getattr(_current, "ordinal", None) != self.ordinal:
            check(self.hip.hipSetDevice(self.ordinal), f"hipSetDevice({self.ordinal})", NoDevice)
            _current.ordinal = self.ordinal

    # ---- the SDK's primitives ------------------------------------------------------------
    def _alloc(self, nbytes: int) -> HipBuffer:
        return HipBuffer(self, nbytes)

    def _load(self, artifact: Artifact, kernel: KernelIR, args: ArgBuffer) -> HipLauncher:
        """Load ``artifact`` (module cache) and return the launcher of its entry."""
        module = self.load_module(artifact.image)
        return HipLauncher(self, module.function(artifact.entry), artifact.entry,
                           kernel.block_size, args)

    def _load_raw(self, artifact: Artifact, kernel: KernelIR,
                  args: RawArgBuffer) -> HipRawLauncher:
        """Load a raw kernel's artifact (module cache) and return its launcher."""
        module = self.load_module(artifact.image)
        return HipRawLauncher(self, module.function(artifact.entry), artifact.entry, args)

    def max_grid_blocks(self, block_size: int) -> int:
        """32 blocks per compute unit (the entries loop grid-stride), and under HIP's limit
        of 2**32 threads per launch."""
        return max(1, min(self.multiprocessors * 32, MAX_THREADS_PER_LAUNCH // block_size))

    def pin(self, host: np.ndarray) -> bool:
        """Page-lock ``host``'s memory while it lives (``hipHostRegister``)."""
        return self._pinning.pin(host)

    def _register_host(self, ptr: int, size: int) -> bool:
        self.make_current()
        return code_of(self.hip.hipHostRegister(ptr, size, 0)[0]) == SUCCESS

    def _unregister_host(self, ptr: int) -> None:
        self.make_current()
        check(self.hip.hipHostUnregister(ptr), "hipHostUnregister", InitFailed)

    def pinned(self, shape: Any, dtype: Any = np.uint8) -> np.ndarray:
        """A page-locked host array (freed when the array is garbage collected)."""
        return pinned_empty(self, shape, dtype)

    def fp64_ratio(self) -> float:
        """FP64 throughput as a fraction of FP32 (1/2 on MI200-class parts, less on RDNA)."""
        ratio = self.attribute("SingleToDoublePrecisionPerfRatio")
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

    def close(self) -> None:
        """Unload modules and release the default stream (the device may be reopened)."""
        with self._lock:
            modules, self._modules = list(self._modules.values()), {}
        for module in modules:
            check(self.hip.hipModuleUnload(module.handle), "hipModuleUnload", ModuleLoadFailed)
        self._pinning.close()
        self._stream.close()

/* hip_on_cuda: a test fixture, never shipped. Declarations shared by the fixture's
 * libamdhip64.so (hip.c), libhiprtc.so (hiprtc.c), libamd_comgr.so (comgr.c) and the
 * layout printer (layout.c): the HIP ABI pieces hip-python 6.2 reads (error codes,
 * device attributes, hipDeviceProp_tR0600), the gfx <-> sm_XX naming table and the
 * code-object envelope that carries a CUDA image inside an AMDGPU-looking ELF.
 *
 * Every table is an X-macro so that layout.c can print it and the Python tests can
 * compare it with hip-python's own enums and struct layout.
 */
#ifndef HIPF_H
#define HIPF_H

#include <stddef.h>
#include <stdint.h>

#define HIPF_API __attribute__((visibility("default")))

/* HIP 6.2 as HIP_VERSION spells it: major * 10^7 + minor * 10^5 + patch. The patch is 0,
 * which no ROCm release uses, so the compiler identity (and with it gompute's compile
 * cache key) never equals a real ROCm 6.2's. */
#define HIPF_HIP_VERSION 60200000
#define HIPF_HIPRTC_MAJOR 6
#define HIPF_HIPRTC_MINOR 2
#define HIPF_COMGR_MAJOR 2 /* ROCm 6.2 ships comgr 2.8 */
#define HIPF_COMGR_MINOR 8

/* ---- hipError_t (the values of ROCm 6.2's hip_runtime_api.h) ---------------------- */
#define HIPF_ERRORS(X)                                                                    \
  X(hipSuccess, 0) X(hipErrorInvalidValue, 1) X(hipErrorOutOfMemory, 2)                   \
  X(hipErrorNotInitialized, 3) X(hipErrorDeinitialized, 4)                                \
  X(hipErrorInvalidConfiguration, 9) X(hipErrorInvalidSymbol, 13)                         \
  X(hipErrorInvalidDevicePointer, 17) X(hipErrorInsufficientDriver, 35)                   \
  X(hipErrorInvalidDeviceFunction, 98) X(hipErrorNoDevice, 100)                           \
  X(hipErrorInvalidDevice, 101) X(hipErrorInvalidImage, 200)                              \
  X(hipErrorInvalidContext, 201) X(hipErrorContextAlreadyCurrent, 202)                    \
  X(hipErrorMapFailed, 205) X(hipErrorUnmapFailed, 206) X(hipErrorNoBinaryForGpu, 209)    \
  X(hipErrorAlreadyAcquired, 210) X(hipErrorNotMapped, 211)                               \
  X(hipErrorECCNotCorrectable, 214) X(hipErrorUnsupportedLimit, 215)                      \
  X(hipErrorContextAlreadyInUse, 216) X(hipErrorPeerAccessUnsupported, 217)               \
  X(hipErrorInvalidKernelFile, 218) X(hipErrorInvalidGraphicsContext, 219)                \
  X(hipErrorInvalidSource, 300) X(hipErrorFileNotFound, 301)                              \
  X(hipErrorSharedObjectSymbolNotFound, 302) X(hipErrorSharedObjectInitFailed, 303)       \
  X(hipErrorOperatingSystem, 304) X(hipErrorInvalidHandle, 400)                           \
  X(hipErrorIllegalState, 401) X(hipErrorNotFound, 500) X(hipErrorNotReady, 600)          \
  X(hipErrorIllegalAddress, 700) X(hipErrorLaunchOutOfResources, 701)                     \
  X(hipErrorLaunchTimeOut, 702) X(hipErrorPeerAccessAlreadyEnabled, 704)                  \
  X(hipErrorPeerAccessNotEnabled, 705) X(hipErrorSetOnActiveProcess, 708)                 \
  X(hipErrorContextIsDestroyed, 709) X(hipErrorAssert, 710)                               \
  X(hipErrorHostMemoryAlreadyRegistered, 712) X(hipErrorHostMemoryNotRegistered, 713)     \
  X(hipErrorLaunchFailure, 719) X(hipErrorCooperativeLaunchTooLarge, 720)                 \
  X(hipErrorNotSupported, 801) X(hipErrorStreamCaptureUnsupported, 900)                   \
  X(hipErrorStreamCaptureInvalidated, 901) X(hipErrorStreamCaptureMerge, 902)             \
  X(hipErrorStreamCaptureUnmatched, 903) X(hipErrorStreamCaptureUnjoined, 904)            \
  X(hipErrorStreamCaptureIsolation, 905) X(hipErrorStreamCaptureImplicit, 906)            \
  X(hipErrorCapturedEvent, 907) X(hipErrorStreamCaptureWrongThread, 908)                  \
  X(hipErrorGraphExecUpdateFailure, 910) X(hipErrorUnknown, 999)

typedef enum {
#define HIPF_ENUM(name, value) name = value,
  HIPF_ERRORS(HIPF_ENUM)
#undef HIPF_ENUM
} hipError_t;

/* ---- hipDeviceAttribute_t -> CUdevice_attribute (the attributes with a CUDA twin) -- */
#define HIPF_ATTRIBUTES(X)                                                                \
  X(hipDeviceAttributeAsyncEngineCount, 2, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT)        \
  X(hipDeviceAttributeCanMapHostMemory, 3, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY)       \
  X(hipDeviceAttributeClockRate, 5, CU_DEVICE_ATTRIBUTE_CLOCK_RATE)                       \
  X(hipDeviceAttributeComputeMode, 6, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE)                   \
  X(hipDeviceAttributeConcurrentKernels, 8, CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS)       \
  X(hipDeviceAttributeCooperativeLaunch, 10, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)      \
  X(hipDeviceAttributeIntegrated, 16, CU_DEVICE_ATTRIBUTE_INTEGRATED)                     \
  X(hipDeviceAttributeL2CacheSize, 19, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)                 \
  X(hipDeviceAttributeComputeCapabilityMajor, 23,                                         \
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)                                         \
  X(hipDeviceAttributeManagedMemory, 24, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)              \
  X(hipDeviceAttributeMaxBlocksPerMultiProcessor, 25,                                     \
    CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)                                    \
  X(hipDeviceAttributeMaxBlockDimX, 26, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)              \
  X(hipDeviceAttributeMaxBlockDimY, 27, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)              \
  X(hipDeviceAttributeMaxBlockDimZ, 28, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)              \
  X(hipDeviceAttributeMaxGridDimX, 29, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)                \
  X(hipDeviceAttributeMaxGridDimY, 30, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)                \
  X(hipDeviceAttributeMaxGridDimZ, 31, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)                \
  X(hipDeviceAttributeMaxThreadsPerBlock, 56, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)  \
  X(hipDeviceAttributeMaxThreadsPerMultiProcessor, 57,                                    \
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)                                   \
  X(hipDeviceAttributeMemoryBusWidth, 59, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)    \
  X(hipDeviceAttributeMemoryClockRate, 60, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)         \
  X(hipDeviceAttributeComputeCapabilityMinor, 61,                                         \
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)                                         \
  X(hipDeviceAttributeMultiprocessorCount, 63, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)  \
  X(hipDeviceAttributePciBusId, 67, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)                       \
  X(hipDeviceAttributePciDeviceId, 68, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)                 \
  X(hipDeviceAttributePciDomainID, 69, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)                 \
  X(hipDeviceAttributeMaxRegistersPerBlock, 71, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK) \
  X(hipDeviceAttributeMaxRegistersPerMultiprocessor, 72,                                  \
    CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)                                 \
  X(hipDeviceAttributeMaxSharedMemoryPerBlock, 74,                                        \
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)                                      \
  X(hipDeviceAttributeSharedMemPerBlockOptin, 75,                                         \
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)                                \
  X(hipDeviceAttributeSharedMemPerMultiprocessor, 76,                                     \
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)                             \
  X(hipDeviceAttributeSingleToDoublePrecisionPerfRatio, 77,                               \
    CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO)                            \
  X(hipDeviceAttributeTotalConstantMemory, 83, CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY) \
  X(hipDeviceAttributeUnifiedAddressing, 85, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING)       \
  X(hipDeviceAttributeWarpSize, 87, CU_DEVICE_ATTRIBUTE_WARP_SIZE)

/* ---- hipDeviceProp_tR0600, the struct hip-python 6.2's hipDeviceProp_t wraps --------- */
typedef struct {
  unsigned hasGlobalInt32Atomics : 1;
  unsigned hasGlobalFloatAtomicExch : 1;
  unsigned hasSharedInt32Atomics : 1;
  unsigned hasSharedFloatAtomicExch : 1;
  unsigned hasFloatAtomicAdd : 1;
  unsigned hasGlobalInt64Atomics : 1;
  unsigned hasSharedInt64Atomics : 1;
  unsigned hasDoubles : 1;
  unsigned hasWarpVote : 1;
  unsigned hasWarpBallot : 1;
  unsigned hasWarpShuffle : 1;
  unsigned hasFunnelShift : 1;
  unsigned hasThreadFenceSystem : 1;
  unsigned hasSyncThreadsExt : 1;
  unsigned hasSurfaceFuncs : 1;
  unsigned has3dGrid : 1;
  unsigned hasDynamicParallelism : 1;
} hipDeviceArch_t;

typedef struct {
  char bytes[16];
} hipUUID;

/* X(type, name, array suffix): in declaration order */
#define HIPF_PROP_FIELDS(X)                                                              \
  X(char, name, [256]) X(hipUUID, uuid, ) X(char, luid, [8])                             \
  X(unsigned int, luidDeviceNodeMask, ) X(size_t, totalGlobalMem, )                      \
  X(size_t, sharedMemPerBlock, ) X(int, regsPerBlock, ) X(int, warpSize, )               \
  X(size_t, memPitch, ) X(int, maxThreadsPerBlock, ) X(int, maxThreadsDim, [3])          \
  X(int, maxGridSize, [3]) X(int, clockRate, ) X(size_t, totalConstMem, )                \
  X(int, major, ) X(int, minor, ) X(size_t, textureAlignment, )                          \
  X(size_t, texturePitchAlignment, ) X(int, deviceOverlap, )                             \
  X(int, multiProcessorCount, ) X(int, kernelExecTimeoutEnabled, ) X(int, integrated, )  \
  X(int, canMapHostMemory, ) X(int, computeMode, ) X(int, maxTexture1D, )                \
  X(int, maxTexture1DMipmap, ) X(int, maxTexture1DLinear, ) X(int, maxTexture2D, [2])    \
  X(int, maxTexture2DMipmap, [2]) X(int, maxTexture2DLinear, [3])                        \
  X(int, maxTexture2DGather, [2]) X(int, maxTexture3D, [3]) X(int, maxTexture3DAlt, [3]) \
  X(int, maxTextureCubemap, ) X(int, maxTexture1DLayered, [2])                           \
  X(int, maxTexture2DLayered, [3]) X(int, maxTextureCubemapLayered, [2])                 \
  X(int, maxSurface1D, ) X(int, maxSurface2D, [2]) X(int, maxSurface3D, [3])             \
  X(int, maxSurface1DLayered, [2]) X(int, maxSurface2DLayered, [3])                      \
  X(int, maxSurfaceCubemap, ) X(int, maxSurfaceCubemapLayered, [2])                      \
  X(size_t, surfaceAlignment, ) X(int, concurrentKernels, ) X(int, ECCEnabled, )         \
  X(int, pciBusID, ) X(int, pciDeviceID, ) X(int, pciDomainID, ) X(int, tccDriver, )     \
  X(int, asyncEngineCount, ) X(int, unifiedAddressing, ) X(int, memoryClockRate, )       \
  X(int, memoryBusWidth, ) X(int, l2CacheSize, ) X(int, persistingL2CacheMaxSize, )      \
  X(int, maxThreadsPerMultiProcessor, ) X(int, streamPrioritiesSupported, )              \
  X(int, globalL1CacheSupported, ) X(int, localL1CacheSupported, )                       \
  X(size_t, sharedMemPerMultiprocessor, ) X(int, regsPerMultiprocessor, )                \
  X(int, managedMemory, ) X(int, isMultiGpuBoard, ) X(int, multiGpuBoardGroupID, )       \
  X(int, hostNativeAtomicSupported, ) X(int, singleToDoublePrecisionPerfRatio, )         \
  X(int, pageableMemoryAccess, ) X(int, concurrentManagedAccess, )                       \
  X(int, computePreemptionSupported, ) X(int, canUseHostPointerForRegisteredMem, )       \
  X(int, cooperativeLaunch, ) X(int, cooperativeMultiDeviceLaunch, )                     \
  X(size_t, sharedMemPerBlockOptin, ) X(int, pageableMemoryAccessUsesHostPageTables, )   \
  X(int, directManagedMemAccessFromHost, ) X(int, maxBlocksPerMultiProcessor, )          \
  X(int, accessPolicyMaxWindowSize, ) X(size_t, reservedSharedMemPerBlock, )             \
  X(int, hostRegisterSupported, ) X(int, sparseHipArraySupported, )                      \
  X(int, hostRegisterReadOnlySupported, ) X(int, timelineSemaphoreInteropSupported, )    \
  X(int, memoryPoolsSupported, ) X(int, gpuDirectRDMASupported, )                        \
  X(unsigned int, gpuDirectRDMAFlushWritesOptions, ) X(int, gpuDirectRDMAWritesOrdering, ) \
  X(unsigned int, memoryPoolSupportedHandleTypes, )                                      \
  X(int, deferredMappingHipArraySupported, ) X(int, ipcEventSupported, )                 \
  X(int, clusterLaunch, ) X(int, unifiedFunctionPointers, ) X(int, reserved, [63])       \
  X(int, hipReserved, [32]) X(char, gcnArchName, [256])                                  \
  X(size_t, maxSharedMemoryPerMultiProcessor, ) X(int, clockInstructionRate, )           \
  X(hipDeviceArch_t, arch, ) X(unsigned int *, hdpMemFlushCntl, )                        \
  X(unsigned int *, hdpRegFlushCntl, ) X(int, cooperativeMultiDeviceUnmatchedFunc, )     \
  X(int, cooperativeMultiDeviceUnmatchedGridDim, )                                       \
  X(int, cooperativeMultiDeviceUnmatchedBlockDim, )                                      \
  X(int, cooperativeMultiDeviceUnmatchedSharedMem, ) X(int, isLargeBar, )                \
  X(int, asicRevision, )

typedef struct {
#define HIPF_FIELD(type, name, dims) type name dims;
  HIPF_PROP_FIELDS(HIPF_FIELD)
#undef HIPF_FIELD
} hipDeviceProp_tR0600;

/* ---- gfx target <-> CUDA compute capability ------------------------------------------
 * The fixture's device reports the gfx name of its compute capability (the datacenter
 * parts with the sramecc/xnack features real ones report), and its hiprtc compiles an
 * --offload-arch=<gfx> for that sm_XX; its comgr lists exactly these targets. Pairs are
 * parts of the same generation; a device whose capability is not here is refused by
 * name. X(gfx, features, cc major, cc minor) */
#define HIPF_ARCHS(X)                                                                    \
  X("gfx1010", "", 7, 5) X("gfx90a", ":sramecc+:xnack-", 8, 0) X("gfx1030", "", 8, 6)    \
  X("gfx1100", "", 8, 9) X("gfx942", ":sramecc+:xnack-", 9, 0)                           \
  X("gfx950", ":sramecc+:xnack-", 10, 0) X("gfx1201", "", 12, 0)

/* ---- the code-object envelope ----------------------------------------------------------
 * hiprtcGetCode returns an ELF64 with e_machine EM_AMDGPU whose NT_AMDGPU_METADATA note
 * names the target ("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-") like a real code object,
 * so gompute_hip's reader and its target check see what they see on AMD; the CUDA image
 * (a cubin from NVRTC) is the section HIPF_IMAGE_SECTION, which hipModuleLoadData
 * hands to cuModuleLoadData. */
#define HIPF_IMAGE_SECTION ".hip_on_cuda.cubin"

/* The ELF (malloc'ed, *size bytes) wrapping `image` for `target`; NULL when out of memory. */
unsigned char *hipf_envelope_wrap(const char *target, const void *image, size_t image_size,
                                  size_t *size);
/* The CUDA image inside an envelope (points into `elf`, whose size its own header gives,
 * as hipModuleLoadData passes no size); NULL when `elf` is not an envelope. */
const void *hipf_envelope_image(const void *elf, size_t *image_size);

#endif

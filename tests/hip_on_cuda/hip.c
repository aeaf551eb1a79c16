/* hip_on_cuda: libamdhip64.so for a test session, implemented over the CUDA driver API.
 *
 * Exactly the HIP functions gompute_hip calls (under the C symbols hip-python 6.2
 * resolves), plus the error-string pair. libcuda.so.1 is opened on first use, not
 * linked: without a driver the library still loads and hipInit answers hipErrorNoDevice,
 * as HIP does on a machine without a GPU. HIP's implicit per-thread current device maps
 * to the device's primary context, made current on each thread on its first call.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "hipf.h"

#define HIPF_STR_(x) #x
#define HIPF_STR(x) HIPF_STR_(x)
#define MAX_DEVICES 64

/* The driver entry points used, resolved by the names cuda.h maps them to (_v2, ...). */
#define CU_FUNCS(X)                                                                       \
  X(cuInit) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceTotalMem)     \
  X(cuDeviceGetAttribute) X(cuDeviceGetUuid) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) \
  X(cuCtxSynchronize) X(cuMemAlloc) X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost)       \
  X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoD) X(cuMemcpyHtoDAsync)                    \
  X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemsetD8) X(cuMemsetD8Async)             \
  X(cuMemHostRegister) X(cuMemHostUnregister) X(cuStreamCreate)                            \
  X(cuStreamSynchronize) X(cuStreamQuery) X(cuStreamWaitEvent) X(cuStreamDestroy)         \
  X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuEventCreate) X(cuEventRecord)         \
  X(cuEventSynchronize) X(cuEventQuery) X(cuEventElapsedTime) X(cuEventDestroy)           \
  X(cuGraphInstantiate) X(cuGraphLaunch) X(cuGraphExecUpdate) X(cuGraphDestroy)           \
  X(cuGraphExecDestroy) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction)      \
  X(cuLaunchKernel) X(cuGetErrorString) X(cuCtxEnablePeerAccess) X(cuMemcpyPeerAsync)

#define CU_DECLARE(f) static __typeof__(&f) p_##f;
CU_FUNCS(CU_DECLARE)
#undef CU_DECLARE

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static hipError_t load_status = hipErrorNotInitialized;
static pthread_mutex_t primary_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext primary[MAX_DEVICES];
static __thread int current_device;   /* HIP's per-thread device, 0 until hipSetDevice */
static __thread int context_is_current;

/* ---- errors ------------------------------------------------------------------------ */
static hipError_t from_cu(CUresult result) {
  switch ((int)result) {
#define HIPF_SAME(name, value) case value:
    HIPF_ERRORS(HIPF_SAME)
#undef HIPF_SAME
    return (hipError_t)result; /* HIP numbers its errors as CUDA does */
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
    return hipErrorLaunchFailure; /* device faults HIP has no own code for */
  default:
    fprintf(stderr, "hip_on_cuda: CUDA error %d has no HIP twin; reporting hipErrorUnknown\n",
            (int)result);
    return hipErrorUnknown;
  }
}

#define CU_CHECK(call)                                                                    \
  do {                                                                                    \
    CUresult cu_result_ = (call);                                                         \
    if (cu_result_ != CUDA_SUCCESS) return from_cu(cu_result_);                           \
  } while (0)

#define HIP_CHECK(call)                                                                   \
  do {                                                                                    \
    hipError_t hip_result_ = (call);                                                      \
    if (hip_result_ != hipSuccess) return hip_result_;                                    \
  } while (0)

HIPF_API const char *hipGetErrorName(hipError_t error) {
  switch (error) {
#define HIPF_NAME(name, value) case name: return #name;
    HIPF_ERRORS(HIPF_NAME)
#undef HIPF_NAME
  }
  return "hipErrorUnknown";
}

HIPF_API const char *hipGetErrorString(hipError_t error) {
  const char *text = NULL;
  /* CUDA's description of the same number, where the driver is loaded to give it */
  if (load_status == hipSuccess && p_cuGetErrorString((CUresult)error, &text) == CUDA_SUCCESS &&
      text != NULL)
    return text;
  return hipGetErrorName(error);
}

/* ---- loading the driver and the per-thread context ---------------------------------- */
static void load(void) {
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == NULL) {
    load_status = hipErrorNoDevice; /* no NVIDIA driver: HIP's answer without a GPU */
    return;
  }
  void *symbol;
#define CU_RESOLVE(f)                                                                     \
  symbol = dlsym(driver, HIPF_STR(f));                                                    \
  if (symbol == NULL) {                                                                   \
    fprintf(stderr, "hip_on_cuda: libcuda.so.1 does not export %s\n", HIPF_STR(f));       \
    load_status = hipErrorInsufficientDriver;                                             \
    return;                                                                               \
  }                                                                                       \
  memcpy(&p_##f, &symbol, sizeof symbol);
  CU_FUNCS(CU_RESOLVE)
#undef CU_RESOLVE
  load_status = from_cu(p_cuInit(0));
}

static hipError_t loaded(void) {
  pthread_once(&load_once, load);
  return load_status;
}

static hipError_t device_count(int *count) {
  HIP_CHECK(loaded());
  CU_CHECK(p_cuDeviceGetCount(count));
  return *count > 0 ? hipSuccess : hipErrorNoDevice;
}

static hipError_t primary_of(int ordinal, CUcontext *context);

static hipError_t make_current(int ordinal) {
  CUcontext context;
  HIP_CHECK(primary_of(ordinal, &context));
  CU_CHECK(p_cuCtxSetCurrent(context));
  current_device = ordinal;
  context_is_current = 1;
  return hipSuccess;
}

/* Every call that needs a context starts here: HIP makes the current device's implicit. */
static hipError_t ready(void) {
  HIP_CHECK(loaded());
  return context_is_current ? hipSuccess : make_current(current_device);
}

/* ---- device ------------------------------------------------------------------------ */
HIPF_API hipError_t hipInit(unsigned int flags) {
  return flags != 0 ? hipErrorInvalidValue : loaded();
}

HIPF_API hipError_t hipRuntimeGetVersion(int *version) {
  if (version == NULL) return hipErrorInvalidValue;
  *version = HIPF_HIP_VERSION;
  return hipSuccess;
}

HIPF_API hipError_t hipDriverGetVersion(int *version) { return hipRuntimeGetVersion(version); }

HIPF_API hipError_t hipGetDeviceCount(int *count) {
  if (count == NULL) return hipErrorInvalidValue;
  *count = 0;
  return device_count(count);
}

HIPF_API hipError_t hipSetDevice(int ordinal) { return make_current(ordinal); }

HIPF_API hipError_t hipDeviceSynchronize(void) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuCtxSynchronize());
  return hipSuccess;
}

HIPF_API hipError_t hipDeviceGetAttribute(int *value, int attribute, int ordinal) {
  CUdevice_attribute cu_attribute;
  switch (attribute) {
#define HIPF_ATTR(hip_name, hip_value, cu_value)                                          \
  case hip_value:                                                                         \
    cu_attribute = cu_value;                                                              \
    break;
    HIPF_ATTRIBUTES(HIPF_ATTR)
#undef HIPF_ATTR
  default:
    fprintf(stderr, "hip_on_cuda: hipDeviceGetAttribute: attribute %d has no CUDA twin here\n",
            attribute);
    return hipErrorInvalidValue;
  }
  if (value == NULL) return hipErrorInvalidValue;
  int count = 0;
  HIP_CHECK(device_count(&count));
  if (ordinal < 0 || ordinal >= count) return hipErrorInvalidDevice;
  CUdevice device;
  CU_CHECK(p_cuDeviceGet(&device, ordinal));
  CU_CHECK(p_cuDeviceGetAttribute(value, cu_attribute, device));
  return hipSuccess;
}

static int cu_attribute(CUdevice device, CUdevice_attribute attribute) {
  int value = 0;
  return p_cuDeviceGetAttribute(&value, attribute, device) == CUDA_SUCCESS ? value : 0;
}

/* gcnArchName: the gfx twin of the device's compute capability (hipf.h's table). */
static int gfx_name(int major, int minor, char *out, size_t size) {
#define HIPF_ARCH(gfx, features, cc_major, cc_minor)                                      \
  if (major == cc_major && minor == cc_minor) {                                           \
    snprintf(out, size, "%s%s", gfx, features);                                           \
    return 1;                                                                             \
  }
  HIPF_ARCHS(HIPF_ARCH)
#undef HIPF_ARCH
  return 0;
}

HIPF_API hipError_t hipGetDevicePropertiesR0600(hipDeviceProp_tR0600 *prop, int ordinal) {
  if (prop == NULL) return hipErrorInvalidValue;
  int count = 0;
  HIP_CHECK(device_count(&count));
  if (ordinal < 0 || ordinal >= count) return hipErrorInvalidDevice;
  CUdevice d;
  CU_CHECK(p_cuDeviceGet(&d, ordinal));
  memset(prop, 0, sizeof *prop);
  CU_CHECK(p_cuDeviceGetName(prop->name, sizeof prop->name, d));
  CU_CHECK(p_cuDeviceTotalMem(&prop->totalGlobalMem, d));
  CU_CHECK(p_cuDeviceGetUuid((CUuuid *)&prop->uuid, d));
  prop->major = cu_attribute(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  prop->minor = cu_attribute(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  if (!gfx_name(prop->major, prop->minor, prop->gcnArchName, sizeof prop->gcnArchName)) {
    fprintf(stderr, "hip_on_cuda: device %d (%s) has compute capability %d.%d, which has no "
            "gfx twin in hipf.h's HIPF_ARCHS\n", ordinal, prop->name, prop->major, prop->minor);
    return hipErrorInvalidDevice;
  }
  prop->sharedMemPerBlock = (size_t)cu_attribute(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  prop->regsPerBlock = cu_attribute(d, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  prop->warpSize = cu_attribute(d, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  prop->memPitch = (size_t)cu_attribute(d, CU_DEVICE_ATTRIBUTE_MAX_PITCH);
  prop->maxThreadsPerBlock = cu_attribute(d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  for (int i = 0; i < 3; ++i) {
    prop->maxThreadsDim[i] = cu_attribute(d, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X + i);
    prop->maxGridSize[i] = cu_attribute(d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X + i);
  }
  prop->clockRate = cu_attribute(d, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  prop->totalConstMem = (size_t)cu_attribute(d, CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY);
  prop->textureAlignment = (size_t)cu_attribute(d, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT);
  prop->texturePitchAlignment =
      (size_t)cu_attribute(d, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT);
  prop->multiProcessorCount = cu_attribute(d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  prop->kernelExecTimeoutEnabled = cu_attribute(d, CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT);
  prop->integrated = cu_attribute(d, CU_DEVICE_ATTRIBUTE_INTEGRATED);
  prop->canMapHostMemory = cu_attribute(d, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY);
  prop->computeMode = cu_attribute(d, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE);
  prop->concurrentKernels = cu_attribute(d, CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS);
  prop->ECCEnabled = cu_attribute(d, CU_DEVICE_ATTRIBUTE_ECC_ENABLED);
  prop->pciBusID = cu_attribute(d, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
  prop->pciDeviceID = cu_attribute(d, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
  prop->pciDomainID = cu_attribute(d, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
  prop->tccDriver = cu_attribute(d, CU_DEVICE_ATTRIBUTE_TCC_DRIVER);
  prop->asyncEngineCount = cu_attribute(d, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT);
  prop->unifiedAddressing = cu_attribute(d, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING);
  prop->memoryClockRate = cu_attribute(d, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  prop->memoryBusWidth = cu_attribute(d, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  prop->l2CacheSize = cu_attribute(d, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  prop->maxThreadsPerMultiProcessor =
      cu_attribute(d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  prop->sharedMemPerMultiprocessor =
      (size_t)cu_attribute(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  prop->maxSharedMemoryPerMultiProcessor = prop->sharedMemPerMultiprocessor;
  prop->regsPerMultiprocessor = cu_attribute(d, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  prop->managedMemory = cu_attribute(d, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY);
  prop->isMultiGpuBoard = cu_attribute(d, CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD);
  prop->multiGpuBoardGroupID = cu_attribute(d, CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID);
  prop->singleToDoublePrecisionPerfRatio =
      cu_attribute(d, CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO);
  prop->concurrentManagedAccess = cu_attribute(d, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS);
  prop->cooperativeLaunch = cu_attribute(d, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH);
  prop->sharedMemPerBlockOptin =
      (size_t)cu_attribute(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  prop->maxBlocksPerMultiProcessor =
      cu_attribute(d, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  prop->clockInstructionRate = prop->clockRate;
  prop->arch = (hipDeviceArch_t){1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  return hipSuccess;
}

/* ---- memory ------------------------------------------------------------------------ */
HIPF_API hipError_t hipMalloc(void **ptr, size_t size) {
  if (ptr == NULL) return hipErrorInvalidValue;
  *ptr = NULL;
  if (size == 0) return hipSuccess;
  HIP_CHECK(ready());
  CUdeviceptr address = 0;
  CU_CHECK(p_cuMemAlloc(&address, size));
  *ptr = (void *)(uintptr_t)address;
  return hipSuccess;
}

HIPF_API hipError_t hipFree(void *ptr) {
  if (ptr == NULL) return hipSuccess;
  HIP_CHECK(ready());
  CU_CHECK(p_cuMemFree((CUdeviceptr)(uintptr_t)ptr));
  return hipSuccess;
}

HIPF_API hipError_t hipHostMalloc(void **ptr, size_t size, unsigned int flags) {
  if (ptr == NULL) return hipErrorInvalidValue;
  if (flags != 0) { /* hipHostMallocDefault is all gompute_hip asks for */
    fprintf(stderr, "hip_on_cuda: hipHostMalloc flags 0x%x are not supported here\n", flags);
    return hipErrorInvalidValue;
  }
  HIP_CHECK(ready());
  CU_CHECK(p_cuMemHostAlloc(ptr, size, CU_MEMHOSTALLOC_PORTABLE));
  return hipSuccess;
}

HIPF_API hipError_t hipHostFree(void *ptr) {
  if (ptr == NULL) return hipSuccess;
  HIP_CHECK(ready());
  CU_CHECK(p_cuMemFreeHost(ptr));
  return hipSuccess;
}

HIPF_API hipError_t hipHostRegister(void *ptr, size_t size, unsigned int flags) {
  if (ptr == NULL) return hipErrorInvalidValue;
  if (flags != 0) { /* hipHostRegisterDefault is all gompute_hip asks for */
    fprintf(stderr, "hip_on_cuda: hipHostRegister flags 0x%x are not supported here\n", flags);
    return hipErrorInvalidValue;
  }
  HIP_CHECK(ready());
  CU_CHECK(p_cuMemHostRegister(ptr, size, CU_MEMHOSTREGISTER_PORTABLE));
  return hipSuccess;
}

HIPF_API hipError_t hipHostUnregister(void *ptr) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuMemHostUnregister(ptr));
  return hipSuccess;
}

#define DPTR(p) ((CUdeviceptr)(uintptr_t)(p))

HIPF_API hipError_t hipMemcpyHtoD(void *dst, const void *src, size_t size) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuMemcpyHtoD(DPTR(dst), src, size));
  return hipSuccess;
}

HIPF_API hipError_t hipMemcpyDtoH(void *dst, void *src, size_t size) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuMemcpyDtoH(dst, DPTR(src), size));
  return hipSuccess;
}

HIPF_API hipError_t hipMemcpyDtoD(void *dst, void *src, size_t size) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuMemcpyDtoD(DPTR(dst), DPTR(src), size));
  return hipSuccess;
}

HIPF_API hipError_t hipMemcpyHtoDAsync(void *dst, const void *src, size_t size,
                                       CUstream stream) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuMemcpyHtoDAsync(DPTR(dst), src, size, stream));
  return hipSuccess;
}

HIPF_API hipError_t hipMemcpyDtoHAsync(void *dst, void *src, size_t size, CUstream stream) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuMemcpyDtoHAsync(dst, DPTR(src), size, stream));
  return hipSuccess;
}

HIPF_API hipError_t hipMemcpyDtoDAsync(void *dst, void *src, size_t size, CUstream stream) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuMemcpyDtoDAsync(DPTR(dst), DPTR(src), size, stream));
  return hipSuccess;
}

HIPF_API hipError_t hipMemsetD8(void *dst, unsigned char value, size_t count) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuMemsetD8(DPTR(dst), value, count));
  return hipSuccess;
}

HIPF_API hipError_t hipMemsetD8Async(void *dst, unsigned char value, size_t count,
                                     CUstream stream) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuMemsetD8Async(DPTR(dst), value, count, stream));
  return hipSuccess;
}

/* The primary context of device ``ordinal``, retained on first use. */
static hipError_t primary_of(int ordinal, CUcontext *context) {
  int count = 0;
  HIP_CHECK(device_count(&count));
  if (ordinal < 0 || ordinal >= count || ordinal >= MAX_DEVICES) return hipErrorInvalidDevice;
  CUdevice device;
  CU_CHECK(p_cuDeviceGet(&device, ordinal));
  pthread_mutex_lock(&primary_lock);
  CUresult result = CUDA_SUCCESS;
  if (primary[ordinal] == NULL) result = p_cuDevicePrimaryCtxRetain(&primary[ordinal], device);
  *context = primary[ordinal];
  pthread_mutex_unlock(&primary_lock);
  CU_CHECK(result);
  return hipSuccess;
}

HIPF_API hipError_t hipDeviceEnablePeerAccess(int peer, unsigned int flags) {
  CUcontext context;
  HIP_CHECK(ready());
  HIP_CHECK(primary_of(peer, &context));
  CU_CHECK(p_cuCtxEnablePeerAccess(context, flags));
  return hipSuccess;
}

HIPF_API hipError_t hipMemcpyPeerAsync(void *dst, int dst_device, const void *src,
                                       int src_device, size_t size, CUstream stream) {
  CUcontext dst_context, src_context;
  HIP_CHECK(ready());
  HIP_CHECK(primary_of(dst_device, &dst_context));
  HIP_CHECK(primary_of(src_device, &src_context));
  CU_CHECK(p_cuMemcpyPeerAsync(DPTR(dst), dst_context, DPTR(src), src_context, size, stream));
  return hipSuccess;
}

/* ---- streams, events, graphs -------------------------------------------------------- */
HIPF_API hipError_t hipStreamCreate(CUstream *stream) {
  if (stream == NULL) return hipErrorInvalidValue;
  HIP_CHECK(ready());
  CU_CHECK(p_cuStreamCreate(stream, CU_STREAM_DEFAULT)); /* HIP's streams are blocking */
  return hipSuccess;
}

HIPF_API hipError_t hipStreamSynchronize(CUstream stream) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuStreamSynchronize(stream));
  return hipSuccess;
}

HIPF_API hipError_t hipStreamQuery(CUstream stream) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuStreamQuery(stream));
  return hipSuccess;
}

HIPF_API hipError_t hipStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuStreamWaitEvent(stream, event, flags));
  return hipSuccess;
}

HIPF_API hipError_t hipStreamDestroy(CUstream stream) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuStreamDestroy(stream));
  return hipSuccess;
}

/* hipStreamCaptureMode's values equal CUstreamCaptureMode's (global 0, thread-local 1,
 * relaxed 2) */
HIPF_API hipError_t hipStreamBeginCapture(CUstream stream, int mode) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuStreamBeginCapture(stream, (CUstreamCaptureMode)mode));
  return hipSuccess;
}

HIPF_API hipError_t hipStreamEndCapture(CUstream stream, CUgraph *graph) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuStreamEndCapture(stream, graph));
  return hipSuccess;
}

/* hipEventDefault/BlockingSync/DisableTiming/Interprocess equal CU_EVENT_* */
HIPF_API hipError_t hipEventCreateWithFlags(CUevent *event, unsigned int flags) {
  if (event == NULL) return hipErrorInvalidValue;
  HIP_CHECK(ready());
  CU_CHECK(p_cuEventCreate(event, flags));
  return hipSuccess;
}

HIPF_API hipError_t hipEventRecord(CUevent event, CUstream stream) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuEventRecord(event, stream));
  return hipSuccess;
}

HIPF_API hipError_t hipEventSynchronize(CUevent event) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuEventSynchronize(event));
  return hipSuccess;
}

HIPF_API hipError_t hipEventQuery(CUevent event) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuEventQuery(event));
  return hipSuccess;
}

HIPF_API hipError_t hipEventElapsedTime(float *ms, CUevent start, CUevent stop) {
  if (ms == NULL) return hipErrorInvalidValue;
  HIP_CHECK(ready());
  CU_CHECK(p_cuEventElapsedTime(ms, start, stop));
  return hipSuccess;
}

HIPF_API hipError_t hipEventDestroy(CUevent event) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuEventDestroy(event));
  return hipSuccess;
}

HIPF_API hipError_t hipGraphInstantiate(CUgraphExec *exec, CUgraph graph, CUgraphNode *error_node,
                                        char *log, size_t log_size) {
  if (error_node != NULL) *error_node = NULL;
  if (log != NULL && log_size > 0) log[0] = '\0';
  HIP_CHECK(ready());
  CU_CHECK(p_cuGraphInstantiate(exec, graph, 0));
  return hipSuccess;
}

HIPF_API hipError_t hipGraphLaunch(CUgraphExec exec, CUstream stream) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuGraphLaunch(exec, stream));
  return hipSuccess;
}

/* hipGraphExecUpdateResult's values equal CUgraphExecUpdateResult's */
HIPF_API hipError_t hipGraphExecUpdate(CUgraphExec exec, CUgraph graph, CUgraphNode *error_node,
                                       int *update_result) {
  HIP_CHECK(ready());
  CUgraphExecUpdateResultInfo info;
  memset(&info, 0, sizeof info);
  CUresult result = p_cuGraphExecUpdate(exec, graph, &info);
  if (error_node != NULL) *error_node = info.errorNode;
  if (update_result != NULL) *update_result = (int)info.result;
  CU_CHECK(result);
  return hipSuccess;
}

HIPF_API hipError_t hipGraphDestroy(CUgraph graph) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuGraphDestroy(graph));
  return hipSuccess;
}

HIPF_API hipError_t hipGraphExecDestroy(CUgraphExec exec) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuGraphExecDestroy(exec));
  return hipSuccess;
}

/* ---- modules and launches ------------------------------------------------------------ */
HIPF_API hipError_t hipModuleLoadData(CUmodule *module, const void *image) {
  if (module == NULL || image == NULL) return hipErrorInvalidValue;
  size_t size = 0;
  const void *cuda_image = hipf_envelope_image(image, &size);
  if (cuda_image == NULL) {
    fprintf(stderr, "hip_on_cuda: hipModuleLoadData: the image is not a code object of this "
            "fixture's hiprtc (no " HIPF_IMAGE_SECTION " section)\n");
    return hipErrorInvalidImage;
  }
  HIP_CHECK(ready());
  CU_CHECK(p_cuModuleLoadData(module, cuda_image));
  return hipSuccess;
}

HIPF_API hipError_t hipModuleUnload(CUmodule module) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuModuleUnload(module));
  return hipSuccess;
}

HIPF_API hipError_t hipModuleGetFunction(CUfunction *function, CUmodule module,
                                         const char *name) {
  HIP_CHECK(ready());
  CU_CHECK(p_cuModuleGetFunction(function, module, name));
  return hipSuccess;
}

/* HIP's launch-parameter markers (hip_runtime_api.h) and CUDA's differ: END is 3 in HIP,
 * 0 in CUDA. */
#define HIP_LAUNCH_PARAM_BUFFER_POINTER ((void *)0x01)
#define HIP_LAUNCH_PARAM_BUFFER_SIZE ((void *)0x02)
#define HIP_LAUNCH_PARAM_END ((void *)0x03)
#define MAX_EXTRA 16

HIPF_API hipError_t hipModuleLaunchKernel(CUfunction function, unsigned int grid_x,
                                          unsigned int grid_y, unsigned int grid_z,
                                          unsigned int block_x, unsigned int block_y,
                                          unsigned int block_z, unsigned int shared_bytes,
                                          CUstream stream, void **kernel_params, void **extra) {
  void *cuda_extra[MAX_EXTRA + 1];
  void **translated = NULL;
  if (extra != NULL) {
    size_t i = 0;
    for (; extra[i] != HIP_LAUNCH_PARAM_END; i += 2) {
      if (i + 2 > MAX_EXTRA) {
        fprintf(stderr, "hip_on_cuda: hipModuleLaunchKernel: extra has no "
                "HIP_LAUNCH_PARAM_END within %d entries\n", MAX_EXTRA);
        return hipErrorInvalidValue;
      }
      if (extra[i] == HIP_LAUNCH_PARAM_BUFFER_POINTER) {
        cuda_extra[i] = CU_LAUNCH_PARAM_BUFFER_POINTER;
      } else if (extra[i] == HIP_LAUNCH_PARAM_BUFFER_SIZE) {
        cuda_extra[i] = CU_LAUNCH_PARAM_BUFFER_SIZE;
      } else {
        fprintf(stderr, "hip_on_cuda: hipModuleLaunchKernel: unknown extra marker %p\n",
                extra[i]);
        return hipErrorInvalidValue;
      }
      cuda_extra[i + 1] = extra[i + 1];
    }
    cuda_extra[i] = CU_LAUNCH_PARAM_END;
    translated = cuda_extra;
  }
  HIP_CHECK(ready());
  CU_CHECK(p_cuLaunchKernel(function, grid_x, grid_y, grid_z, block_x, block_y, block_z,
                            shared_bytes, stream, kernel_params, translated));
  return hipSuccess;
}

/* A fake libcuda.so.1 for tests/test_cuda_driver_table.py: the driver calls gompute_cuda
 * makes, on host memory, with counters of what is alive. Its one "kernel" adds 1 to the
 * n floats at the first two packed arguments (pointer, u64 count), as a map of x + 1
 * does. Never shipped; built by the test with cc. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long u64;
typedef int CUresult;
#define HANDLE(out, live) (*(out) = (void *)(uintptr_t)(next_handle += 0x10), (live)++, 0)
#define PTR(address) ((void *)(uintptr_t)(address))

static void *current_context;
static u64 next_handle = 0x1000;
int live_allocations, live_streams, live_events, live_graphs, live_modules, launches;
int refuse_next_launch; /* answer CUDA_ERROR_INVALID_CONTEXT once, as after XLA */

CUresult cuInit(int flags) { return flags; }
CUresult cuDriverGetVersion(int *version) { *version = 13000; return 0; }
CUresult cuDeviceGetCount(int *count) { *count = 2; return 0; }
CUresult cuDeviceGet(int *device, int ordinal) { *device = ordinal; return 0; }
CUresult cuDeviceGetName(char *name, int len, int device) {
  strncpy(name, device ? "Fake GPU 1" : "Fake GPU 0", (size_t)len);
  return 0;
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, int device) { *bytes = 1ull << 34; return 0; }
CUresult cuDeviceGetAttribute(int *value, int attribute, int device) {
  switch (attribute) {
  case 1: case 2: case 3: *value = 1024; break;  /* threads per block, block x, y */
  case 4: *value = 64; break;                    /* block z */
  case 8: *value = 49152; break;                 /* shared per block */
  case 16: *value = 132; break;                  /* multiprocessors */
  case 39: *value = 2048; break;                 /* threads per multiprocessor */
  case 75: *value = 9; break;                    /* compute capability 9.0 */
  case 87: *value = 2; break;                    /* fp32 : fp64 */
  case 97: *value = 232448; break;               /* shared per block, opted in */
  default: *value = 0;
  }
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **context, int device) {
  *context = PTR(0xC000 + device);
  return 0;
}
CUresult cuDevicePrimaryCtxRelease_v2(int device) { return 0; }
CUresult cuCtxGetCurrent(void **context) { *context = current_context; return 0; }
CUresult cuCtxSetCurrent(void *context) { current_context = context; return 0; }
CUresult cuCtxSynchronize(void) { return current_context ? 0 : 201; }
CUresult cuCtxEnablePeerAccess(void *peer, unsigned flags) { return 0; }
CUresult cuPointerGetAttribute(void *data, int attribute, u64 pointer) {
  *(int *)data = 0;
  return 0;
}
CUresult cuMemAlloc_v2(u64 *pointer, size_t bytes) {
  if (bytes == 0) return 1; /* CUDA_ERROR_INVALID_VALUE, as the driver answers */
  *pointer = (u64)(uintptr_t)malloc(bytes);
  live_allocations++;
  return 0;
}
CUresult cuMemFree_v2(u64 pointer) { free(PTR(pointer)); live_allocations--; return 0; }
CUresult cuMemcpyHtoDAsync_v2(u64 dst, const void *src, size_t n, void *stream) {
  memcpy(PTR(dst), src, n);
  return 0;
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, u64 src, size_t n, void *stream) {
  memcpy(dst, PTR(src), n);
  return 0;
}
CUresult cuMemcpyDtoDAsync_v2(u64 dst, u64 src, size_t n, void *stream) {
  memcpy(PTR(dst), PTR(src), n);
  return 0;
}
CUresult cuMemcpyPeerAsync(u64 dst, void *dst_ctx, u64 src, void *src_ctx, size_t n,
                           void *stream) {
  return dst_ctx == src_ctx ? 1 : (memcpy(PTR(dst), PTR(src), n), 0);
}
CUresult cuMemsetD8Async(u64 dst, unsigned char value, size_t n, void *stream) {
  memset(PTR(dst), value, n);
  return 0;
}
CUresult cuMemHostAlloc(void **pointer, size_t bytes, unsigned flags) {
  *pointer = malloc(bytes);
  live_allocations++;
  return 0;
}
CUresult cuMemFreeHost(void *pointer) { free(pointer); live_allocations--; return 0; }
CUresult cuMemHostRegister_v2(void *pointer, size_t bytes, unsigned flags) { return 0; }
CUresult cuMemHostUnregister(void *pointer) { return 0; }
CUresult cuModuleLoadData(void **module, const void *image) { return HANDLE(module, live_modules); }
CUresult cuModuleUnload(void *module) { live_modules--; return 0; }
CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  *function = PTR(next_handle += 0x10);
  return 0;
}
CUresult cuFuncGetAttribute(int *value, int attribute, void *function) {
  *value = 1024; /* static shared bytes */
  return 0;
}
CUresult cuFuncSetAttribute(void *function, int attribute, int value) {
  return attribute == 8 && value == 232448 - 1024 ? 0 : 1;
}
CUresult cuStreamCreate(void **stream, unsigned flags) { return HANDLE(stream, live_streams); }
CUresult cuStreamDestroy_v2(void *stream) { live_streams--; return 0; }
CUresult cuStreamSynchronize(void *stream) { return 0; }
CUresult cuStreamQuery(void *stream) { return 600; /* CUDA_ERROR_NOT_READY */ }
CUresult cuStreamWaitEvent(void *stream, void *event, unsigned flags) { return 0; }
CUresult cuEventCreate(void **event, unsigned flags) { return HANDLE(event, live_events); }
CUresult cuEventDestroy_v2(void *event) { live_events--; return 0; }
CUresult cuEventRecord(void *event, void *stream) { return 0; }
CUresult cuEventSynchronize(void *event) { return 0; }
CUresult cuEventQuery(void *event) { return 0; }
CUresult cuEventElapsedTime(float *ms, void *start, void *end) { *ms = 1.5f; return 0; }
CUresult cuStreamBeginCapture_v2(void *stream, int mode) { return 0; }
CUresult cuStreamEndCapture(void *stream, void **graph) { return HANDLE(graph, live_graphs); }
CUresult cuGraphInstantiateWithFlags(void **exec, void *graph, u64 flags) {
  return HANDLE(exec, live_graphs);
}
CUresult cuGraphLaunch(void *exec, void *stream) { return 0; }
CUresult cuGraphExecUpdate_v2(void *exec, void *graph, void *info) { return 0; }
CUresult cuGraphDestroy(void *graph) { live_graphs--; return 0; }
CUresult cuGraphExecDestroy(void *exec) { live_graphs--; return 0; }
CUresult cuGetErrorString(CUresult code, const char **text) {
  *text = "fake driver error";
  return 0;
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, void *stream, void **params,
                        void **extra) {
  if (refuse_next_launch) {
    refuse_next_launch = 0;
    return 201;
  }
  if (current_context == NULL) return 201;
  if (extra == NULL || extra[0] != PTR(1) || extra[2] != PTR(2) || extra[4] != NULL ||
      *(size_t *)extra[3] < 16)
    return 1; /* CUDA_ERROR_INVALID_VALUE */
  const u64 *args = extra[1];
  float *x = PTR(args[0]);
  for (u64 i = 0; i < args[1]; i++) x[i] += 1.0f;
  launches++;
  return 0;
}

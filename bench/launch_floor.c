/* The physical floor of a kernel launch from the host: cuLaunchKernel in a loop on an empty
 * kernel taking the same three arguments as a 1024-element map (pointer, u64 count, an
 * 8-byte params struct), packed in one argument buffer as Gompute packs them
 * (CU_LAUNCH_PARAM_BUFFER_POINTER). The driver is opened with dlopen, so the program
 * builds with any C compiler and only the CUDA headers' absence is a reason to fail.
 *
 *   cc -O2 -o launch_floor bench/launch_floor.c -ldl && ./launch_floor [launches] [rounds]
 *
 * Prints one line: the best round's microseconds per launch (rounds of `launches`
 * launches, each followed by cuCtxSynchronize, as bench/launch_floor.py times ours). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream;
typedef unsigned long long CUdeviceptr;

static const char PTX[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry gp_floor(.param .u64 data, .param .u64 n, .param .align 4 .b8 p[8])\n"
    "{\n  ret;\n}\n";

/* Each function by the exact symbol its prototype here matches: cuMemAlloc is cuMemAlloc_v2
 * since CUDA 3.2, while CUDA 13's cuCtxSynchronize_v2 takes a context (calling it as the
 * argument-less cuCtxSynchronize gave CUresult 709 on the H200). */
#define LOAD_AS(name, symbol) \
  name = dlsym(lib, symbol); \
  if (!name) { fprintf(stderr, "libcuda lacks %s\n", symbol); return 2; }
#define LOAD(name) LOAD_AS(name, #name)
#define CHECK(call) \
  do { CUresult r_ = (call); \
       if (r_) { fprintf(stderr, "%s failed: CUresult %d\n", #call, r_); return 3; } } while (0)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  long launches = argc > 1 ? atol(argv[1]) : 20000, rounds = argc > 2 ? atol(argv[2]) : 7;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) { fprintf(stderr, "libcuda.so.1 not found (no NVIDIA driver)\n"); return 2; }
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuCtxSynchronize)(void);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);
  LOAD(cuInit) LOAD(cuDeviceGet) LOAD(cuDevicePrimaryCtxRetain) LOAD(cuCtxSetCurrent)
  LOAD(cuModuleLoadData) LOAD(cuModuleGetFunction) LOAD_AS(cuMemAlloc, "cuMemAlloc_v2")
  LOAD(cuCtxSynchronize)
  LOAD(cuLaunchKernel)
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction fn;
  CUdeviceptr data;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(cuModuleLoadData(&mod, PTX));
  CHECK(cuModuleGetFunction(&fn, mod, "gp_floor"));
  CHECK(cuMemAlloc(&data, 4096));
  /* the argument buffer: pointer at 0, count at 8, params (two f32) at 16 */
  unsigned char args[24];
  uint64_t n = 1024;
  float p[2] = {1.0f, 0.5f};
  memcpy(args, &data, 8);
  memcpy(args + 8, &n, 8);
  memcpy(args + 16, p, 8);
  size_t size = sizeof args;
  void *extra[] = {(void *)1 /* CU_LAUNCH_PARAM_BUFFER_POINTER */, args,
                   (void *)2 /* CU_LAUNCH_PARAM_BUFFER_SIZE */, &size, (void *)0};
  double best = 1e30;
  for (long r = 0; r <= rounds; ++r) { /* round 0 warms up */
    double t = now();
    for (long i = 0; i < launches; ++i)
      CHECK(cuLaunchKernel(fn, 1, 1, 1, 256, 1, 1, 0, (CUstream)0, NULL, extra));
    CHECK(cuCtxSynchronize());
    t = now() - t;
    if (r > 0 && t < best) best = t;
  }
  printf("%.4f\n", best / launches * 1e6);
  return 0;
}

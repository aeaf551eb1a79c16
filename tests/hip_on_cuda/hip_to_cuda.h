// hip_to_cuda.h: the HIP-only names in gompute-hip source, spelled for CUDA/NVRTC.
// Prepended to the source by bench/hip_on_nvrtc.py and by the hip_on_cuda fixture's hiprtc.
// _Float16 (clang's IEEE half, used by the f16 conversions): round-to-nearest-even cvt.
struct gp_cuda_half {
  unsigned short bits;
  gp_cuda_half() = default;
  __device__ gp_cuda_half(float f) { asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(f)); }
  __device__ gp_cuda_half(double d) { asm("cvt.rn.f16.f64 %0, %1;" : "=h"(bits) : "d"(d)); }
  __device__ operator float() const {
    float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits)); return f;
  }
};
#define _Float16 gp_cuda_half
// __builtin_offsetof (clang's, in the params static_asserts): NVRTC 13.0's front end lacks
// it; __INTADDR__ is the constant-folding address builtin its own offsetof expands to.
#define __builtin_offsetof(t, m) __INTADDR__(&(((t*)0)->m))

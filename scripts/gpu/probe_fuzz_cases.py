"""Probe two CUDA fuzz disagreements piece by piece (a device-side diagnosis, not a test).

Usage: ``python scripts/gpu/probe_fuzz_cases.py`` on a machine with the CUDA backend.
Compiles, through the CUDA backend's own NVRTC and options (``g.RawKernel.from_source``),
the rendered device functions of fuzz cases 2026120611:6267 and 2026120509:4365 with
probe kernels that store their intermediate values, and prints them next to what Python
computes:

* 6267: ``h1(u, w)`` is ``u64(u ** 0) // (w / -0.0)``, ``1.0 // -inf`` = -1.0 in Python;
  the kernel returned 0 for every element. The probe stores the numerator, the divisor,
  ``fmod``, the floor division helper and ``h1`` for inputs read from memory.
* 4365: ``(i8 0) - b`` for ``b = -128`` wraps to -128 in Python; the kernel returned +128
  (an i8 result sign-extended by shifts, the NVRTC 13.0 ``neg.s16`` hazard). The probe
  stores the same difference sign-extended four ways.
"""

from __future__ import annotations

import numpy as np

import gompute_core as g
from gompute_core.plugins import manager
from gompute_core.testing.test_fuzz import backend_types, generate


def device_functions(seed: int, index: int) -> str:
    """The rendered CUDA source of a fuzz case up to its entry point."""
    case = generate(seed, index, backend_types(manager.require("cuda").info))
    import tempfile

    fn = case.load(tempfile.mkdtemp())
    spec = g.zip(case.name, case.A, case.B, case.Out, None, fn)
    source = manager.compiler("cuda").render(spec.lower(), "sm_90")
    return source[:source.find('extern "C"')]


PROBE_6267 = r"""
extern "C" __global__ void probe6267(const gp_i64* a, const gp_u32* b, double* out,
                                     gp_u8* whole, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  bool w = 100.0 < (double)a[i];
  bool u = b[i] >= 1u;
  double num = (double)((gp_u64)gp_pow_i64((gp_i64)u, (gp_i64)0));
  double den = w ? ((double)w / (-0.0)) : ((double)w / (double)u);
  out[6 * i + 0] = num;
  out[6 * i + 1] = den;
  out[6 * i + 2] = fmod(num, den);
  out[6 * i + 3] = gp_floordiv_f64(num, den);
  out[6 * i + 4] = (double)f_fuzz_2026120611_6267_fn_h1(u, w);
  out[6 * i + 5] = gp_floordiv_f64(a[i] > 0 ? 1.0 : 2.0,
                                   __longlong_as_double((gp_i64)0xFFF0000000000000ULL));
  whole[i] = f_fuzz_2026120611_6267_fn(a[i], b[i]);
}
"""

PROBE_4365 = r"""
static __device__ __forceinline__ gp_i32 sext8_asm(gp_u32 x) {
  gp_i32 r;
  asm("cvt.s32.s8 %0, %1;" : "=r"(r) : "r"(x));
  return r;
}
extern "C" __global__ void probe4365(const gp_i8* a, const gp_i8* b, const gp_i8* zero,
                                     gp_i16* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  gp_u32 d0 = (gp_u32)0 - (gp_u32)b[i];
  gp_u32 dz = (gp_u32)zero[i] - (gp_u32)b[i];
  out[7 * i + 0] = f_fuzz_2026120509_4365_fn(a[i], b[i]);
  out[7 * i + 1] = (gp_i16)((gp_i8)(((gp_i32)(d0 << 24)) >> 24));
  out[7 * i + 2] = (gp_i16)((gp_i8)(((gp_i32)(dz << 24)) >> 24));
  out[7 * i + 3] = (gp_i16)((gp_i32)((d0 & 0xFFu) ^ 0x80u) - 0x80);
  out[7 * i + 4] = (gp_i16)(gp_i8)((d0 & 0x80u) ? (gp_i32)(d0 | 0xFFFFFF00u)
                                                : (gp_i32)(d0 & 0xFFu));
  out[7 * i + 5] = (gp_i16)((gp_i8)(((gp_i32)(d0 << 24)) / 16777216));
  out[7 * i + 6] = (gp_i16)((gp_i8)sext8_asm(d0));
}
"""


def main() -> None:
    from gompute_cuda.nvrtc import load_nvrtc

    print(f"compiler: {load_nvrtc().name}")
    rng = np.random.default_rng(1)
    n = 64
    a = np.full(n, np.iinfo(np.int64).max, np.int64)
    a[::2] = rng.integers(-1000, 1000, n // 2)
    b = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    b[:4] = [0, 1, 4294967295, 4294967294]
    k = g.RawKernel.from_source("probe6267", device_functions(2026120611, 6267) + PROBE_6267,
                                "cuda", [g.GlobalPtr[g.i64], g.GlobalPtr[g.u32],
                                         g.GlobalPtr[g.f64], g.GlobalPtr[g.u8], g.i32])
    bufs = [k.alloc(n, g.i64), k.alloc(n, g.u32), k.alloc(6 * n, g.f64), k.alloc(n, g.u8)]
    bufs[0].upload(a)
    bufs[1].upload(b)
    k.launch(1, n, [*bufs, n])
    k.synchronize()
    out, whole = np.empty(6 * n), np.empty(n, np.uint8)
    bufs[2].download(out)
    bufs[3].download(whole)
    print("6267: a, b, w, u | num, den, fmod, floordiv, h1, floordiv(1 or 2, -inf) | whole")
    for i in range(8):
        print(f"  {a[i]} {b[i]} w={100.0 < a[i]} u={b[i] >= 1} | {out[6 * i:6 * i + 6]} | "
              f"{whole[i]}")
    print(f"  Python: 1.0 // -inf = {1.0 // -np.inf}, fmod = {np.fmod(1.0, -np.inf)}")

    av = np.arange(-128, 128, dtype=np.int8)
    bv = np.full(256, -128, np.int8)
    bv[::2] = av[::2]
    k2 = g.RawKernel.from_source("probe4365", device_functions(2026120509, 4365) + PROBE_4365,
                                 "cuda", [g.GlobalPtr[g.i8], g.GlobalPtr[g.i8],
                                          g.GlobalPtr[g.i8], g.GlobalPtr[g.i16], g.i32])
    m = av.size
    bufs2 = [k2.alloc(m, g.i8), k2.alloc(m, g.i8), k2.alloc(m, g.i8), k2.alloc(7 * m, g.i16)]
    bufs2[0].upload(av)
    bufs2[1].upload(bv)
    bufs2[2].upload(np.zeros(m, np.int8))
    k2.launch(2, 128, [*bufs2, m])
    k2.synchronize()
    out2 = np.empty(7 * m, np.int16)
    bufs2[3].download(out2)
    rows = out2.reshape(m, 7)
    want = (np.zeros(m, np.int8) - bv).astype(np.int16)  # i8 wrap, then widened
    names = ["whole kernel", "shifts, const 0", "shifts, loaded 0", "xor 0x80", "select",
             "divide", "cvt.s32.s8 (inline PTX)"]
    for j, name in enumerate(names):
        bad = np.flatnonzero(rows[:, j] != (want if j else rows[:, 0]))
        if j == 0:
            print(f"4365 whole kernel at b=-128: {sorted(set(rows[bv == -128, 0].tolist()))}")
            continue
        print(f"4365 {name}: {bad.size} of {m} differ from NumPy's i8 wrap"
              + (f" (b={bv[bad[0]]}: got {rows[bad[0], j]}, want {want[bad[0]]})"
                 if bad.size else ""))


if __name__ == "__main__":
    main()

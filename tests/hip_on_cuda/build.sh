#!/usr/bin/env bash
# Build the hip_on_cuda fixture (a test double of ROCm 6.2's HIP runtime, hiprtc and comgr
# over CUDA and NVRTC) into OUT_DIR:
#
#   bash tests/hip_on_cuda/build.sh [OUT_DIR]     (default: tests/hip_on_cuda/build)
#
#   libamdhip64.so      HIP over the CUDA driver API (opens libcuda.so.1 when first used)
#   libhiprtc.so        hiprtc over NVRTC (linked, with an rpath to NVRTC's directory)
#   libamd_comgr.so.2   the target list gompute_hip validates against (.so.3: a link to it)
#   hipf_layout         prints the fixture's ABI tables as JSON (for the tests)
#
#   CUDA_ROOT   where include/cuda.h is (default /usr/local/cuda)
#   PYTHON      finds NVRTC as gompute_cuda does (default python3), unless GOMPUTE_NVRTC
#               names the library file
#   CC          the C compiler (default cc)
#
# Select the fixture for one process tree with GOMPUTE_HIP_LIBDIR=OUT_DIR (gompute_hip
# searches that directory first); see README.md beside this script.
set -euo pipefail
src="$(cd "$(dirname "$0")" && pwd)"
out="$(realpath -m "${1:-$src/build}")"
CUDA_ROOT="${CUDA_ROOT:-/usr/local/cuda}"
PYTHON="${PYTHON:-python3}"
CC="${CC:-cc}"
die() { echo "hip_on_cuda/build.sh: $*" >&2; exit 1; }

command -v "$CC" >/dev/null || die "no C compiler '$CC' (set CC)"
[ -f "$CUDA_ROOT/include/cuda.h" ] || die "$CUDA_ROOT/include/cuda.h not found (set CUDA_ROOT)"
nvrtc="${GOMPUTE_NVRTC:-}"
if [ -z "$nvrtc" ]; then
  nvrtc="$("$PYTHON" -c 'from gompute_cuda.nvrtc import load_nvrtc; print(load_nvrtc().path)')" \
    || die "NVRTC not found by gompute_cuda (put the repo's backends/cuda on PYTHONPATH, or set GOMPUTE_NVRTC)"
fi
[ -f "$nvrtc" ] || die "NVRTC '$nvrtc' is not a file: set GOMPUTE_NVRTC to libnvrtc.so.NN's path"
nvrtc="$(realpath "$nvrtc")"
nvrtc_dir="$(dirname "$nvrtc")"
nvrtc_inc="$nvrtc_dir/../include"
[ -f "$nvrtc_inc/nvrtc.h" ] || nvrtc_inc="$CUDA_ROOT/include"
[ -f "$nvrtc_inc/nvrtc.h" ] || die "nvrtc.h found neither beside $nvrtc nor in $CUDA_ROOT/include"

mkdir -p "$out"
cflags=(-std=c11 -D_GNU_SOURCE -O2 -g -fPIC -fvisibility=hidden -Wall -Wextra -Werror -I"$src")
"$CC" "${cflags[@]}" -I"$CUDA_ROOT/include" -shared -Wl,-soname,libamdhip64.so \
  -o "$out/libamdhip64.so" "$src/hip.c" "$src/envelope.c" -ldl -pthread
"$CC" "${cflags[@]}" -I"$nvrtc_inc" -Wa,-I"$src" -shared -Wl,-soname,libhiprtc.so \
  -o "$out/libhiprtc.so" "$src/hiprtc.c" "$src/envelope.c" "$nvrtc" -Wl,-rpath,"$nvrtc_dir"
"$CC" "${cflags[@]}" -shared -Wl,-soname,libamd_comgr.so.2 \
  -o "$out/libamd_comgr.so.2" "$src/comgr.c"
ln -sfn libamd_comgr.so.2 "$out/libamd_comgr.so.3"
"$CC" "${cflags[@]}" -o "$out/hipf_layout" "$src/layout.c"
echo "hip_on_cuda: built $out (NVRTC: $nvrtc)"

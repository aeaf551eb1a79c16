#!/usr/bin/env bash
# Everything that must run on an NVIDIA GPU before the raw-kernel, interop and Dask work
# counts as done, in three parts that each fit one 10-minute device call:
#
#   bash scripts/gpu/verify.sh raw       # bench/raw.py, CUDA conformance, GPU runtime and
#                                        # raw backend tests, the CUDA fuzz of the pinned seed
#   bash scripts/gpu/verify.sh interop   # scripts/gpu/interop_check.sh, then dask_check.sh
#   bash scripts/gpu/verify.sh hip       # the HIP backend on the HIP-on-CUDA fixture
#   bash scripts/gpu/verify.sh elementwise  # g.elementwise tests (CUDA, CuPy), Black-Scholes
#                                        # against CuPy's ElementwiseKernel
#
# Run from the repository root on the GPU machine with the project installed (pycuda,
# CuPy); dask and distributed may come as wheels in .whl/ (installed to /tmp/site), the
# HIP fixture's needs in .hipcarry/ (see tests/hip_on_cuda/README.md). Logs go under
# $OUT (default ./gpu-out), named with the date; each part ends by printing its summary.
set -uo pipefail
cd "$(dirname "$0")/../.."
part="${1:?usage: verify.sh raw|interop|hip|elementwise}"
case "$part" in raw|interop|hip|elementwise) ;; *) echo "verify.sh: unknown part '$part'" >&2; exit 2 ;; esac
out="${OUT:-gpu-out}"
mkdir -p "$out"
py="${PY:-python3}"
day="$(date +%F)"
if compgen -G ".whl/*.whl" > /dev/null; then
  "$py" -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD/tests${PYTHONPATH:+:$PYTHONPATH}"
status=0
case "$part" in
  raw)
    timeout 120 "$py" bench/raw.py > "$out/raw-bench-$day.md" 2>&1 || status=1
    {
      echo "== CUDA conformance (fuzz apart)"
      timeout 150 "$py" -m pytest -q -p no:cacheprovider -n 8 -rfE --pyargs gompute_core.testing \
        --gompute-backend=cuda -k "not fuzz" 2>&1 | tail -8
      echo "== GPU runtime, raw backends, CUDA runtime"
      timeout 120 "$py" -m pytest -q -p no:cacheprovider -rfE tests/test_gpu_runtime.py \
        tests/test_cuda_runtime.py tests/test_raw_backends.py -k "not hip" 2>&1 | tail -8
      echo "== CUDA fuzz, 10,000 kernels of the pinned seed"
      timeout 200 "$py" -m pytest -q -p no:cacheprovider -n 12 -rf --pyargs gompute_core.testing \
        --gompute-backend=cuda -k fuzz --gompute-fuzz-count=10000 \
        --gompute-fuzz-seed=20261130 2>&1 | grep -vE '^\.+' | tail -20
    } > "$out/cuda-tests-$day.log" 2>&1
    grep -q " failed" "$out/cuda-tests-$day.log" && status=1
    cat "$out/raw-bench-$day.md" "$out/cuda-tests-$day.log"
    ;;
  interop)
    OUT="$out" PY="$py" timeout 300 bash scripts/gpu/interop_check.sh || status=1
    PY="$py" timeout 280 bash scripts/gpu/dask_check.sh "$out/dask-gpu-$day.log" > /dev/null \
      || status=1
    tail -30 "$out/dask-gpu-$day.log"
    ;;
  elementwise)
    {
      echo "== g.elementwise tests"
      timeout 300 "$py" -m pytest -q -p no:cacheprovider -rfEs tests/test_elementwise.py \
        2>&1 | tail -12
      echo "== Black-Scholes, 2**24 options"
      timeout 200 "$py" bench/blackscholes.py --backend cuda 2>&1 | tail -3
    } > "$out/elementwise-$day.log" 2>&1
    grep -qE " failed|Error" "$out/elementwise-$day.log" && status=1
    cat "$out/elementwise-$day.log"
    ;;
  hip)
    timeout 540 bash tests/hip_on_cuda/run.sh "$out/hip" .hipcarry > /dev/null 2>&1 || status=1
    cat "$out/hip/summary.txt"
    ;;
esac
exit "$status"

#!/usr/bin/env bash
# One GPU session's verification in two parts, each one device call of under 10 minutes:
#
#   bash scripts/gpu/session.sh tests     # CUDA conformance (every tier), the GPU test files,
#                                         # a fresh-seed CUDA fuzz of 10,000 kernels
#                                         # ($FUZZ_SEED), the HIP backend on the HIP-on-CUDA
#                                         # fixture (needs .hipcarry, tests/hip_on_cuda)
#   bash scripts/gpu/session.sh bench     # every CUDA benchmark of this tree; with BASE=DIR
#                                         # (an unpacked earlier tree) the no-regression rows
#                                         # of that tree too, in the same run
#   bash scripts/gpu/session.sh programs  # CuPy's SGEMM (and cuBLAS) and Monte Carlo examples
#                                         # against our ports, the checked tier on CUDA
#
# Run from the repository root on the GPU machine with the project installed; logs go to
# $OUT (default ./gpu-out). pyelftools may come as a wheel in .whl/ (installed to /tmp/site).
set -uo pipefail
cd "$(dirname "$0")/../.."
part="${1:?usage: session.sh tests|bench|programs}"
out="${OUT:-gpu-out}"
mkdir -p "$out"
py="${PY:-python3}"
day="$(date +%F)"
if compgen -G ".whl/*.whl" > /dev/null; then
  "$py" -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
status=0
pytest=("$py" -m pytest -q -p no:cacheprovider -rfE)
case "$part" in
  tests)
    {
      echo "== CUDA conformance, every tier but fuzz"
      timeout 240 "${pytest[@]}" -n 8 --pyargs gompute_core.testing --gompute-backend=cuda \
        -k "not fuzz" 2>&1 | tail -15
      echo "== GPU test files"
      PYTHONPATH="$PWD/tests${PYTHONPATH:+:$PYTHONPATH}" timeout 300 "${pytest[@]}" \
        tests/test_gpu_runtime.py tests/test_cuda_runtime.py tests/test_raw_backends.py \
        tests/test_elementwise.py tests/test_cuda_interop.py \
        tests/test_interop_device.py tests/test_fma.py tests/test_local_arrays.py \
        tests/test_tuples.py tests/test_special.py -k "not hip and not opencl" 2>&1 | tail -25
      echo "== CUDA fuzz, 10,000 kernels of seed ${FUZZ_SEED:?set FUZZ_SEED}"
      # the whole output goes to its own log; here the summary and each failure's first
      # line (which names the case: rerun it with scripts/gpu/fuzz_case.py cuda SEED:INDEX)
      timeout 240 "${pytest[@]}" -n 12 -W ignore::RuntimeWarning -W ignore::DeprecationWarning \
        --pyargs gompute_core.testing --gompute-backend=cuda -k fuzz \
        --gompute-fuzz-count=10000 --gompute-fuzz-seed="$FUZZ_SEED" > "$out/cuda-fuzz-$day.log" 2>&1
      grep -E "^(FAILED|E +Failed:|[0-9]+ (passed|failed))|element\(s\) differ|rejected without" \
        "$out/cuda-fuzz-$day.log" | cut -c1-1500 | tail -40
    } > "$out/cuda-tests-$day.log" 2>&1
    grep -qE " failed| error" "$out/cuda-tests-$day.log" && status=1
    timeout 420 bash tests/hip_on_cuda/run.sh "$out/hip" .hipcarry > /dev/null 2>&1 || status=1
    cat "$out/cuda-tests-$day.log" "$out/hip/summary.txt"
    ;;
  bench)
    {
      echo "== this tree: bench/cuda.py"; timeout 200 "$py" bench/cuda.py 2>&1 | tail -22
      echo "== this tree: bench/launch_floor.py"; timeout 100 "$py" bench/launch_floor.py 2>&1
      echo "== this tree: bench/raw.py"; timeout 120 "$py" bench/raw.py 2>&1 | tail -14
      echo "== this tree: bench/scan.py"; timeout 120 "$py" bench/scan.py cuda --log2n 28 2>&1
      echo "== this tree: bench/blackscholes.py"
      timeout 100 "$py" bench/blackscholes.py --backend cuda 2>&1 | tail -6
      echo "== this tree: bench/checked.py"
      timeout 100 "$py" bench/checked.py --backend cuda 2>&1 | tail -8
      if [ -n "${BASE:-}" ]; then
        base=(env PYTHONPATH="$BASE:$BASE/backends/cpu:$BASE/backends/cuda:$BASE/backends/hip${PYTHONPATH:+:$PYTHONPATH}")
        echo "== base tree ($BASE): bench/cuda.py"
        timeout 200 "${base[@]}" "$py" "$BASE/bench/cuda.py" 2>&1 | tail -22
        echo "== base tree: bench/launch_floor.py (this tree's script, the base's code)"
        cp bench/launch_floor.py bench/launch_floor.c "$BASE/bench/"
        timeout 100 "${base[@]}" "$py" "$BASE/bench/launch_floor.py" 2>&1
        echo "== base tree: bench/raw.py"
        timeout 120 "${base[@]}" "$py" "$BASE/bench/raw.py" 2>&1 | tail -14
      fi
    } > "$out/cuda-bench-$day.log" 2>&1
    cat "$out/cuda-bench-$day.log"
    ;;
  programs)
    {
      echo "== bench/sgemm.py (CuPy's example, cuBLAS)"
      timeout 150 "$py" bench/sgemm.py --backend cuda 2>&1 | tail -12
      echo "== bench/montecarlo.py (CuPy's example)"
      timeout 150 "$py" bench/montecarlo.py --backend cuda 2>&1 | tail -8
      echo "== the checked conformance tier on CUDA"
      timeout 200 "${pytest[@]}" --pyargs gompute_core.testing --gompute-backend=cuda \
        -k test_checked.py 2>&1 | tail -8
    } > "$out/cuda-programs-$day.log" 2>&1
    grep -qE " failed| error" "$out/cuda-programs-$day.log" && status=1
    cat "$out/cuda-programs-$day.log"
    ;;
  *) echo "session.sh: unknown part '$part'" >&2; exit 2 ;;
esac
exit "$status"

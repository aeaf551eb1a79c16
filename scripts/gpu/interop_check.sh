#!/usr/bin/env bash
# Interop on a GPU machine: the interop tests, the JAX diagnosis and the interop bench.
# Run from the repository root after `source .gpu/on-device.sh`; logs go under $OUT
# (default: ./interop-out). Exits non-zero when a test step failed (the bench and the
# diagnosis only report).
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-interop-out}"
mkdir -p "$out"
py="${PY:-python}"
status=0
{
  "$py" -c "import sys; print(sys.version)"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv
  "$py" - <<'PY'
import importlib
for name in ("cupy", "torch", "numba", "jax", "jaxlib", "pycuda"):
    try:
        print(name, importlib.import_module(name).__version__)
    except Exception as exc:  # noqa: BLE001 - a report
        print(name, "unavailable:", type(exc).__name__, exc)
PY
} > "$out/interop-env.log" 2>&1
# the tests that run anywhere, then the GPU ones (JAX last: it keeps its context current)
"$py" -m pytest -q -p no:cacheprovider tests/test_interop.py tests/test_interop_device.py \
  > "$out/interop-tests-host.log" 2>&1 || status=1
"$py" -m pytest -v -p no:cacheprovider -rs tests/test_cuda_interop.py \
  > "$out/interop-tests-cuda.log" 2>&1 || status=1
# the JAX test alone in a fresh process (JAX first, then Gompute), and the diagnosis both
# with the main-thread context check and without it (--old-enter: the failure as it was)
"$py" -m pytest -v -p no:cacheprovider -rs "tests/test_cuda_interop.py::test_jax_in_and_out" \
  "tests/test_cuda_interop.py::test_a_context_another_library_left_current_is_taken_back" \
  > "$out/interop-tests-jax-alone.log" 2>&1 || status=1
"$py" scripts/gpu/jax_diag.py > "$out/jax-diag.log" 2>&1
"$py" scripts/gpu/jax_diag.py --old-enter > "$out/jax-diag-old-enter.log" 2>&1
CUDA_VISIBLE_DEVICES=0 "$py" scripts/gpu/jax_diag.py --old-enter \
  > "$out/jax-diag-old-enter-one-gpu.log" 2>&1
"$py" -m pytest -q -p no:cacheprovider tests/test_dask.py > "$out/dask-tests.log" 2>&1 \
  || status=1
# the numbers: the Python part alone, then the GPU bench twice (host noise)
"$py" bench/interop_host.py > "$out/interop-host.log" 2>&1
for run in 1 2; do
  "$py" bench/interop.py --out "$out/interop-h200-run$run.md" \
    > "$out/interop-bench-run$run.log" 2>&1 || status=1
done
tail -n 3 "$out"/interop-tests-*.log "$out"/dask-tests.log
grep -h "step(s) failed" "$out"/jax-diag*.log
cat "$out"/interop-h200-run*.md
exit "$status"

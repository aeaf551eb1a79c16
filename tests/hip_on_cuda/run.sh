#!/usr/bin/env bash
# On an NVIDIA GPU machine: build the hip_on_cuda fixture, select it, and run the
# unmodified HIP backend on it. From the repository root:
#
#   bash tests/hip_on_cuda/run.sh OUT_DIR [CARRY_DIR]
#
# CARRY_DIR: what carry.sh prepared (hip-python's bindings, pyelftools), for a machine
# without a package index; they are unpacked to a temporary site directory.
# Writes to OUT_DIR (at most 7 files): setup.log (versions, install, build, fixture check),
# info.log (`gompute info`), fixture.log (tests/test_hip_on_cuda.py), conformance.log
# (the conformance suite against `hip`), runtime.log (tests/test_hip_runtime.py and the hip
# cases of tests/test_gpu_runtime.py), bench.log (bench/hip.py) and summary.txt (each
# step's exit status). Exits non-zero when any step failed.
#
#   PYTHON     the interpreter (default python3)
#   CUDA_ROOT  where include/cuda.h is (default /usr/local/cuda)
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$(realpath -m "${1:?usage: run.sh OUT_DIR [CARRY_DIR]}")"
carry="${2:-}"
PY="${PYTHON:-python3}"
libdir="$root/tests/hip_on_cuda/build"
mkdir -p "$out"
: > "$out/summary.txt"
status=0
step() {  # step NAME LOG COMMAND...: run, log, record the exit status
  local name="$1" log="$2"
  shift 2
  echo "== $name: $*" >> "$out/$log"
  local start=$SECONDS
  "$@" >> "$out/$log" 2>&1
  local rc=$?
  echo "$name: exit $rc ($((SECONDS - start)) s)" | tee -a "$out/summary.txt"
  [ "$rc" -eq 0 ] || status=1
  return "$rc"
}

if [ -n "$carry" ]; then
  site="$(mktemp -d)"
  step unpack setup.log bash -c "$PY -m zipfile -e '$(realpath "$carry")/hip-python-min.zip' '$site' \
    && $PY -m pip install -q --no-index --no-deps --no-compile --target '$site' \
       '$(realpath "$carry")'/pyelftools-*.whl"
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$root:$root/backends/cpu:$root/backends/cuda:$root/backends/hip:$root/tests${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
# a fresh compile cache: every kernel goes through the fixture's hiprtc in this run
export GOMPUTE_CACHE_DIR="$out/.cache"
trap 'rm -rf "$GOMPUTE_CACHE_DIR"' EXIT

registered="import importlib.metadata as m, sys
eps = {e.name for e in m.entry_points(group='gompute.backends')}
sys.exit(not {'hip', 'cuda'} <= eps or 'gompute' not in {e.name for e in m.entry_points(group='pytest11')})"
if ! "$PY" -c "$registered" 2>/dev/null; then  # entry points come only with an install
  step install setup.log "$PY" -m pip install -q --no-deps --no-build-isolation --no-index \
    "$root" "$root/backends/cpu" "$root/backends/cuda" "$root/backends/hip"
fi
step versions setup.log bash -c "nvidia-smi -L; $PY -c 'import sys, importlib.metadata as m
print(sys.version)
for d in (\"hip-python\", \"pyelftools\", \"msgpack\", \"numpy\", \"pluggy\", \"pytest\"):
    print(d, m.version(d))'; ${CC:-cc} --version | head -1"
step build setup.log env PYTHON="$PY" bash "$root/tests/hip_on_cuda/build.sh" "$libdir" \
  && step check setup.log "$PY" "$root/tests/hip_on_cuda/fixture.py" check "$libdir"
if [ "$status" -ne 0 ]; then
  echo "setup failed: see $out/setup.log" | tee -a "$out/summary.txt"
  exit 1
fi
export GOMPUTE_HIP_LIBDIR="$libdir"
step info info.log "$PY" -m gompute_core.cli info
pytest=("$PY" -m pytest -q -p no:cacheprovider -rfEs)
step fixture fixture.log "${pytest[@]}" "$root/tests/test_hip_on_cuda.py"
step conformance conformance.log "${pytest[@]}" --pyargs gompute_core.testing \
  --gompute-backend=hip
step runtime runtime.log "${pytest[@]}" "$root/tests/test_hip_runtime.py" \
  "$root/tests/test_gpu_runtime.py" -k hip --hip-on-cuda="$libdir"
step bench bench.log "$PY" "$root/bench/hip.py"
cat "$out/summary.txt"
exit "$status"

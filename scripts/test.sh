#!/usr/bin/env bash
# Set up a fresh test environment and run every test that can run on this machine:
# the repo's unit tests (core, CPU, CUDA compile-only, HIP compile-only) and the
# conformance suite against the CPU backend. GPU tests skip with a one-line reason.
# Usage: bash scripts/test.sh            (venv in .venv-test; override with GOMPUTE_VENV=path)
set -euo pipefail
cd "$(dirname "$0")/.."
# Absolute: the install scripts cd elsewhere (pycuda builds inside its unpacked sdist).
venv="$(realpath -m "${GOMPUTE_VENV:-.venv-test}")"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
py="$venv/bin/python"
"$py" -m pip install -q --upgrade pip
# System pieces for the GPU compilers: ROCm 5.2's hiprtc (apt) and pycuda built
# against the local CUDA headers with a link-only libcuda stub when no driver exists.
bash backends/hip/install-rocm.sh "$py"
bash backends/cuda/install-pycuda.sh "$py"
"$py" -m pip install -q ".[test]" ./backends/cpu ./backends/cuda ./backends/hip
# The venv may sit inside the tree (the default does): lint only the project's files.
"$venv/bin/ruff" check --extend-exclude "$venv" .
"$venv/bin/gompute" info
exec "$py" -m pytest -q -p no:cacheprovider tests --pyargs gompute_core.testing --gompute-backend=cpu "$@"

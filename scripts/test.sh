#!/usr/bin/env bash
# Set up a fresh test environment and run every test that can run on this machine:
# the repo's unit tests (core, CPU, CUDA compile-only, HIP compile-only), then
# `gompute certify` of the CPU backend and of the OpenCL example on PoCL's CPU device
# (each runs the conformance suite once and exits non-zero unless certified).
# GPU tests skip with a one-line reason.
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
# The third-party-style OpenCL backend, with Debian's PoCL as its CPU OpenCL device (the
# PoCL that pip brings fails on CPUs newer than its LLVM: see install-pocl.sh).
bash examples/gompute-opencl/install-pocl.sh
"$py" -m pip install -q pyopencl pocl-binary-distribution ./examples/gompute-opencl
# The venv may sit inside the tree (the default does): lint only the project's files.
"$venv/bin/ruff" check --extend-exclude "$venv" .
# The core's layers (pyproject.toml [tool.importlinter], docs/architecture.md).
"$venv/bin/lint-imports"
# Every process but the OpenCL ones sees only the PoCL that comes with pyopencl (an empty
# vendors folder): Debian's, in /etc/OpenCL/vendors, aborts a process that also loads the
# HIP tests' ROCm comgr (tests/conftest.py says why).
export OCL_ICD_VENDORS="$venv/opencl-vendors-none"
mkdir -p "$OCL_ICD_VENDORS"
"$venv/bin/gompute" info
status=0
# pytest's exit 5 (nothing selected, e.g. `-k` naming only OpenCL tests) is not a failure
run_pytest() { "$@" || [ $? -eq 5 ] || status=1; }
run_pytest "$py" -m pytest -q -p no:cacheprovider -m "not opencl" tests "$@"
# OpenCL on Debian's PoCL, in a process without HIP: that PoCL and the ROCm 5.2 comgr the
# HIP tests load cannot share a process (tests/conftest.py says why).
opencl_env=(env OCL_ICD_VENDORS=/etc/OpenCL/vendors GOMPUTE_BACKENDS=cpu,opencl)
run_pytest "${opencl_env[@]}" "$py" -m pytest -q -p no:cacheprovider -m opencl tests "$@"
# The fuzz tier draws a fresh seed by default; CI pins one that passes (GOMPUTE_FUZZ_SEED
# overrides) so that a landing never depends on a draw: see DEVELOPERS.md on the rare
# mismatches fresh seeds still find.
fuzz=(-- "--gompute-fuzz-seed=${GOMPUTE_FUZZ_SEED:-20261130}")
"$venv/bin/gompute" certify cpu --junit-xml "$venv/certify-cpu.xml" "${fuzz[@]}" || status=1
"${opencl_env[@]}" "$venv/bin/gompute" certify opencl --junit-xml "$venv/certify-opencl.xml" "${fuzz[@]}" \
  || status=1
exit "$status"

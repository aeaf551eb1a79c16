#!/usr/bin/env bash
# Prepare, on a machine with package-index access, what run.sh needs on a GPU machine that
# has none: hip-python for Python 3.12 (only its hip/hiprtc bindings: the whole wheel's
# 67 MB is over the device tool's 64 MiB) and pyelftools.
#
#   bash tests/hip_on_cuda/carry.sh DIR      (e.g. .hipcarry, listed in .git/info/exclude)
#
#   HIP_PYTHON  the version spec (default 6.3.*: hip-python 6.2 has no cp312 wheel; 6.x
#               all resolve hipGetDevicePropertiesR0600, and tests/test_hip_on_cuda.py
#               checks the fixture's struct layout against the installed one)
set -euo pipefail
dir="$(realpath -m "${1:?usage: carry.sh DIR}")"
spec="${HIP_PYTHON:-6.3.*}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp "${platforms[@]}" -d "$work" "hip-python==$spec" "pyelftools>=0.30"
mkdir -p "$dir" "$work/site"
(cd "$work/site" && unzip -q "$work"/hip_python-*.whl 'hip/__init__.py' 'hip/_version.py' \
  'hip/_util/*' 'hip/hip.*' 'hip/chip.*' 'hip/hiprtc.*' 'hip/chiprtc.*' 'hip/hiprtc_pyext.py' \
  'hip/_hip_helpers.*' 'hip/_hiprtc_helpers.*' 'hip_python-*.dist-info/*' \
  && rm -f "$dir/hip-python-min.zip" && zip -q -r -9 "$dir/hip-python-min.zip" .)
cp "$work"/pyelftools-*.whl "$dir/"
ls -la "$dir"

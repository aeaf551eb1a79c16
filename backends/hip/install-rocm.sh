#!/usr/bin/env bash
# Install what the HIP backend needs to COMPILE on a Debian 12 machine without ROCm:
#   1. Debian's ROCm 5.2 packages (hiprtc lives inside libamdhip64.so.5 in that release),
#   2. hip-python 6.2.* into the given interpreter's environment,
#   3. a `libhiprtc.so` symlink to libamdhip64.so.5 in a directory gompute_hip searches
#      ($GOMPUTE_HIP_LIBDIR, default <interpreter prefix>/lib/gompute-hip).
# Idempotent: re-running changes nothing that is already in place.
# Usage: bash backends/hip/install-rocm.sh [PYTHON]      (default: python3)
# With a real ROCm install (>= 5.3, /opt/rocm) none of this is needed except hip-python
# matching your ROCm version: pip install "hip-python==<rocm major.minor>.*".
set -euo pipefail
py="${1:-python3}"
packages=(libamdhip64-5 libamdhip64-dev rocm-device-libs libamd-comgr2)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
fi

if ! "$py" -c 'import importlib.metadata as m, sys; sys.exit(not m.version("hip-python").startswith("6.2."))' \
        2>/dev/null; then
    "$py" -m pip install -q 'hip-python==6.2.*'
fi

libamdhip="$(ldconfig -p | awk '/libamdhip64\.so\.5 .*x86-64/ && !p {p = $NF} END {print p}')"  # no early exit: SIGPIPE + pipefail
if [ -z "$libamdhip" ]; then
    echo "install-rocm.sh: libamdhip64.so.5 not found by ldconfig after installing ${packages[*]}" >&2
    exit 1
fi
libdir="${GOMPUTE_HIP_LIBDIR:-$("$py" -c 'import sys; print(sys.prefix)')/lib/gompute-hip}"
mkdir -p "$libdir"
ln -sfn "$libamdhip" "$libdir/libhiprtc.so"
echo "install-rocm.sh: hiprtc = $libdir/libhiprtc.so -> $libamdhip"

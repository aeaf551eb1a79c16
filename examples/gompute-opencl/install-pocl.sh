#!/usr/bin/env bash
# Install a CPU OpenCL device for the OpenCL example's tests: Debian's PoCL (package
# pocl-opencl-icd, PoCL 3.1 on LLVM 15), registered in /etc/OpenCL/vendors.
#
# Why not only the PoCL that pip brings with pyopencl (PoCL 3.0 on LLVM 14): on CPUs newer
# than its LLVM (AMD Zen 5, seen on this project's machines) LLVM names the host CPU
# "generic" and that PoCL fails every build with "unknown target CPU 'generic'". Debian's
# PoCL picks a known target from the CPU's features instead (skylake-avx512 on Zen 5).
# pyopencl's own ICD loader reads /etc/OpenCL/vendors only when OCL_ICD_VENDORS names it:
#   export OCL_ICD_VENDORS=/etc/OpenCL/vendors     (scripts/test.sh does)
# Idempotent. Usage: bash examples/gompute-opencl/install-pocl.sh
set -euo pipefail
if ! dpkg-query -W -f='${Status}' pocl-opencl-icd 2>/dev/null | grep -q "install ok installed"; then
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
        pocl-opencl-icd >/dev/null
fi
[ -f /etc/OpenCL/vendors/pocl.icd ] || { echo "install-pocl.sh: no /etc/OpenCL/vendors/pocl.icd" >&2; exit 1; }

#!/usr/bin/env bash
# Build and install pycuda from source against a local CUDA toolkit.
#
#   bash backends/cuda/install-pycuda.sh [PYTHON]   (default: $PYTHON, else python3)
#
#   CUDA_ROOT   the toolkit (default /usr/local/cuda; needs include/cuda.h)
#   PYCUDA_VERSION  the sdist to build (default 2026.1)
#
# pycuda's extension links against libcuda.so, which only a driver installs. When the
# machine has none (CI, build containers), a link-only stub is compiled into a private
# directory: a shared object of empty cu* functions whose soname is libcuda.so.1, so the built
# extension records the real driver's name and loads it at run time on a GPU machine
# (without a driver, `import pycuda.driver` then fails cleanly and gompute-cuda reports
# "unavailable: <reason>"). pycuda bundles its Boost.Python subset (bpl-subset), so no
# system Boost is needed; CURAND is disabled (gompute does not use it).
set -euo pipefail
PYTHON="${1:-${PYTHON:-python3}}"
CUDA_ROOT="${CUDA_ROOT:-/usr/local/cuda}"
PYCUDA_VERSION="${PYCUDA_VERSION:-2026.1}"
if "$PYTHON" -c "import pycuda" 2>/dev/null; then
  echo "pycuda already installed: $("$PYTHON" -c 'import pycuda; print(pycuda.VERSION_TEXT)')"
  exit 0
fi
[ -f "$CUDA_ROOT/include/cuda.h" ] || { echo "install-pycuda: $CUDA_ROOT/include/cuda.h not found (set CUDA_ROOT)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
libdir="$CUDA_ROOT/lib64"
if ! ldconfig -p | grep -q 'libcuda\.so' && [ ! -e "$libdir/libcuda.so" ] && [ ! -e "$libdir/stubs/libcuda.so" ]; then
  libdir="$work/stub"
  mkdir -p "$libdir"
  # Export every cu* symbol cuda.h declares (after its _v2 renames), so the linker keeps
  # the stub as a needed library even with --as-needed.
  cc -E -P -I"$CUDA_ROOT/include" "$CUDA_ROOT/include/cuda.h" \
    | grep -oE '\bcu[A-Za-z0-9_]+[[:space:]]*\(' | sed -E 's/[[:space:]]*\($//' | sort -u \
    | sed -E 's/.*/void &(void) {}/' > "$work/stub.c"
  cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$libdir/libcuda.so" "$work/stub.c"
  echo "install-pycuda: no driver library; linking against a stub in $libdir"
elif [ ! -e "$libdir/libcuda.so" ] && [ -e "$libdir/stubs/libcuda.so" ]; then
  libdir="$libdir/stubs"
fi
"$PYTHON" -m pip download --no-deps --no-binary=pycuda -d "$work" "pycuda==$PYCUDA_VERSION"
tar -xzf "$work"/pycuda-*.tar.gz -C "$work"
src="$(find "$work" -maxdepth 1 -type d -name 'pycuda-*' | head -1)"
cat > "$src/siteconf.py" <<CONF
BOOST_INC_DIR = []
BOOST_LIB_DIR = []
BOOST_COMPILER = 'gcc43'
USE_SHIPPED_BOOST = True
BOOST_PYTHON_LIBNAME = []
BOOST_THREAD_LIBNAME = []
CUDA_TRACE = False
CUDA_ROOT = '$CUDA_ROOT'
CUDA_ENABLE_GL = False
CUDA_ENABLE_CURAND = False
CUDADRV_LIB_DIR = ['$libdir']
CUDADRV_LIBNAME = ['cuda']
CUDART_LIB_DIR = ['$CUDA_ROOT/lib64']
CUDART_LIBNAME = ['cudart']
CURAND_LIB_DIR = []
CURAND_LIBNAME = []
CXXFLAGS = []
LDFLAGS = []
CONF
start=$(date +%s)
(cd "$src" && "$PYTHON" -m pip install . )
echo "install-pycuda: built and installed pycuda $PYCUDA_VERSION in $(( $(date +%s) - start )) s"

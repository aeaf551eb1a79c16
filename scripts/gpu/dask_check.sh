#!/usr/bin/env bash
# Dask on CUDA (issue 11): tests/test_dask.py (its CuPy test runs here), then the issue's
# configuration of bench/dask_cpu.py: 2**33 f32 made on the GPUs in CuPy chunks of 2**28
# (32 chunks), map then sum, our graph and the same pipeline in CuPy under Dask on the same
# cluster, one single-threaded worker per GPU (CUDA_VISIBLE_DEVICES set per worker).
# Worker counts: 1,2 where two GPUs are visible, else 1. Each configuration runs with
# Dask's default scheduler settings and with worker-saturation inf (root tasks sent to the
# workers at once), then with the map as a separate step (--no-fuse), and once in the
# configuration of the last log (2**32 i64 in 16 chunks) for before/after.
# Usage: bash scripts/gpu/dask_check.sh [LOG]   (PY=python by default; dask, distributed
# and cupy importable, e.g. from /tmp/site on PYTHONPATH)
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PY:-python}"
log="${1:-dask-gpu-check.log}"
export DASK_LOGGING__DISTRIBUTED=warning  # the scheduler's and workers' INFO lines
export PYTHONPATH="$PWD:$PWD/backends/cpu:$PWD/backends/cuda${PYTHONPATH:+:$PYTHONPATH}"
gpus="$(nvidia-smi -L | grep -c '^GPU')"
workers=1
[ "$gpus" -ge 2 ] && workers=1,2
exec > >(tee "$log") 2>&1
echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD); $gpus GPU(s): workers $workers"
nvidia-smi -L
"$PY" -c "import dask, distributed, cupy; print('dask', dask.__version__, 'distributed', \
distributed.__version__, 'cupy', cupy.__version__)"
status=0
"$PY" -m pytest -q -p no:cacheprovider -rs tests/test_dask.py || status=1
bench=(bench/dask_cpu.py --backend cuda --cupy --workers "$workers" --repeats 5)
issue=(--dtype f32 --log2n 33 --chunks 32)
for saturation in 1.1 inf; do
  echo "== issue configuration, worker-saturation $saturation"
  "$PY" "${bench[@]}" "${issue[@]}" --worker-saturation "$saturation" || status=1
done
echo "== issue configuration, map as a separate step (--no-fuse)"
"$PY" "${bench[@]}" "${issue[@]}" --no-fuse || status=1
echo "== the last log's configuration (2**32 i64 in 16 chunks)"
"$PY" "${bench[@]}" --dtype i64 --log2n 32 --chunks 16 || status=1
exit "$status"

#!/usr/bin/env bash
# Set up a fresh virtual environment with the core and the CPU backend, then run the demo.
# Usage: bash scripts/demo.sh            (venv in .venv; override with GOMPUTE_VENV=path)
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${GOMPUTE_VENV:-.venv}"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q . ./backends/cpu
"$venv/bin/gompute" info
"$venv/bin/gompute" demo

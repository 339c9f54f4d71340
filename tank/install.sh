#!/usr/bin/env bash
# Install the pinned pufferbox stack into a virtualenv. Used by `make setup` and the Dockerfile.
#   PYTHON   interpreter that creates the venv (default python3.11)
#   VENV     venv path (default .venv); set VENV= to use the current interpreter instead
#   EDITABLE 1 (default) installs pufferbox and plugins editable; 0 installs them normally
#   EXTRAS   extra pip arguments (e.g. "pycuda" in the tank)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
VENV=${VENV-.venv}
EDITABLE=${EDITABLE:-1}
if [ -n "$VENV" ]; then
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  PY="$VENV/bin/python"
else
  PY="$PYTHON"
fi
"$PY" -m pip install --quiet --upgrade pip setuptools wheel -c tank/constraints.txt
# torch first and pinned: an unpinned torch anywhere pulls GBs of CUDA wheels.
# Its CUDA wheels (Linux, no local CPU wheel) are pinned in constraints-cuda.txt.
"$PY" -m pip install --quiet -c tank/constraints.txt -c tank/constraints-cuda.txt torch
targets=(".[ray,test,sb3,sweep,wandb,export,docs]")
for plugin in plugins/*/; do
  [ -f "$plugin/pyproject.toml" ] && targets+=("$plugin")
done
args=()
for t in "${targets[@]}"; do
  if [ "$EDITABLE" = 1 ]; then args+=(-e "$t"); else args+=("$t"); fi
done
"$PY" -m pip install --quiet -c tank/constraints.txt "${args[@]}" ${EXTRAS:-}
"$PY" -m pip check
echo "pufferbox stack installed in ${VENV:-the current environment}"

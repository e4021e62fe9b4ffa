#!/usr/bin/env bash
# Create .venv and install labcore with every pinned dependency (constraints.txt).
# Idempotent: a second call with unchanged pins returns at once.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  echo "labcore needs Python >= 3.11 (found $("$PY" --version 2>&1))" >&2; exit 1
fi
stamp=.venv/.labcore-installed
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# torch first, pinned: pip picks the CPU build for torch==2.13.0 where one is offered
.venv/bin/python -m pip install --quiet -c constraints.txt "torch==2.13.0"
.venv/bin/python -m pip install --quiet -c constraints.txt -e ".[all]"
.venv/bin/python -m ipykernel install --sys-prefix --name python3 >/dev/null 2>&1 || true
echo "$want" > "$stamp"
echo "labcore installed in .venv"

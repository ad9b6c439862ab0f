#!/usr/bin/env bash
# The Python package's suite: ruff and mypy (strict) on the package, ruff on the in-sandbox
# agent's Python, then pytest against a real local engine that the package starts itself, with
# the frameworks' pinned releases from PyPI (agentnest-python/requirements-test.txt).
# The virtual environment is cached under ~/.cache/agentnest/python-test (rebuilt when the pins
# change); the package itself is installed afresh each run, as a user installs it.
# Usage: scripts/test-python.sh [pytest args]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
log() { printf '[python] %s\n' "$*" >&2; }

pins="agentnest-python/requirements-test.txt"
venv="${AGENTNEST_PY_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/agentnest/python-test}"
stamp="$venv/.pins-$(sha256sum "$pins" | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  log "creating $venv with the pinned test dependencies (PyPI)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q -r "$pins"
  touch "$stamp"
fi

# The engine jar the package bundles: the launcher builds it when the sources changed.
./agentnest --version >/dev/null
log "installing ./agentnest-python into $venv (as a user would: pip install ./agentnest-python)"
"$venv/bin/pip" install -q --force-reinstall --no-deps ./agentnest-python

log "ruff and mypy"
"$venv/bin/ruff" check agentnest-python/src agentnest-python/tests
# The in-sandbox agent (standard library only; its own ruff.toml).
"$venv/bin/ruff" check agentnest-agent/src
(cd agentnest-python && "$venv/bin/mypy")

# The base image the sandboxes run (built offline once; see README).
if ! docker image inspect agentnest/python:latest >/dev/null 2>&1; then
  log "building agentnest/python:latest"
  java -jar agentnest-cli/target/agentnest.jar image build >&2
fi

log "pytest (a real local engine per test home; Java and Docker are required, never skipped)"
cd agentnest-python
# From the tests directory's parent but against the installed package, not the source tree.
"$venv/bin/python" -m pytest -p no:cacheprovider --import-mode=importlib "$@" tests

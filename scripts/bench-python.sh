#!/usr/bin/env bash
# Side by side, in one run: the Python package (through the local engine), the Java API in
# process (`agentnest bench`), and the seed's published Python package (`agentnest` 0.3.0 from
# PyPI, in a virtual environment of its own), on the same image and host. Prints p50/p95 per
# operation and the ratios the Python issue sets as targets.
# Usage: scripts/bench-python.sh [ITERATIONS] [COLD_ITERATIONS]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
n="${1:-50}"
cold="${2:-10}"
image=agentnest/python:latest
cache="${XDG_CACHE_HOME:-$HOME/.cache}/agentnest"
log() { printf '[bench-python] %s\n' "$*" >&2; }

./agentnest --version >/dev/null
ours="$cache/python-bench"
if [ ! -x "$ours/bin/python" ]; then
  python3 -m venv "$ours"
fi
"$ours/bin/pip" install -q --force-reinstall --no-deps ./agentnest-python
ref="$cache/python-reference-0.3.0"
if [ ! -x "$ref/bin/python" ]; then
  log "installing the published agentnest 0.3.0 (PyPI) into $ref"
  python3 -m venv "$ref"
  "$ref/bin/pip" install -q 'agentnest==0.3.0'
fi
home="$(mktemp -d /tmp/an-bench-XXXXXX)"
trap 'AGENTNEST_HOME="$home" "$ours/bin/python" -c "from agentnest import _engine; _engine.stop()"; rm -rf "$home"' EXIT

log "Java in process: agentnest bench --only exec,session -n $n"
java -jar agentnest-cli/target/agentnest.jar bench --only exec,session -n "$n" --json >"$home/java.json"
log "this package (local engine)"
AGENTNEST_HOME="$home" "$ours/bin/python" agentnest-python/bench/ops.py ours "$image" "$n" "$cold" >"$home/ours.json"
log "the published agentnest 0.3.0"
(cd "$home" && "$ref/bin/python" "$root/agentnest-python/bench/ops.py" reference "$image" "$n" "$cold") >"$home/ref.json"
python3 - "$home/java.json" "$home/ours.json" "$home/ref.json" <<'PY'
import json, sys
java_raw = json.load(open(sys.argv[1]))
ours = json.load(open(sys.argv[2]))
ref = json.load(open(sys.argv[3]))
def java_p50(name):
    for r in java_raw["results"]:
        if r["op"] == name:
            return r["p50_ms"]
    raise SystemExit(f"agentnest bench printed no '{name}' row: {java_raw}")
rows = [
    ("Sandbox() to first result", "cold_to_first_result", None),
    ('exec_shell("echo hi"), warm', "exec_shell_echo", "exec"),
    ("session call (x = 1), warm", "session_call", "session"),
]
print(f"{'operation':34} {'python p50/p95 ms':>20} {'java p50':>9} {'py/java':>8} {'0.3.0 p50/p95 ms':>20} {'0.3.0/py':>9}")
for label, key, jname in rows:
    o, r = ours[key], ref[key]
    j = java_p50(jname) if jname else None
    pj = f"{o['p50_ms'] / j:.2f}x" if j else "-"
    print(f"{label:34} {o['p50_ms']:>9.2f}/{o['p95_ms']:<9.2f} {(j or 0):>9.2f} {pj:>8} {r['p50_ms']:>9.2f}/{r['p95_ms']:<9.2f} {r['p50_ms'] / o['p50_ms']:>8.1f}x")
PY

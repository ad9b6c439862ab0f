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
# The base image with a `python` command beside `python3`: the published package's sessions start
# `python` (so both packages run on the same image); removed again at the end.
image=agentnest-bench/python:latest
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
trap 'AGENTNEST_HOME="$home" "$ours/bin/python" -c "from agentnest import _engine; _engine.stop()"; rm -rf "$home"; docker rmi -f "$image" >/dev/null 2>&1 || true' EXIT
printf 'FROM agentnest/python:latest\nRUN ["/usr/bin/ln", "-sf", "/usr/bin/python3", "/usr/local/bin/python"]\n' \
  | DOCKER_BUILDKIT=0 docker build -q -t "$image" - >/dev/null

log "Java in process: agentnest bench --only exec,session -n $n --warmup 2000"
AGENTNEST_HOME="$home/java-home" java -jar agentnest-cli/target/agentnest.jar bench --only exec,session -n "$n" --warmup 2000 --json >"$home/java.json"
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
    ("first call (starts the engine)", "first_call_with_engine_start", None, "cold_to_first_result"),
    ("Sandbox() to first result, cold", "cold_to_first_result", None, "cold_to_first_result"),
    ("Sandbox() pooled, fresh engine", "pooled_to_first_result_fresh_engine", None, None),
    ("Sandbox() pooled, engine in use", "pooled_to_first_result", None, None),
    ('exec_shell("echo hi"), warm', "exec_shell_echo", "exec", "exec_shell_echo"),
    ("session call (x = 1), warm", "session_call", "session", "session_call"),
]
print(f"{'operation':36} {'python p50/p95 ms':>20} {'java p50':>9} {'py/java':>8} {'0.3.0 p50/p95 ms':>20} {'0.3.0/py':>9}")
for label, key, jname, rkey in rows:
    o = ours[key]
    j = java_p50(jname) if jname else None
    pj = f"{o['p50_ms'] / j:.2f}x" if j else "-"
    js = f"{j:>9.2f}" if j else f"{'-':>9}"
    if rkey:
        r = ref[rkey]
        rs = f"{r['p50_ms']:>9.2f}/{r['p95_ms']:<9.2f} {r['p50_ms'] / o['p50_ms']:>8.1f}x"
    else:
        rs = f"{'-':>20} {'-':>9}"
    print(f"{label:36} {o['p50_ms']:>9.2f}/{o['p95_ms']:<9.2f} {js} {pj:>8} {rs}")
print("targets (issue 45): warm exec_shell and session call <= 1.5x Java; cold <= the published"
      " package's cold; pooled <= 25 ms p50")
PY

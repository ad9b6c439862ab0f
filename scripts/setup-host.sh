#!/usr/bin/env bash
# Installs and starts what AgentNest needs on a Debian 12 host: Docker engine, gVisor (runsc),
# mmdebstrap; registers runsc with Docker. Idempotent: each step checks first and skips what is
# already there. The base image is built by 'agentnest image build'.
set -euo pipefail

log() { printf '[setup] %s\n' "$*" >&2; }

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    log "not root: skipping package installs and daemon start (run as root, or install Docker yourself)"
    return 1
  fi
}

install_packages() {
  local missing=()
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  command -v runsc >/dev/null 2>&1 || missing+=(runsc)
  command -v mmdebstrap >/dev/null 2>&1 || missing+=(mmdebstrap)
  # Node.js and npm: the MCP integration tests drive 'agentnest mcp' with real MCP clients from npm.
  command -v node >/dev/null 2>&1 || missing+=(nodejs)
  command -v npm >/dev/null 2>&1 || missing+=(npm)
  if [ "${#missing[@]}" -eq 0 ]; then
    log "packages present: dockerd runsc mmdebstrap node npm"
    return 0
  fi
  need_root || return 0
  log "installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

write_daemon_json() {
  need_root || return 0
  local want='{"runtimes":{"runsc":{"path":"/usr/bin/runsc","runtimeArgs":["--network=none"]}},"experimental":true}'
  mkdir -p /etc/docker
  if [ -f /etc/docker/daemon.json ] && grep -q '"runsc"' /etc/docker/daemon.json && grep -q '"experimental"' /etc/docker/daemon.json; then
    log "daemon.json already registers runsc"
    return 0
  fi
  if [ -f /etc/docker/daemon.json ] && [ -s /etc/docker/daemon.json ]; then
    cp /etc/docker/daemon.json "/etc/docker/daemon.json.agentnest-backup.$(date +%s)"
    python3 - "$want" <<'PY'
import json, sys
want = json.loads(sys.argv[1])
path = "/etc/docker/daemon.json"
with open(path) as f:
    cur = json.load(f)
cur.setdefault("runtimes", {}).update(want["runtimes"])
cur["experimental"] = True
with open(path, "w") as f:
    json.dump(cur, f, indent=2)
PY
  else
    echo "$want" >/etc/docker/daemon.json
  fi
  log "wrote /etc/docker/daemon.json (runsc runtime, experimental)"
  DAEMON_JSON_CHANGED=1
}

docker_up() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

start_dockerd() {
  if docker_up && [ "${DAEMON_JSON_CHANGED:-0}" = 0 ]; then
    log "docker engine running: $(docker version --format '{{.Server.Version}}')"
    return 0
  fi
  need_root || return 0
  if docker_up && [ "${DAEMON_JSON_CHANGED:-0}" = 1 ]; then
    log "restarting dockerd to apply daemon.json"
    pkill -TERM -x dockerd || true
    for _ in $(seq 1 100); do pgrep -x dockerd >/dev/null || break; sleep 0.2; done
  fi
  log "starting dockerd"
  mkdir -p /var/log/agentnest
  # setsid: the daemon must outlive this script and the CI step that ran it.
  setsid nohup dockerd >/var/log/agentnest/dockerd.log 2>&1 </dev/null &
  for _ in $(seq 1 150); do
    if docker_up; then
      log "docker engine running: $(docker version --format '{{.Server.Version}}')"
      return 0
    fi
    sleep 0.2
  done
  log "dockerd did not come up in 30 s; see /var/log/agentnest/dockerd.log"
  tail -n 20 /var/log/agentnest/dockerd.log >&2 || true
  return 1
}

DAEMON_JSON_CHANGED=0
install_packages
write_daemon_json
start_dockerd

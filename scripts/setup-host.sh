#!/usr/bin/env bash
# Installs and starts what AgentNest needs on a Debian 12 host: Docker engine, gVisor (runsc, from
# bookworm-backports),
# mmdebstrap (and, for the tests, Node.js, Chromium, git, PostgreSQL); registers runsc with Docker. Idempotent: each step checks first and skips what is
# already there. The base image is built by 'agentnest image build'.
set -euo pipefail

DAEMON_JSON="${AGENTNEST_DAEMON_JSON:-/etc/docker/daemon.json}"

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
  command -v mmdebstrap >/dev/null 2>&1 || missing+=(mmdebstrap)
  # Node.js and npm: the MCP integration tests drive 'agentnest mcp' with real MCP clients from npm.
  command -v node >/dev/null 2>&1 || missing+=(nodejs)
  command -v npm >/dev/null 2>&1 || missing+=(npm)
  # Chromium and its WebDriver: the web console's browser tests (Selenium, headless).
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
  # git: the git workspace tests serve repositories with 'git http-backend' on the host.
  command -v git >/dev/null 2>&1 || missing+=(git)
  # PostgreSQL 15: the server's shared store (store.postgres) and its integration tests run a
  # private cluster of scripts/postgres.sh from these binaries (the package's own cluster is unused).
  [ -x /usr/lib/postgresql/15/bin/initdb ] || missing+=(postgresql)
  # QEMU: the microvm backend runs each sandbox as a guest of its 'microvm' machine. Without
  # recommends: no GUI, firmware or tools the backend does not use.
  local lean=()
  command -v qemu-system-x86_64 >/dev/null 2>&1 || lean+=(qemu-system-x86)
  if [ "${#missing[@]}" -eq 0 ] && [ "${#lean[@]}" -eq 0 ]; then
    log "packages present: dockerd mmdebstrap node npm chromium chromedriver git qemu postgresql"
    return 0
  fi
  need_root || return 0
  log "installing: ${missing[*]} ${lean[*]}"
  apt-get update -qq
  if [ "${#missing[@]}" -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  if [ "${#lean[@]}" -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${lean[@]}" >/dev/null
  fi
}

# gVisor from Debian 12's backports (release 20240729) rather than Debian 12's own (20221219): the
# newer one runs on the systrap platform, where a system call in the sandbox costs about half of
# what it does on the older one's ptrace platform (21 vs 44 us here, os.getppid in a loop), which
# halves a pooled gVisor sandbox's hand-out and shortens every start (docs/runtimes.md). An older
# runsc is upgraded; elsewhere (not Debian 12) the distribution's own is installed.
RUNSC_MIN_RELEASE=20240729

runsc_release() {
  # "runsc version 0.0~20240729.0" (Debian) or "runsc version release-20240729.0" (upstream).
  # All of its output first: a pipe into 'head' could end runsc with SIGPIPE, which pipefail counts.
  local v
  v="$(runsc --version 2>/dev/null)" || return 0
  sed -n '1s/.*[^0-9]\(20[0-9]\{6\}\).*/\1/p' <<<"$v"
}

bookworm() { grep -qs '^VERSION_CODENAME=bookworm' /etc/os-release; }

install_runsc() {
  local have=""
  command -v runsc >/dev/null 2>&1 && have="$(runsc_release)"
  if [ -n "$have" ] && { [ "$have" -ge "$RUNSC_MIN_RELEASE" ] || ! bookworm; }; then
    log "runsc present: release $have"
    return 0
  fi
  if [ -z "$have" ] && command -v runsc >/dev/null 2>&1 && ! bookworm; then
    log "runsc present (release unknown)"
    return 0
  fi
  need_root || return 0
  if ! bookworm; then
    log "installing runsc"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq runsc >/dev/null
    return 0
  fi
  local src=/etc/apt/sources.list.d/agentnest-bookworm-backports.sources
  if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    # Backports are pinned below the release by default: only what is asked for with -t comes
    # from them.
    printf '%s\n' 'Types: deb' 'URIs: http://deb.debian.org/debian' 'Suites: bookworm-backports' \
      'Components: main' 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' >"$src"
    log "added $src"
  fi
  log "installing runsc from bookworm-backports${have:+ (replacing release $have)}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t bookworm-backports runsc >/dev/null
  log "runsc release $(runsc_release)"
}

# runsc applies the sandbox's seccomp profile inside gVisor only with --oci-seccomp (where this
# runsc has the flag; an older one would refuse to start with it).
runsc_args() {
  # Read all of runsc's output first: 'grep -q' would stop early and pipefail count runsc's SIGPIPE.
  if command -v runsc >/dev/null 2>&1 && grep -q -- '-oci-seccomp' <<<"$(runsc flags 2>&1)"; then
    echo '["--network=none","--oci-seccomp"]'
  else
    echo '["--network=none"]'
  fi
}

write_daemon_json() {
  need_root || return 0
  mkdir -p "$(dirname "$DAEMON_JSON")"
  local change
  # Prints what the daemon needs to see the new file: none, reload (runtimes are reloadable with
  # SIGHUP) or restart (experimental is not).
  change="$(python3 - "$(runsc_args)" "$DAEMON_JSON" <<'PY'
import json, os, sys
path = sys.argv[2]
want_args = json.loads(sys.argv[1])
cur = {}
if os.path.exists(path) and os.path.getsize(path) > 0:
    with open(path) as f:
        cur = json.load(f)
new = json.loads(json.dumps(cur))
runsc = new.setdefault("runtimes", {}).setdefault("runsc", {})
runsc.setdefault("path", "/usr/bin/runsc")
args = runsc.setdefault("runtimeArgs", [])
for a in want_args:
    if a not in args:
        args.append(a)
new["experimental"] = True
if new == cur:
    print("none")
    sys.exit(0)
if cur:
    os.rename(path, "%s.agentnest-backup.%d" % (path, int(os.path.getmtime(path))))
with open(path, "w") as f:
    json.dump(new, f, indent=2)
print("restart" if cur.get("experimental") is not True else "reload")
PY
)"
  case "$change" in
    none) log "$DAEMON_JSON already registers runsc ($(runsc_args)) with experimental on" ;;
    reload) log "updated runsc's runtimeArgs in $DAEMON_JSON: $(runsc_args)"; DAEMON_JSON_RELOAD=1 ;;
    restart) log "wrote $DAEMON_JSON (runsc runtime $(runsc_args), experimental)"; DAEMON_JSON_CHANGED=1 ;;
    *) log "could not update $DAEMON_JSON: $change"; return 1 ;;
  esac
}

docker_up() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

# The engine this host's Docker CLI talks to is someone else's to run when DOCKER_HOST names
# another socket or host, or a Docker context other than the default is in use: never started,
# restarted or reloaded from here.
foreign_engine() {
  local h="${DOCKER_HOST:-}"
  if [ -n "$h" ] && [ "$h" != unix:///var/run/docker.sock ] && [ "$h" != unix:///run/docker.sock ]; then
    echo "DOCKER_HOST=$h"
    return 0
  fi
  local ctx
  ctx="${DOCKER_CONTEXT:-$(docker context show 2>/dev/null || echo default)}"
  if [ -n "$ctx" ] && [ "$ctx" != default ]; then
    echo "Docker context '$ctx'"
    return 0
  fi
  return 1
}

start_dockerd() {
  local foreign
  if foreign="$(foreign_engine)"; then
    if docker_up; then
      log "docker engine of $foreign running: $(docker version --format '{{.Server.Version}}')"
      return 0
    fi
    log "the Docker engine of $foreign does not answer: $(docker version 2>&1 | grep -iE 'error|cannot' | head -n 1)"
    log "that engine is yours to start (this script starts only the host's default one); unset DOCKER_HOST to use it"
    return 1
  fi
  if docker_up && [ "${DAEMON_JSON_CHANGED:-0}" = 0 ]; then
    if [ "${DAEMON_JSON_RELOAD:-0}" = 1 ] && need_root; then
      # Runtimes reload on SIGHUP: sandboxes already running (anyone's) are left alone.
      log "reloading dockerd's runtimes (SIGHUP)"
      kill -HUP "$(pidof dockerd)"
      for _ in $(seq 1 50); do
        [ "$(docker info --format '{{json .Runtimes.runsc}}' 2>/dev/null)" != "null" ] && break
        sleep 0.2
      done
    fi
    log "docker engine running: $(docker version --format '{{.Server.Version}}')"
    return 0
  fi
  need_root || return 0
  if docker_up && [ "${DAEMON_JSON_CHANGED:-0}" = 1 ]; then
    log "restarting dockerd to apply daemon.json"
    pkill -TERM -x dockerd || true
    for _ in $(seq 1 100); do pgrep -x dockerd >/dev/null || break; sleep 0.2; done
  fi
  if pgrep -x dockerd >/dev/null; then
    # A daemon that runs but does not answer: a second one would only fail on its pid file.
    log "dockerd (pid $(pgrep -x dockerd | head -n 1)) is running but does not answer: $(docker version 2>&1 | grep -iE 'error|cannot' | head -n 1)"
    log "see /var/log/agentnest/dockerd.log (if this script started it), or restart it yourself"
    return 1
  fi
  log "starting dockerd"
  mkdir -p /var/log/agentnest
  # setsid: the daemon must outlive this script and the CI step that ran it. Appended, never
  # truncated: an earlier daemon's log is the user's evidence.
  setsid nohup dockerd >>/var/log/agentnest/dockerd.log 2>&1 </dev/null &
  for _ in $(seq 1 150); do
    if docker_up; then
      log "docker engine running: $(docker version --format '{{.Server.Version}}')"
      return 0
    fi
    sleep 0.2
  done
  log "dockerd did not come up in 30 s; the end of /var/log/agentnest/dockerd.log:"
  tail -n 20 /var/log/agentnest/dockerd.log >&2 || true
  return 1
}

DAEMON_JSON_CHANGED=0
DAEMON_JSON_RELOAD=0
install_packages
install_runsc
write_daemon_json
start_dockerd

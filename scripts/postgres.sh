#!/usr/bin/env bash
# A private PostgreSQL cluster for the server's shared store (store.postgres in server.yaml) and its
# integration tests: Debian's PostgreSQL 15 binaries, its own data directory under a state
# directory, never the system's cluster. It listens on 127.0.0.1 only (a free port chosen on the
# first 'up' and kept) and on a Unix socket in its own directory, runs as the 'postgres' system user
# (initdb refuses root), asks every client for a password (scram-sha-256) and logs to a file in its
# state directory. The superuser is 'agentnest' with a random password made on the first 'up'.
#
#   postgres.sh up       initialise (first time) and start; idempotent; prints the JDBC URL
#   postgres.sh down     stop it (the data stays; 'up' starts it again)
#   postgres.sh status   exit 0 when it accepts connections
#   postgres.sh url      print the JDBC URL of its 'postgres' database
#   postgres.sh env      print export lines for the integration tests (AGENTNEST_TEST_POSTGRES_*)
#   postgres.sh destroy  stop it and remove its state directory
#
# AGENTNEST_PG_STATE names the state directory (default /var/lib/agentnest-pg).
set -euo pipefail

S="${AGENTNEST_PG_STATE:-/var/lib/agentnest-pg}"
PG_VERSION=15
BIN="/usr/lib/postgresql/$PG_VERSION/bin"
RUN_AS=postgres
SUPERUSER=agentnest
DATA="$S/data"
SOCKDIR="$S/run"
LOG="$S/log/postgres.log"

log() { printf '[postgres] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u "$RUN_AS" -- "$@"
  else
    "$@"
  fi
}

check_binaries() {
  [ -x "$BIN/initdb" ] && [ -x "$BIN/pg_ctl" ] ||
    die "no PostgreSQL $PG_VERSION in $BIN: install Debian's 'postgresql' package (scripts/setup-host.sh does)"
  if [ "$(id -u)" -eq 0 ]; then
    id -u "$RUN_AS" >/dev/null 2>&1 || die "no '$RUN_AS' user: the 'postgresql' package makes it"
  fi
}

# A TCP port nobody listens on (asked of the kernel, so two machines' runs never pick by guess).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

port() { cat "$S/port"; }
port_free() {
  python3 -c 'import socket, sys; s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.close()' "$1" 2>/dev/null
}
password() { cat "$S/password"; }
url() { echo "jdbc:postgresql://127.0.0.1:$(port)/postgres"; }

running() { [ -f "$DATA/PG_VERSION" ] && as_owner "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }
ready() { "$BIN/pg_isready" -q -h 127.0.0.1 -p "$(port)" -t 2 >/dev/null 2>&1; }

init() {
  [ -f "$DATA/PG_VERSION" ] && return 0
  log "initialising a cluster in $DATA"
  mkdir -p "$S/log" "$SOCKDIR"
  [ -f "$S/port" ] || free_port >"$S/port"
  # The password is readable by root (the tests and the operator), never by the sandboxes' users.
  if [ ! -s "$S/password" ]; then
    (umask 077; head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$S/password")
  fi
  local pwfile
  pwfile="$(mktemp "$S/pw.XXXXXX")"
  password >"$pwfile"
  if [ "$(id -u)" -eq 0 ]; then
    chown -R "$RUN_AS:" "$S/log" "$SOCKDIR" "$pwfile"
    install -d -o "$RUN_AS" -m 700 "$DATA"
  else
    install -d -m 700 "$DATA"
  fi
  as_owner "$BIN/initdb" -D "$DATA" -U "$SUPERUSER" --pwfile="$pwfile" \
    --auth-host=scram-sha-256 --auth-local=scram-sha-256 -E UTF8 --locale=C.UTF-8 \
    >"$S/log/initdb.log" 2>&1 || { rm -f "$pwfile"; die "initdb failed: see $S/log/initdb.log"; }
  rm -f "$pwfile"
  cat >>"$DATA/postgresql.conf" <<EOF
# agentnest: loopback and its own socket directory only, never the system cluster's
listen_addresses = '127.0.0.1'
port = $(port)
unix_socket_directories = '$SOCKDIR'
password_encryption = scram-sha-256
max_connections = 200
shared_buffers = 64MB
fsync = on
EOF
}

up() {
  check_binaries
  init
  if ! running; then
    # The port kept from the first 'up' may have been taken since: move to a free one (the last
    # 'port' line of postgresql.conf wins; 'url' and 'env' read the new one).
    if ! port_free "$(port)"; then
      free_port >"$S/port"
      echo "port = $(port)" >>"$DATA/postgresql.conf"
      log "the kept port was taken: moving to 127.0.0.1:$(port)"
    fi
    log "starting on 127.0.0.1:$(port) (log: $LOG)"
    as_owner "$BIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 30 start >/dev/null ||
      die "PostgreSQL did not start within 30 s: see $LOG"
  fi
  local i
  for ((i = 0; i < 100; i++)); do
    ready && { url; return 0; }
    sleep 0.1
  done
  die "PostgreSQL runs but does not answer on 127.0.0.1:$(port) within 10 s: see $LOG"
}

down() {
  [ -f "$DATA/PG_VERSION" ] || return 0
  if running; then
    as_owner "$BIN/pg_ctl" -D "$DATA" -m fast -w -t 30 stop >/dev/null || die "PostgreSQL did not stop: see $LOG"
    log "stopped"
  fi
}

need_state() { [ -f "$S/port" ] && [ -f "$S/password" ] || die "no cluster in $S: run '$0 up' first"; }

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) [ -f "$S/port" ] && running && ready ;;
  url) need_state; url ;;
  env)
    need_state
    printf 'export AGENTNEST_TEST_POSTGRES_URL=%q\n' "$(url)"
    printf 'export AGENTNEST_TEST_POSTGRES_USER=%q\n' "$SUPERUSER"
    printf 'export AGENTNEST_TEST_POSTGRES_PASSWORD=%q\n' "$(password)"
    ;;
  destroy)
    down
    rm -rf "$S"
    ;;
  *)
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2
    exit 2
    ;;
esac

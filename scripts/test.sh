#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine or an existing one: installs and starts
# what it needs (Docker engine, runsc, mmdebstrap, PostgreSQL; idempotent), a private PostgreSQL
# (scripts/postgres.sh) and a single-node Kubernetes cluster on loopback (built from Debian's
# sources on the first run; both stopped again at the end unless they were running), then runs
# `./mvnw install` (unit tests, integration tests against the real engine, the cluster and
# PostgreSQL, formatting and static checks, coverage), README's Java example
# from the installed BOM (scripts/consumer-check.sh) and the Python package's suite
# (scripts/test-python.sh); at the end it removes io/agentnest from the local Maven repository
# again and checks that the run left nothing behind (temporary directories, containers).
# About 35-45 minutes with the caches warm.
# Under CI=true a missing Docker engine, cluster or PostgreSQL fails the integration tests instead of skipping them.
# Usage: scripts/test.sh [MAVEN ARGS...]   (passed to `./mvnw install`, e.g. -DskipITs)
#        scripts/test.sh -h | --help       (prints this and touches nothing)
set -euo pipefail
case "${1:-}" in
  # Before anything else: the run below starts a cluster and empties io/agentnest in the local
  # Maven repository, which asking for help must never do.
  -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
esac
cd "$(dirname "$0")/.."
scripts/setup-host.sh
# A real single-node Kubernetes cluster on loopback for the Kubernetes backend (Kubernetes 1.35,
# containerd 2 and gVisor's shim, built from Go modules on the first run and cached; see
# docs/kubernetes.md).
# The cluster is stopped again at the end when this run started it (its control plane costs about
# 0.15 of a core all the time and skews any benchmark after it); AGENTNEST_KEEP_CLUSTER=1 keeps it.
cluster_was_up=0
scripts/k8s/cluster.sh status >/dev/null 2>&1 && cluster_was_up=1
KUBECONFIG="$(scripts/k8s/cluster.sh up)"
export KUBECONFIG
# A private PostgreSQL on loopback for the server's shared store (scripts/postgres.sh), stopped
# again at the end when this run started it; the integration tests make and drop their own
# databases in it and find it through AGENTNEST_TEST_POSTGRES_URL, _USER and _PASSWORD.
postgres_was_up=0
scripts/postgres.sh status >/dev/null 2>&1 && postgres_was_up=1
scripts/postgres.sh up >/dev/null
eval "$(scripts/postgres.sh env)"
state="$(mktemp -d /tmp/suite-state.XXXXXX)"
finish() {
  rm -rf "$state"
  # What install put in the local repository goes again, whether or not the run passed: a later
  # build must never pick these up instead of the checkout's own (a `-pl` build without `-am`
  # would, silently; the fresh-clone check verifies the launcher needs none).
  rm -rf "${MAVEN_LOCAL_REPO:-$HOME/.m2/repository}/io/agentnest"
  if [ "$postgres_was_up" = 0 ]; then
    scripts/postgres.sh down >/dev/null 2>&1 || true
  fi
  if [ "$cluster_was_up" = 0 ] && [ "${AGENTNEST_KEEP_CLUSTER:-0}" != 1 ]; then
    scripts/k8s/cluster.sh down >/dev/null 2>&1 || true
    echo "[test] stopped the Kubernetes test cluster this run started (AGENTNEST_KEEP_CLUSTER=1 keeps it)" >&2
  elif [ "$cluster_was_up" = 0 ]; then
    echo "[test] the Kubernetes test cluster keeps running (scripts/k8s/cluster.sh down stops it)" >&2
  fi
}
trap finish EXIT
touch "$state/start"
docker ps -aq --no-trunc --filter label=agentnest.managed >"$state/containers-before" 2>/dev/null || true
# --fail-at-end: one module's failing tests do not hide whether the later modules pass.
# install (verify, then the artifacts into the local Maven repository): README's Java example is
# then built by a separate project from the BOM coordinates, as a Maven user gets them.
./mvnw -B -ntp --fail-at-end install "$@"
scripts/consumer-check.sh
# The Python package (agentnest-python): ruff, mypy, and pytest against a real local engine and
# the frameworks' pinned releases from PyPI.
scripts/test-python.sh
scripts/check-leftovers.sh "$state/start" "$state/containers-before"

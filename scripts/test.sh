#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine or an existing one: installs and starts
# what it needs (Docker engine, runsc, mmdebstrap; idempotent), then runs unit tests,
# integration tests against the real engine, formatting and static checks, and coverage; at the
# end it checks that the run left nothing behind (temporary directories, containers).
# Under CI=true a missing Docker engine or cluster fails the integration tests instead of skipping them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-host.sh
# A real single-node Kubernetes cluster on loopback for the Kubernetes backend (built from
# Debian's sources on the first run and cached; see docs/kubernetes.md).
KUBECONFIG="$(scripts/k8s/cluster.sh up)"
export KUBECONFIG
state="$(mktemp -d /tmp/suite-state.XXXXXX)"
trap 'rm -rf "$state"' EXIT
touch "$state/start"
docker ps -aq --no-trunc --filter label=agentnest.managed >"$state/containers-before" 2>/dev/null || true
# --fail-at-end: one module's failing tests do not hide whether the later modules pass.
./mvnw -B -ntp --fail-at-end verify "$@"
scripts/check-leftovers.sh "$state/start" "$state/containers-before"

#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine or an existing one: installs and starts
# what it needs (Docker engine, runsc, mmdebstrap; idempotent), then runs unit tests,
# integration tests against the real engine, formatting and static checks, and coverage.
# Under CI=true a missing Docker engine fails the integration tests instead of skipping them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-host.sh
exec ./mvnw -B -ntp verify "$@"

#!/usr/bin/env bash
# CI: the README's first command run the way a newcomer runs it. Clones the commit under test into
# a temporary directory, removes the project's own artifacts from the local Maven repository (a
# fresh machine has none, and a build that silently needs them must fail here), then runs
# './agentnest demo', './agentnest doctor', './agentnest run', and the distribution archive's
# bin/agentnest. Any error fails CI.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
commit="$(git -C "$root" rev-parse HEAD)"
repo="${MAVEN_LOCAL_REPO:-$HOME/.m2/repository}"
work="$(mktemp -d /tmp/fresh-clone.XXXXXX)"
trap 'rm -rf "$work"' EXIT
log() { printf '[fresh-clone] %s\n' "$*" >&2; }

log "cloning $commit into $work"
git clone -q --no-local "$root" "$work/agentnest"
git -C "$work/agentnest" checkout -q --detach "$commit"
if [ -d "$repo/io/agentnest" ]; then
  log "removing io/agentnest from $repo (a fresh machine has none)"
  rm -rf "$repo/io/agentnest"
fi
# The demo's audit trail and state go to a throwaway home, not the user's ~/.agentnest.
export AGENTNEST_HOME="$work/home"
cd "$work/agentnest"

log "./agentnest demo"
./agentnest demo

log "./agentnest doctor"
./agentnest doctor

log "./agentnest run -c 'print(6 * 7)'"
out="$(./agentnest run -c 'print(6 * 7)')"
[ "$out" = 42 ] || { log "expected 42, got: $out"; exit 1; }

log "distribution archive: bin/agentnest run"
tar -xzf agentnest-cli/target/agentnest-*.tar.gz -C "$work"
out="$("$work"/agentnest-*/bin/agentnest run -- sh -c 'echo dist-ok')"
[ "$out" = dist-ok ] || { log "expected dist-ok, got: $out"; exit 1; }

if [ -d "$repo/io/agentnest" ]; then
  log "the launcher's build installed io/agentnest into $repo; it must build from the checkout alone"
  exit 1
fi
log "passed: demo, doctor, run and the archive's bin/agentnest work from a fresh clone"

#!/usr/bin/env bash
# A Maven user's first day: builds examples/java-consumer (a project outside the build that
# imports agentnest-bom and depends on agentnest-docker, as README shows) against the artifacts
# that `./mvnw install` put in the local repository, and runs README's Java example. The
# example's source must be README's block character for character, so the two cannot drift.
# Usage: scripts/consumer-check.sh (after ./mvnw install)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
log() { printf '[consumer] %s\n' "$*" >&2; }
example=examples/java-consumer/src/main/java/Quickstart.java
python3 - "$example" <<'PY'
import re, sys
readme = open("README.md").read()
block = re.search(r"```java\n(.*?)```", readme[readme.index("## Java API"):], re.S).group(1)
if open(sys.argv[1]).read() != block:
    sys.exit(f"{sys.argv[1]} differs from README's first Java block under '## Java API': "
             "copy the block into it (README is the source)")
PY
repo="${MAVEN_LOCAL_REPO:-$HOME/.m2/repository}"
[ -f "$repo/io/agentnest/agentnest-bom/0.1.0-SNAPSHOT/agentnest-bom-0.1.0-SNAPSHOT.pom" ] || {
  log "no agentnest-bom in $repo: run ./mvnw -DskipTests install first (README, Java API)"
  exit 1
}
work="$(mktemp -d /tmp/an-consumer-XXXXXX)"
trap 'rm -rf "$work"' EXIT
pom=examples/java-consumer/pom.xml
log "building the consumer project (BOM import, agentnest-docker)"
./mvnw -B -ntp -q -f "$pom" compile dependency:build-classpath -Dmdep.outputFile="$work/cp.txt"
log "running README's Java example"
out="$(AGENTNEST_HOME="$work/home" java -cp "examples/java-consumer/target/classes:$(cat "$work/cp.txt")" Quickstart)"
printf '%s\n' "$out"
grep -qx '20' <<<"$out" && grep -qx '11' <<<"$out" || { log "expected 20 and 11 in the output"; exit 1; }
log "passed: the README's Java example builds from the BOM coordinates and runs"

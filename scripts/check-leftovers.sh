#!/usr/bin/env bash
# After a green test run: nothing the tests made may be left behind. Fails, listing them, when the
# run left temporary agentnest-* directories, managed containers, bulk-link directories or
# containerd's copies of checkpoint images, or when
# a test wrote to the user's real ~/.agentnest (tests use their own AGENTNEST_HOME).
# Usage: check-leftovers.sh MARKER_FILE CONTAINERS_BEFORE_FILE
set -euo pipefail
marker="$1"
before="$2"
problems=()

while IFS= read -r path; do
  problems+=("temporary directory left behind: $path")
done < <(find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'agentnest-*' -newer "$marker" 2>/dev/null)

# containerd's unpacked copies of checkpoint images (a sandbox's memory), which containerd itself
# never removes (containerd#10166) and the Docker backend removes after each start from one.
while IFS= read -r path; do
  problems+=("containerd's copy of a checkpoint image left behind: $path")
done < <(find /tmp -maxdepth 1 -name 'ctrd-checkpoint*' -newer "$marker" 2>/dev/null)

if docker version >/dev/null 2>&1; then
  while IFS= read -r id; do
    [ -z "$id" ] && continue
    grep -qx "$id" "$before" && continue
    problems+=("container left behind: $(docker ps -a --filter id="$id" --format '{{.ID}} {{.Names}} {{.Status}} {{.Image}}')")
  done < <(docker ps -aq --no-trunc --filter label=agentnest.managed)
fi

# Sandbox pods on the test cluster (pods are removed with their sandbox; tenant namespaces stay).
kc=/var/lib/agentnest-k8s/admin.kubeconfig
if [ -f "$kc" ] && command -v kubectl >/dev/null 2>&1; then
  while IFS= read -r pod; do
    [ -z "$pod" ] && continue
    problems+=("sandbox pod left behind: $pod")
  done < <(kubectl --kubeconfig "$kc" get pods -A -l agentnest.managed=true --no-headers \
    -o custom-columns=NS:.metadata.namespace,NAME:.metadata.name 2>/dev/null | awk '{print $1"/"$2}')
fi

# Containers of deleted sandbox pods still running on the test cluster's node: a pod that is gone
# from the API but not from the node (its gVisor sandbox keeps memory and the kubelet retries its
# teardown). The kubelet needs some seconds to finish a teardown: wait up to a minute.
script="$(dirname "$0")/k8s/cluster.sh"
if [ -f "$kc" ] && command -v ctr >/dev/null 2>&1 && "$script" status >/dev/null 2>&1; then
  left=""
  for _ in $(seq 1 12); do
    left="$("$script" orphans 2>/dev/null || true)"
    [ -z "$left" ] && break
    sleep 5
  done
  while IFS= read -r c; do
    [ -z "$c" ] && continue
    problems+=("container of a deleted pod still on the test cluster's node: $c")
  done <<<"$left"
fi

# MicroVM guests: a QEMU still running a guest's agent socket, or a guest's state directory under
# a module's test home (each is removed with its sandbox).
while IFS= read -r line; do
  [ -z "$line" ] && continue
  problems+=("microVM guest still running: $line")
done < <(pgrep -af 'qemu-system.*microvm/vms/' 2>/dev/null | cut -c1-160 || true)
while IFS= read -r path; do
  problems+=("microVM state directory left behind: $path")
done < <(find . -path '*/target/agentnest-home/microvm/vms/*' -mindepth 0 -maxdepth 6 -type d -newer "$marker" 2>/dev/null | grep -E '/vms/[0-9a-f]+$' || true)

if [ -d /run/agentnest/bulk ]; then
  while IFS= read -r path; do
    problems+=("bulk-link directory left behind: $path")
  done < <(find /run/agentnest/bulk -mindepth 1 -maxdepth 1 -newer "$marker" 2>/dev/null)
fi

if [ -d "$HOME/.agentnest" ]; then
  while IFS= read -r path; do
    problems+=("a test wrote to the real home: $path")
  done < <(find "$HOME/.agentnest" -newer "$marker" 2>/dev/null | head -n 20)
fi

if [ "${#problems[@]}" -gt 0 ]; then
  printf '[leftovers] %s\n' "${problems[@]}" >&2
  printf '[leftovers] FAILED: the test run left %d thing(s) behind; each test must remove what it made.\n' \
    "${#problems[@]}" >&2
  exit 1
fi
echo "[leftovers] none: no temporary directories, containers or bulk directories left, ~/.agentnest untouched" >&2

#!/usr/bin/env bash
# A real single-node Kubernetes cluster on loopback for the Kubernetes backend's tests: etcd,
# kube-apiserver, controller-manager, scheduler and a kubelet of a current release, on a containerd
# 2 of its own with runc and gVisor's own shim (containerd-shim-runsc-v1, one gVisor sandbox per
# pod as in production). Every binary is built from Go modules by components/build.sh and cached by
# version; nothing is downloaded but through the go command and apt-get. SIG Apps' agent-sandbox CRDs
# are installed and its controller runs on the host, for the backend's kubernetes.api: agent-sandbox.
#
# Pods get one interface on a CNI macvlan in private mode over an empty bridge: an address (the CRI
# needs one) but no route off the machine, no way to the host, and no way to each other. That is
# the isolation the backend checks for with its canary (a NetworkPolicy alone is not enforced by
# this network plugin). No registry: images are imported from the local Docker engine.
#
#   cluster.sh up        start what is not running (idempotent); prints the admin kubeconfig path
#   cluster.sh down      stop everything this script started and remove its pods
#   cluster.sh status    exit 0 when the API answers and the node is Ready
#   cluster.sh import IMAGE...   copy images from the Docker engine into the cluster's containerd
#   cluster.sh orphans   list running containers whose pod no longer exists (a leak)
#   cluster.sh reap      kill and remove those (also done by `up`)
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
S="${AGENTNEST_K8S_STATE:-/var/lib/agentnest-k8s}"
API_PORT="${AGENTNEST_K8S_API_PORT:-16443}"
ETCD_PORT=12379
ETCD_PEER_PORT=12380
LINK=agentnest-k8s0
POD_SUBNET=10.244.0.0/24
PAUSE_IMAGE=agentnest.local/pause:1
SOCK="$S/containerd/containerd.sock"
KUBECONFIG_ADMIN="$S/admin.kubeconfig"

log() { printf '[k8s] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (it starts a kubelet and a containerd)"

pidfile() { echo "$S/run/$1.pid"; }
# Whether the daemon named $1 runs: its pid file names a live process that is that program (a
# pid the kernel has since given to another process does not count).
running() {
  local p
  p="$(cat "$(pidfile "$1")" 2>/dev/null)" || return 1
  [ -n "$p" ] && kill -0 "$p" 2>/dev/null && tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q -- "$1"
}
# Stops the daemon named $1 and waits until it is gone (at most 30 s, then SIGKILL): an 'up' right
# after a 'down' once found kube-controller-manager still shutting down, took it as running, did
# not start it, and the cluster then had no controllers (no service account tokens, no quota).
stop() {
  local name="$1" p i
  running "$name" || { rm -f "$(pidfile "$name")"; return 0; }
  p="$(cat "$(pidfile "$name")")"
  kill "$p" 2>/dev/null || true
  for ((i = 0; i < 300; i++)); do
    kill -0 "$p" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$p" 2>/dev/null; then
    log "$name did not stop within 30 s: killing it"
    kill -9 "$p" 2>/dev/null || true
  fi
  rm -f "$(pidfile "$name")"
}
# Starts a daemon in its own session, logging to a size-capped file where the program can cap it.
start() {
  local name="$1"
  shift
  if running "$name"; then
    return 0
  fi
  log "starting $name"
  setsid "$@" </dev/null >>"$S/logs/$name.out" 2>&1 &
  echo $! >"$(pidfile "$name")"
}
# The control plane logs to stderr (klog's file flags are gone): a log past 50 MiB is cut at 'up'.
logs_bounded() {
  local f
  for f in "$S"/logs/*.out; do
    [ -f "$f" ] || continue
    if [ "$(stat -c %s "$f")" -gt $((50 << 20)) ]; then
      tail -c $((5 << 20)) "$f" >"$f.tail" && mv "$f.tail" "$f"
    fi
  done
}
wait_for() {
  local what="$1" tries="$2"
  shift 2
  local i
  for ((i = 0; i < tries; i++)); do
    if "$@" >/dev/null 2>&1; then
      return 0
    fi
    sleep 1
  done
  die "$what did not come up in ${tries}s: see $S/logs"
}
kubectl_() { kubectl --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }
api_up() { curl -fsS --cacert "$S/pki/ca.crt" --cert "$S/pki/admin.crt" --key "$S/pki/admin.key" "https://127.0.0.1:$API_PORT/readyz"; }
node_ready() {
  [ "$(kubectl_ get node localhost -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

packages() {
  local need=()
  command -v openssl >/dev/null 2>&1 || need+=(openssl)
  command -v ip >/dev/null 2>&1 || need+=(iproute2)
  if [ "${#need[@]}" -gt 0 ]; then
    log "installing ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
}

# A cluster of another Kubernetes release in the state directory (this script ran 1.20 before) is
# stopped and its etcd, containerd and kubelet state removed: a release never starts on another's
# data. The certificates stay.
release_state() {
  local want="$1" have
  [ -d "$S/etcd" ] || { echo "$want" >"$S/kubernetes-version"; return 0; }
  have="$(cat "$S/kubernetes-version" 2>/dev/null || echo "v1.20.2")"
  [ "$have" = "$want" ] && return 0
  log "the cluster in $S is Kubernetes $have: stopping it and starting $want afresh"
  down
  rm -rf "$S/etcd" "$S/containerd" "$S/kubelet" "$S/cni-ipam" "$S/runsc" "$S/run" "$S/bin" "$S/gocache"
  mkdir -p "$S/run"
  echo "$want" >"$S/kubernetes-version"
}

# --------------------------------------------------------------------------------- certificates
cert() { # name subject [san]
  local name="$1" subj="$2" san="${3:-}"
  [ -s "$S/pki/$name.crt" ] && return 0
  openssl req -new -newkey rsa:2048 -nodes -keyout "$S/pki/$name.key" -subj "$subj" \
    -out "$S/pki/$name.csr" 2>/dev/null
  local ext="$S/pki/$name.ext"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=serverAuth,clientAuth"
    [ -n "$san" ] && echo "subjectAltName=$san"
  } >"$ext"
  openssl x509 -req -in "$S/pki/$name.csr" -CA "$S/pki/ca.crt" -CAkey "$S/pki/ca.key" \
    -CAcreateserial -days 3650 -extfile "$ext" -out "$S/pki/$name.crt" 2>/dev/null
  chmod 0600 "$S/pki/$name.key"
}
kubeconfig() { # file user cert
  local file="$1" user="$2" c="$3"
  cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: agentnest
  cluster:
    certificate-authority: $S/pki/ca.crt
    server: https://127.0.0.1:$API_PORT
users:
- name: $user
  user:
    client-certificate: $S/pki/$c.crt
    client-key: $S/pki/$c.key
contexts:
- name: agentnest
  context: {cluster: agentnest, user: $user}
current-context: agentnest
EOF
  chmod 0600 "$file"
}
pki() {
  mkdir -p "$S/pki"
  chmod 0700 "$S/pki"
  if [ ! -s "$S/pki/ca.crt" ]; then
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$S/pki/ca.key" -out "$S/pki/ca.crt" \
      -days 3650 -subj "/CN=agentnest-test-cluster-ca" 2>/dev/null
  fi
  cert apiserver "/CN=kube-apiserver" \
    "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:127.0.0.1,IP:10.96.0.1"
  cert admin "/O=system:masters/CN=agentnest-admin"
  cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
  cert kubelet-client "/O=system:nodes/CN=system:node:localhost"
  cert kubelet "/CN=localhost" "DNS:localhost,IP:127.0.0.1"
  if [ ! -s "$S/pki/sa.key" ]; then
    openssl genrsa -out "$S/pki/sa.key" 2048 2>/dev/null
    openssl rsa -in "$S/pki/sa.key" -pubout -out "$S/pki/sa.pub" 2>/dev/null
  fi
  kubeconfig "$KUBECONFIG_ADMIN" agentnest-admin admin
  kubeconfig "$S/kubelet.kubeconfig" system:node:localhost kubelet-client
}

# ------------------------------------------------------------------------------------- network
network() {
  if ! ip link show "$LINK" >/dev/null 2>&1; then
    # A bridge with no ports as the macvlan parent (this kernel has no dummy links): nothing is
    # attached to it, and it has no address, so it leads nowhere.
    ip link add "$LINK" type bridge
  fi
  ip link set "$LINK" up
  mkdir -p "$S/cni"
  cat >"$S/cni/10-agentnest.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "agentnest-isolated",
  "plugins": [
    {
      "type": "macvlan",
      "master": "$LINK",
      "mode": "private",
      "ipam": {"type": "host-local", "subnet": "$POD_SUBNET", "dataDir": "$S/cni-ipam"}
    }
  ]
}
EOF
}

# ---------------------------------------------------------------------------------- containerd
# gVisor as a second runtime handler, "runsc", behind the RuntimeClass "gvisor", through gVisor's own
# containerd shim: one gVisor sandbox per pod (the pause container and the sandbox share it), as on
# production nodes (gvisor.dev/docs/user_guide/containerd). runsc gets the flags setup-host.sh gives
# Docker's: no network stack (the agent channel is an exec stream), the pod's OCI seccomp profile
# applied inside the sandbox.
runsc_config() {
  local bin="$1"
  cat >"$S/containerd/runsc.toml.new" <<EOF
binary_name = "$bin/runsc"
root = "$S/runsc"
[runsc_config]
  network = "none"
  oci-seccomp = "true"
EOF
  mv "$S/containerd/runsc.toml.new" "$S/containerd/runsc.toml"
}

containerd_up() {
  local bin="$1"
  mkdir -p "$S/containerd/tmp" "$S/runsc"
  runsc_config "$bin"
  cat >"$S/containerd/config.toml.new" <<EOF
# containerd and its shims run with TMPDIR=$S/containerd/tmp: a user-namespaced pod's root
# filesystem is an idmapped overlay mounted there, and its path shows in the pod's mountinfo.
version = 3
root = "$S/containerd/root"
state = "$S/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.blockfile",
  "io.containerd.snapshotter.v1.erofs"]
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[debug]
  level = "warn"
[metrics]
  address = ""
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "$PAUSE_IMAGE"
[plugins.'io.containerd.cri.v1.runtime']
  enable_selinux = false
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "$bin/runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runsc]
      runtime_type = "io.containerd.runsc.v1"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runsc.options]
        TypeUrl = "io.containerd.runsc.v1.options"
        ConfigPath = "$S/containerd/runsc.toml"
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["$bin/cni"]
    conf_dir = "$S/cni"
    max_conf_num = 1
EOF
  if cmp -s "$S/containerd/config.toml.new" "$S/containerd/config.toml"; then
    rm -f "$S/containerd/config.toml.new"
  else
    mv "$S/containerd/config.toml.new" "$S/containerd/config.toml"
    # A running containerd keeps its old configuration; its shims (and so the pods) outlive it.
    if running containerd; then
      log "containerd configuration changed: restarting containerd"
      stop containerd
    fi
  fi
  # containerd finds its shims (containerd-shim-runc-v2, containerd-shim-runsc-v1) on its PATH.
  start containerd env PATH="$bin:$PATH" TMPDIR="$S/containerd/tmp" "$bin/containerd" \
    --config "$S/containerd/config.toml"
  wait_for containerd 30 ctr -a "$SOCK" version
}

images() {
  if ! ctr -a "$SOCK" -n k8s.io images check "name==$PAUSE_IMAGE" 2>/dev/null | grep -q "$PAUSE_IMAGE"; then
    log "building $PAUSE_IMAGE"
    local d
    d="$(mktemp -d)"
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$d/pause" "$HERE/pause.go"
    printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$d/Dockerfile"
    docker build -q -t "$PAUSE_IMAGE" "$d" >/dev/null 2>&1
    rm -rf "$d"
    import "$PAUSE_IMAGE"
  fi
}

import() {
  local img
  for img in "$@"; do
    log "importing $img"
    docker image inspect "$img" >/dev/null 2>&1 || die "no image $img in the Docker engine: build it first (agentnest image build)"
    docker save "$img" | ctr -a "$SOCK" -n k8s.io images import --no-unpack=false - >/dev/null
  done
}

# ------------------------------------------------------------------------------- control plane
control_plane() {
  local bin="$1"
  mkdir -p "$S/etcd" && chmod 0700 "$S/etcd"
  start etcd "$bin/etcd" --name agentnest --data-dir "$S/etcd" --log-level warn \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "agentnest=http://127.0.0.1:$ETCD_PEER_PORT" --quota-backend-bytes 1073741824
  wait_for etcd 30 curl -fsS "http://127.0.0.1:$ETCD_PORT/health"
  local klog=(--v=0)
  start kube-apiserver "$bin/kube-apiserver" "${klog[@]}" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" --bind-address=127.0.0.1 --secure-port="$API_PORT" \
    --advertise-address=127.0.0.1 --endpoint-reconciler-type=none \
    --service-cluster-ip-range=10.96.0.0/24 --authorization-mode=Node,RBAC \
    --client-ca-file="$S/pki/ca.crt" --tls-cert-file="$S/pki/apiserver.crt" \
    --tls-private-key-file="$S/pki/apiserver.key" \
    --kubelet-client-certificate="$S/pki/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$S/pki/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="$S/pki/ca.crt" --kubelet-preferred-address-types=Hostname \
    --service-account-key-file="$S/pki/sa.pub" --service-account-signing-key-file="$S/pki/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc --enable-admission-plugins=NodeRestriction \
    --allow-privileged=false --profiling=false
  wait_for kube-apiserver 120 api_up
  start kube-controller-manager "$bin/kube-controller-manager" "${klog[@]}" \
    --kubeconfig="$KUBECONFIG_ADMIN" \
    --authentication-kubeconfig="$KUBECONFIG_ADMIN" --authorization-kubeconfig="$KUBECONFIG_ADMIN" \
    --bind-address=127.0.0.1 --leader-elect=false \
    --service-account-private-key-file="$S/pki/sa.key" --root-ca-file="$S/pki/ca.crt" \
    --cluster-signing-cert-file="$S/pki/ca.crt" --cluster-signing-key-file="$S/pki/ca.key" \
    --use-service-account-credentials=false --profiling=false
  start kube-scheduler "$bin/kube-scheduler" "${klog[@]}" \
    --kubeconfig="$KUBECONFIG_ADMIN" --authentication-kubeconfig="$KUBECONFIG_ADMIN" \
    --authorization-kubeconfig="$KUBECONFIG_ADMIN" --bind-address=127.0.0.1 \
    --leader-elect=false --profiling=false
}

kubelet_up() {
  local bin="$1"
  mkdir -p "$S/kubelet/seccomp"
  # AgentNest's seccomp profiles as the Localhost profiles "agentnest.json" and, for gVisor pods,
  # "agentnest-gvisor.json" (an administrator copies them to every node's <kubelet root>/seccomp
  # and sets AGENTNEST_KUBERNETES_SECCOMP_PROFILE and AGENTNEST_KUBERNETES_SECCOMP_PROFILE_GVISOR).
  local profiles="$HERE/../../agentnest-core/src/main/resources/io/agentnest/internal/lifecycle"
  install -m 0644 "$profiles/seccomp.json" "$S/kubelet/seccomp/agentnest.json"
  install -m 0644 "$profiles/seccomp-gvisor.json" "$S/kubelet/seccomp/agentnest-gvisor.json"
  cat >"$S/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $S/pki/ca.crt}
authorization: {mode: AlwaysAllow}
tlsCertFile: $S/pki/kubelet.crt
tlsPrivateKeyFile: $S/pki/kubelet.key
cgroupDriver: cgroupfs
# This host has cgroup v1, which a 1.35 kubelet refuses unless told (KEP-5573).
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$SOCK
imageServiceEndpoint: unix://$SOCK
runtimeRequestTimeout: 2m
# This is a developer's machine: never evict pods or collect the imported images for disk.
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
maxPods: 110
containerLogMaxSize: 1Mi
containerLogMaxFiles: 2
# Kubernetes has no per-pod pids setting: this is every sandbox pod's process limit.
podPidsLimit: 256
EOF
  local args=("$bin/kubelet" --v=0 --config="$S/kubelet.yaml"
    --kubeconfig="$S/kubelet.kubeconfig" --hostname-override=localhost
    --root-dir="$S/kubelet" --cert-dir="$S/pki/kubelet")
  # A kubelet started by an older version of this script keeps its old flags: restart it (its pods
  # keep running).
  if running kubelet && [ "$(printf '%s\n' "${args[@]}")" != "$(cat "$S/run/kubelet.args" 2>/dev/null)" ]; then
    log "kubelet flags changed: restarting the kubelet"
    stop kubelet
  fi
  printf '%s\n' "${args[@]}" >"$S/run/kubelet.args"
  start kubelet "${args[@]}"
  wait_for "the node" 120 node_ready
}

runtime_class() {
  printf '%s\n' 'apiVersion: node.k8s.io/v1' 'kind: RuntimeClass' 'metadata:' '  name: gvisor' \
    'handler: runsc' | kubectl_ apply -f - >/dev/null
}

# Kubernetes SIG Apps' agent-sandbox (kubernetes.api: agent-sandbox): its CRDs, from the module
# the go command verified for the controller's build, and its controller, run on this host against
# the API server as the other controllers are (it serves no webhook; metrics and probes off).
agent_sandbox_up() {
  local bin="$1" dir
  dir="$(go -C "$HERE/components/agent-sandbox" mod download -json sigs.k8s.io/agent-sandbox |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [ -d "$dir/k8s/crds" ] || die "no CRDs in the agent-sandbox module ($dir)"
  kubectl_ apply --server-side --force-conflicts -f "$dir/k8s/crds/" >/dev/null
  # The controller looks its kinds up once at start: the CRDs must be served before it starts.
  kubectl_ wait --for=condition=Established --timeout=60s -f "$dir/k8s/crds/" >/dev/null
  running agent-sandbox-controller && return 0
  start agent-sandbox-controller "$bin/agent-sandbox-controller" --kubeconfig="$KUBECONFIG_ADMIN" \
    --leader-elect=false --metrics-bind-address=0 --health-probe-bind-address=0 --extensions
  sleep 2
  running agent-sandbox-controller ||
    die "the agent-sandbox controller exited: see $S/logs/agent-sandbox-controller.out"
}

# The kubelet listens on loopback only, and an API server refuses to proxy there, so the backend
# cannot read podPidsLimit from the kubelet's configz: the node states it as an administrator
# would (docs/kubernetes.md).
node_pids_annotation() {
  local limit
  limit="$(sed -n 's/^podPidsLimit: *//p' "$S/kubelet.yaml")"
  kubectl_ annotate --overwrite node localhost "agentnest.io/pod-pids-limit=$limit" >/dev/null
}

up() {
  mkdir -p "$S/run" "$S/logs"
  packages
  local bin
  bin="$("$HERE/components/build.sh")"
  release_state "$("$bin/kube-apiserver" --version | awk '{print $2}')"
  # Components built anew (a changed pin or patch) replace the running ones: containerd finds its
  # shims on the PATH it started with.
  if [ -s "$S/run/bin" ] && [ "$(cat "$S/run/bin")" != "$bin" ] && running containerd; then
    log "the components changed ($(cat "$S/run/bin") -> $bin): restarting the cluster"
    down
  fi
  echo "$bin" >"$S/run/bin"
  export PATH="$bin:$PATH"
  logs_bounded
  pki
  network
  containerd_up "$bin"
  images
  control_plane "$bin"
  kubelet_up "$bin"
  runtime_class
  node_pids_annotation
  agent_sandbox_up "$bin"
  local reaped
  reaped="$(gone_pods reap)"
  [ "$reaped" = 0 ] || log "removed $reaped container(s) of pods that no longer exist"
  log "cluster ready: KUBECONFIG=$KUBECONFIG_ADMIN"
  echo "$KUBECONFIG_ADMIN"
}

# Containers whose pod no longer exists: "list" prints them ("ID namespace/pod", what a test run
# must not leave); "reap" kills and removes them with their gVisor sandboxes (lost by an older runsc
# wrapper that could not stop them, or by a kubelet killed mid-teardown) and prints how many. Pods
# that exist are never touched.
gone_pods() {
  python3 - "$1" "$SOCK" "$KUBECONFIG_ADMIN" "$(command -v runsc || echo runsc)" "$S/runsc/k8s.io" <<'PY'
import json, subprocess, sys
mode, sock, kc, runsc, runsc_root = sys.argv[1:6]
def ctr(*a):
    return subprocess.run(["ctr", "-a", sock, "-n", "k8s.io", *a], capture_output=True, text=True, timeout=60)
pods = subprocess.run(["kubectl", "--kubeconfig", kc, "get", "pods", "-A", "-o", "json"],
                      capture_output=True, text=True, check=True, timeout=60).stdout
live = {p["metadata"]["uid"] for p in json.loads(pods)["items"]}
n = 0
for cid in ctr("tasks" if mode == "list" else "containers", "ls", "-q").stdout.split():
    info = ctr("containers", "info", cid)
    if info.returncode:
        continue
    labels = json.loads(info.stdout).get("Labels", {})
    uid = labels.get("io.kubernetes.pod.uid")
    if not uid or uid in live:
        continue
    if mode == "list":
        print(cid[:12], labels.get("io.kubernetes.pod.namespace", "?") + "/" + labels.get("io.kubernetes.pod.name", "?"))
        continue
    ctr("tasks", "kill", "-a", "-s", "SIGKILL", cid)
    for a in (["kill", "--all", cid, "9"], ["delete", "-force", cid]):
        subprocess.run([runsc, "--root", runsc_root, *a], capture_output=True, timeout=30)
    ctr("tasks", "rm", "-f", cid)
    ctr("containers", "rm", cid)
    n += 1
if mode == "reap":
    print(n)
PY
}

down() {
  local n
  for n in agent-sandbox-controller kubelet kube-scheduler kube-controller-manager; do
    stop "$n"
  done
  if running containerd; then
    local t
    for t in $(ctr -a "$SOCK" -n k8s.io tasks ls -q 2>/dev/null); do
      ctr -a "$SOCK" -n k8s.io tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
    done
    sleep 1
    for t in $(ctr -a "$SOCK" -n k8s.io containers ls -q 2>/dev/null); do
      ctr -a "$SOCK" -n k8s.io tasks delete "$t" >/dev/null 2>&1 || true
      ctr -a "$SOCK" -n k8s.io containers delete "$t" >/dev/null 2>&1 || true
    done
  fi
  for n in kube-apiserver etcd containerd; do
    stop "$n"
  done
  # Memory-backed volumes and the pods' network namespaces the kubelet mounted.
  { grep -o " $S/[^ ]*" /proc/mounts || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  log "stopped"
}

# The other commands use the binaries the last 'up' built (kubectl, ctr, runsc).
if [ -s "$S/run/bin" ]; then
  PATH="$(cat "$S/run/bin"):$PATH"
fi

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) api_up >/dev/null 2>&1 && node_ready ;;
  import) shift; import "$@" ;;
  reap) gone_pods reap ;;
  orphans) gone_pods list ;;
  *) echo "usage: $0 up|down|status|reap|orphans|import IMAGE..." >&2; exit 2 ;;
esac

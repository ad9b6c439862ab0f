#!/usr/bin/env bash
# Builds a current single-node Kubernetes test cluster's binaries from Go modules, with the Go on
# PATH (1.26.8 or newer): kube-apiserver, kube-controller-manager, kube-scheduler and kubelet
# and kubectl (Kubernetes 1.35), etcd and etcdctl (3.6), containerd 2 with its runc shim and ctr, runc,
# gVisor's runsc and containerd-shim-runsc-v1, the CNI plugins, and the agent-sandbox controller.
#
# Every version is pinned by the small consumer modules next to this script (one directory per
# component: k8s, etcd, containerd, runc, gvisor, cni, each a go.mod, go.sum and a tools.go that
# names the commands), so every download goes through the go command and is checked against
# go.sum. k8s.io/kubernetes cannot be 'go install'ed (its go.mod replaces its ~30 staging modules
# with local paths): k8s/go.mod requires it and replaces each k8s.io/<staging> module with its
# published v0.<minor>.<patch> release instead.
#
# Binaries are cached under ~/.cache/agentnest/k8s-components/<key>/bin, where <key> names the
# Kubernetes version and a hash of the consumer modules (a changed pin builds into a new
# directory); what is already there is not built again. Idempotent; concurrent runs wait on a lock.
# A cold build takes a long while on 2 cores (see the timings in the README / issue 46).
#
#   build.sh                 build everything missing
#   build.sh k8s etcd ...    build only these components (k8s etcd containerd runc gvisor cni)
#
# Prints the bin directory on stdout; progress goes to stderr. runc needs cgo and libseccomp:
# when gcc, pkg-config or libseccomp-dev is missing, root installs them with apt-get.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ALL=(k8s etcd containerd runc gvisor cni agent-sandbox)
NICE="${AGENTNEST_BUILD_NICE:-15}"

log() { printf '[k8s-components] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

command -v go >/dev/null || die "needs Go 1.26.8 or newer on PATH"

# The binaries each component makes: name=package (cgo off unless the component says otherwise).
targets() {
  case "$1" in
    k8s) echo kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver \
      kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager \
      kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler \
      kubelet=k8s.io/kubernetes/cmd/kubelet kubectl=k8s.io/kubernetes/cmd/kubectl ;;
    etcd) echo etcd=go.etcd.io/etcd/server/v3 etcdctl=go.etcd.io/etcd/etcdctl/v3 ;;
    containerd) echo containerd=github.com/containerd/containerd/v2/cmd/containerd \
      containerd-shim-runc-v2=github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
      ctr=github.com/containerd/containerd/v2/cmd/ctr ;;
    runc) echo runc=github.com/opencontainers/runc ;;
    gvisor) echo runsc=gvisor.dev/gvisor/runsc containerd-shim-runsc-v1=gvisor.dev/gvisor/shim ;;
    cni)
      local p=github.com/containernetworking/plugins/plugins n
      for n in main/bridge main/macvlan main/ipvlan main/ptp main/vlan main/host-device main/loopback \
        ipam/host-local ipam/static meta/portmap meta/tuning meta/bandwidth meta/firewall; do
        printf 'cni/%s=%s/%s ' "${n#*/}" "$p" "$n"
      done
      echo ;;
    agent-sandbox) echo agent-sandbox-controller=sigs.k8s.io/agent-sandbox/cmd/agent-sandbox-controller ;;
    *) die "unknown component '$1' (known: ${ALL[*]})" ;;
  esac
}

# The upstream module each component's consumer module requires.
mainmod() {
  case "$1" in
    k8s) echo k8s.io/kubernetes ;;
    etcd) echo go.etcd.io/etcd/server/v3 ;;
    containerd) echo github.com/containerd/containerd/v2 ;;
    runc) echo github.com/opencontainers/runc ;;
    gvisor) echo gvisor.dev/gvisor ;;
    cni) echo github.com/containernetworking/plugins ;;
    agent-sandbox) echo sigs.k8s.io/agent-sandbox ;;
  esac
}
# The version of its upstream module that component $1's consumer module pins.
pinned() { go -C "$HERE/$1" list -mod=readonly -m -f '{{.Version}}' "$(mainmod "$1")"; }

want=("$@")
[ "${#want[@]}" -gt 0 ] || want=("${ALL[@]}")
for c in "${want[@]}"; do
  targets "$c" >/dev/null
  [ -f "$HERE/$c/go.mod" ] && [ -f "$HERE/$c/go.sum" ] || die "missing $HERE/$c/go.mod or go.sum"
done

K8S_VERSION="$(pinned k8s)"
[ -n "$K8S_VERSION" ] || die "cannot read the k8s.io/kubernetes version from $HERE/k8s/go.mod"
HASH="$(cd "$HERE" && shopt -s nullglob && cat ./*/go.mod ./*/go.sum ./*/*.patch | sha256sum | cut -c1-12)"
ROOT="${AGENTNEST_K8S_COMPONENTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agentnest/k8s-components}/${K8S_VERSION#v}-$HASH"
BIN="$ROOT/bin"

missing() {
  local c="$1" t
  for t in $(targets "$c"); do
    [ -x "$BIN/${t%%=*}" ] || return 0
  done
  return 1
}

todo=()
for c in "${want[@]}"; do
  if missing "$c"; then todo+=("$c"); fi
done
if [ "${#todo[@]}" -eq 0 ]; then
  log "cached: $BIN"
  echo "$BIN"
  exit 0
fi

mkdir -p "$BIN/cni"
exec 9>"$ROOT/.lock"
flock 9

# runc links libseccomp through cgo.
if [[ " ${todo[*]} " == *" runc "* ]]; then
  need=()
  command -v gcc >/dev/null || need+=(gcc libc6-dev)
  command -v pkg-config >/dev/null || need+=(pkg-config)
  pkg-config --exists libseccomp 2>/dev/null || need+=(libseccomp-dev)
  if [ "${#need[@]}" -gt 0 ]; then
    [ "$(id -u)" -eq 0 ] || die "runc needs Debian packages ${need[*]}: run as root, or install them"
    log "installing ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
fi

# -mod=readonly: build exactly what go.mod and go.sum pin, never resolve anything new.
export GOFLAGS="-mod=readonly -buildvcs=false -trimpath"

# A component with patches (<component>/*.patch, applied with patch -p1 in name order) builds its
# upstream module from a patched copy of what 'go mod download' verified against go.sum: the copy
# goes to $ROOT/src/<component>, and a go.mod of its own replaces the module with it (go -modfile),
# so the committed consumer module stays a plain pin. Prints the go flags the build then needs.
patched() {
  local c="$1" src mod p
  compgen -G "$HERE/$c/*.patch" >/dev/null || return 0
  mod="$(mainmod "$c")"
  src="$ROOT/src/$c"
  if [ ! -f "$src/.patched" ]; then
    rm -rf "$src"
    mkdir -p "$ROOT/src"
    cp -r "$(go -C "$HERE/$c" mod download -json "$mod" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')" "$src"
    chmod -R u+w "$src"
    for p in "$HERE/$c"/*.patch; do
      log "patching $mod with $(basename "$p")"
      patch -s -d "$src" -p1 <"$p" >&2
    done
    touch "$src/.patched"
  fi
  cp "$HERE/$c/go.mod" "$ROOT/src/$c.mod"
  cp "$HERE/$c/go.sum" "$ROOT/src/$c.sum"
  printf '\nreplace %s => %s\n' "$mod" "$src" >>"$ROOT/src/$c.mod"
  echo "-modfile=$ROOT/src/$c.mod"
}

# Builds component $1's binaries that are missing, with cgo $2, build tags $3 and ldflags $4.
build() {
  local c="$1" cgo="$2" tags="$3" ldflags="$4" t name pkg start modfile
  modfile="$(patched "$c")"
  for t in $(targets "$c"); do
    name="${t%%=*}" pkg="${t#*=}"
    [ -x "$BIN/$name" ] && continue
    log "building $name ($pkg)"
    start=$SECONDS
    # shellcheck disable=SC2086 # $modfile is empty or one flag
    CGO_ENABLED="$cgo" nice -n "$NICE" go -C "$HERE/$c" build $modfile -tags "$tags" -ldflags "$ldflags" \
      -o "$BIN/$name.tmp" "$pkg"
    mv -f "$BIN/$name.tmp" "$BIN/$name"
    log "built $name in $((SECONDS - start)) s"
  done
}

for c in "${todo[@]}"; do
  log "downloading the modules of $c"
  start=$SECONDS
  go -C "$HERE/$c" mod download
  log "downloaded the modules of $c in $((SECONDS - start)) s"
  case "$c" in
    k8s)
      v="$K8S_VERSION" minor="${K8S_VERSION#v1.}"
      minor="${minor%%.*}"
      p=k8s.io/component-base/version
      build k8s 0 "" "-s -w -X $p.gitVersion=$v -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z" ;;
    etcd)
      build etcd 0 "" "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=$(pinned etcd)" ;;
    containerd)
      p=github.com/containerd/containerd/v2/version
      build containerd 0 "urfave_cli_no_docs" "-s -w -X $p.Version=$(pinned containerd) -X $p.Package=github.com/containerd/containerd/v2" ;;
    runc)
      # Upstream's default tags less libpathrs (a Rust library Debian does not ship): runc then
      # uses its pure-Go fallback for safe path resolution.
      build runc 1 "seccomp urfave_cli_no_docs" "-s -w -X main.gitCommit=$(pinned runc)" ;;
    gvisor)
      build gvisor 0 "" "-s -w -X gvisor.dev/gvisor/runsc/version.version=$(pinned gvisor)" ;;
    cni)
      build cni 0 "" "-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$(pinned cni)" ;;
    agent-sandbox)
      build agent-sandbox 0 "" "-s -w -X sigs.k8s.io/agent-sandbox/internal/version.gitVersion=$(pinned agent-sandbox)" ;;
  esac
done

for c in "${ALL[@]}"; do
  echo "$c $(mainmod "$c") $(pinned "$c")"
done >"$ROOT/VERSIONS"
log "done: $BIN"
echo "$BIN"

#!/usr/bin/env bash
# Builds a Kubernetes control plane and kubelet offline from Debian 12's own 'kubernetes' source
# package (upstream v1.20.2 with its vendored dependencies) with Debian's Go 1.19, for the
# Kubernetes backend's tests on a machine without a registry or a cluster. Binaries are cached by
# the source package's version under ~/.cache/agentnest/kubernetes/<version>/bin, so only the
# first run builds (kube-apiserver alone takes about 7 minutes on 2 cores). Idempotent.
#
# Prints the bin directory on stdout; progress goes to stderr.
set -euo pipefail

SRC_VERSION="1.20.5+really1.20.2-1.1+deb12u1"
UPSTREAM="v1.20.2"
MIRROR="${AGENTNEST_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
CACHE="${AGENTNEST_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agentnest/kubernetes}/${SRC_VERSION}"
BIN="$CACHE/bin"
TARGETS=(kube-apiserver kube-controller-manager kube-scheduler kubelet)

log() { printf '[k8s-build] %s\n' "$*" >&2; }

have_all() {
  local t
  for t in "${TARGETS[@]}"; do
    [ -x "$BIN/$t" ] || return 1
  done
}

if have_all; then
  log "cached: $BIN"
  echo "$BIN"
  exit 0
fi

# Debian's Go toolchain, and reflect2 1.0.2: the vendored 1.0.1 crashes under Go >= 1.18
# ("fatal error: fault" in mapiterinit).
need=()
[ -x /usr/lib/go-1.19/bin/go ] || need+=(golang-1.19-go golang-1.19-src)
[ -d /usr/share/gocode/src/github.com/modern-go/reflect2 ] || need+=(golang-github-modern-go-reflect2-dev)
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    log "needs Debian packages ${need[*]}: run as root, or install them"
    exit 1
  fi
  log "installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
GO=/usr/lib/go-1.19/bin/go

WORK="$CACHE/build"
mkdir -p "$WORK" "$BIN"
pool="$MIRROR/pool/main/k/kubernetes"
orig="kubernetes_${SRC_VERSION%%-*}.orig.tar.gz"
deb="kubernetes_${SRC_VERSION}.debian.tar.xz"
for f in "$orig" "$deb"; do
  if [ ! -s "$WORK/$f" ]; then
    log "downloading $f"
    curl -fsS --retry 3 -o "$WORK/$f.part" "$pool/$f"
    mv "$WORK/$f.part" "$WORK/$f"
  fi
done
# The .dsc names the checksums; check them so that a bad mirror cannot hand us other sources.
dsc="kubernetes_${SRC_VERSION}.dsc"
[ -s "$WORK/$dsc" ] || curl -fsS --retry 3 -o "$WORK/$dsc" "$pool/$dsc"
(cd "$WORK" && awk '/^Checksums-Sha256:/{f=1;next} /^[^ ]/{f=0} f && NF==3 {print $1"  "$3}' "$dsc" \
  | sha256sum -c --quiet -) || { log "checksum mismatch in $WORK: remove it and run again"; exit 1; }

export GOPATH="$WORK/go" GO111MODULE=off GOPROXY=off CGO_ENABLED=0 GOFLAGS=
export GOCACHE="$WORK/gocache"
K="$GOPATH/src/k8s.io/kubernetes"
if [ ! -f "$K/.agentnest-prepared" ]; then
  log "unpacking sources"
  rm -rf "$GOPATH" "$WORK/debian"
  mkdir -p "$GOPATH/src/k8s.io"
  tar xzf "$WORK/$orig" -C "$GOPATH/src/k8s.io"
  mv "$GOPATH/src/k8s.io/kubernetes-"* "$K"
  tar xJf "$WORK/$deb" -C "$WORK"
  while read -r p; do
    [ -n "$p" ] && [ "${p#\#}" = "$p" ] || continue
    patch -s -d "$K" -p1 <"$WORK/debian/patches/$p"
  done <"$WORK/debian/patches/series"
  rm -rf "$K/vendor/github.com/modern-go/reflect2"
  cp -r /usr/share/gocode/src/github.com/modern-go/reflect2 "$K/vendor/github.com/modern-go/reflect2"
  touch "$K/.agentnest-prepared"
fi

cd "$K"
openapi="pkg/generated/openapi/zz_generated.openapi.go"
if [ ! -s "$openapi" ]; then
  # Not in the source tarball: upstream's make generates it from the +k8s:openapi-gen tags.
  log "generating $openapi"
  "$GO" build -o "$WORK/openapi-gen" ./vendor/k8s.io/kube-openapi/cmd/openapi-gen
  dirs="$(find -H . \( -path ./_\* -o -path ./.\* -o -path ./vendor \) -prune -o -type f -name '*.go' -print \
    | sed 's|^./staging/src|vendor|; s|^\./||' \
    | xargs grep --color=never -l '^// *+k8s:openapi-gen=' \
    | xargs -n1 dirname | LC_ALL=C sort -u \
    | grep -v -e '^vendor/k8s.io/code-generator/' -e '^vendor/k8s.io/sample-apiserver/' \
    | sed 's|^|k8s.io/kubernetes/|' | paste -sd, -)"
  "$WORK/openapi-gen" --logtostderr=false -i "$dirs" -p k8s.io/kubernetes/pkg/generated/openapi \
    -O zz_generated.openapi -h vendor/k8s.io/code-generator/hack/boilerplate.go.txt \
    -r "$WORK/openapi-violations.report"
fi

v=k8s.io/kubernetes/vendor/k8s.io
ldflags="-s -w"
for pkg in "$v/component-base/version" "$v/client-go/pkg/version"; do
  ldflags="$ldflags -X $pkg.gitVersion=$UPSTREAM -X $pkg.gitMajor=1 -X $pkg.gitMinor=20"
  ldflags="$ldflags -X $pkg.gitTreeState=clean -X $pkg.buildDate=2021-01-13T00:00:00Z"
done
i=0
for t in "${TARGETS[@]}"; do
  i=$((i + 1))
  if [ -x "$BIN/$t" ]; then
    continue
  fi
  log "step $i/${#TARGETS[@]}: building $t (several minutes on 2 cores; cached afterwards)"
  "$GO" build -ldflags "$ldflags" -o "$BIN/$t.part" "./cmd/$t"
  mv "$BIN/$t.part" "$BIN/$t"
done
log "built: $BIN"
echo "$BIN"

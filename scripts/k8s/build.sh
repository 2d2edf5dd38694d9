#!/usr/bin/env bash
# Builds the binaries of the test cluster from the Go module proxy: etcd,
# kube-apiserver, kube-scheduler, kubelet and kubectl (Kubernetes publishes no
# binaries that can be fetched here, but its Go modules can).
#
#   scripts/k8s/build.sh [binary...]
#
# k8s.io/kubernetes cannot be required on its own: its go.mod replaces the
# staging modules (k8s.io/api, client-go, ...) with local paths. A wrapper
# module requires it and pins every staging module to the matching v0.Y.Z.
# The wrapper module also requires every module of this project's own build
# list at this project's version (Go takes the higher of the two), so that the
# packages both build (client-go, the API types, apimachinery, gRPC, etcd's
# client, protobuf, golang.org/x/...) are the same packages built the same
# way (CGO_ENABLED=0, -trimpath) and Go's build cache compiles them once: built
# after the server (CI does that), the cluster's binaries took 10.0 CPU
# minutes instead of 12.4 on a quiet machine.
# Each binary is rebuilt only when its version stamp differs, so a second run
# takes a second. Everything lands under $MCR_K8S_CACHE (binaries, wrapper
# module); the Go build and module caches are Go's own.
#
# Env: MCR_K8S_CACHE (/var/cache/mcp-code-runner/k8s), K8S_VERSION (v1.37.2),
#      ETCD_VERSION (v3.7.0), FORCE=1 to rebuild.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
STAGING_VERSION="v0.${K8S_VERSION#v1.}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.0}"
CACHE="${MCR_K8S_CACHE:-/var/cache/mcp-code-runner/k8s}"
BIN_DIR="$CACHE/bin"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
STAMP="k8s $K8S_VERSION, etcd $ETCD_VERSION"
export CGO_ENABLED=0 GOFLAGS="-buildvcs=false" GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(etcd kube-apiserver kube-scheduler kubelet kubectl)
mkdir -p "$BIN_DIR"

package_of() {
	case "$1" in
	etcd) echo go.etcd.io/etcd/server/v3 ;;
	kube-apiserver | kube-scheduler | kube-controller-manager | kubelet | kubectl) echo "k8s.io/kubernetes/cmd/$1" ;;
	*) echo "build: unknown binary $1 (etcd, kube-apiserver, kube-scheduler, kube-controller-manager, kubelet, kubectl)" >&2; exit 2 ;;
	esac
}

missing=()
for b in "${targets[@]}"; do
	package_of "$b" >/dev/null
	if [ -z "${FORCE:-}" ] && [ -x "$BIN_DIR/$b" ] && [ "$(cat "$BIN_DIR/.$b.stamp" 2>/dev/null)" = "$STAMP" ]; then
		echo "build: $b up to date ($STAMP)"
	else
		missing+=("$b")
	fi
done
[ ${#missing[@]} -gt 0 ] || exit 0

# This project's build list (module and version), which the wrapper module
# requires too; the wrapper is made again when it changes.
own_modules="$(cd "$ROOT" && go list -m -f '{{if not .Main}}{{.Path}} {{.Version}}{{end}}' all)"
MOD_DIR="$CACHE/mod-$K8S_VERSION-etcd-$ETCD_VERSION-$(sha256sum <<<"$own_modules" | cut -c1-12)"

# The wrapper module, made once per version pair and project build list.
if [ ! -f "$MOD_DIR/go.sum" ]; then
	rm -rf "$MOD_DIR.tmp" && mkdir -p "$MOD_DIR.tmp" && cd "$MOD_DIR.tmp"
	printf 'module mcr-k8s-cluster\n\ngo 1.26.0\n\nrequire (\n\tk8s.io/kubernetes %s\n\tgo.etcd.io/etcd/server/v3 %s\n)\n' \
		"$K8S_VERSION" "$ETCD_VERSION" >go.mod
	kdir="$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
	[ -n "$kdir" ] || { echo "build: could not download k8s.io/kubernetes@$K8S_VERSION from the Go module proxy" >&2; exit 1; }
	staging="$(sed -n '/^replace (/,/^)/p' "$kdir/go.mod" | awk '/=>/{print $1}')"
	for m in $staging; do
		echo "replace $m => $m $STAGING_VERSION" >>go.mod
	done
	# The project's versions, but for the staging modules (pinned above);
	# go mod tidy drops the modules the cluster's binaries do not use.
	while read -r m v; do
		[ -n "$m" ] && ! grep -qxF "$m" <<<"$staging" && echo "require $m $v" >>go.mod
	done <<<"$own_modules"
	cat >tools.go <<'EOT'
//go:build tools

// Package tools makes the wrapper module require every command it builds.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
EOT
	go mod tidy
	got="$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)"
	[ "$got" = "$ETCD_VERSION" ] || echo "build: note: k8s.io/kubernetes $K8S_VERSION requires etcd $got (asked for $ETCD_VERSION)" >&2
	cd / && rm -rf "$MOD_DIR" && mv "$MOD_DIR.tmp" "$MOD_DIR"
fi
cd "$MOD_DIR"

# Without these the node reports version v0.0.0-master.
ver="${K8S_VERSION#v}" major="${K8S_VERSION#v}"
major="${major%%.*}" minor="${ver#*.}" minor="${minor%%.*}"
ld="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ld+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor"
	ld+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z -X $p.gitCommit=module-proxy"
done

# One go build for all the missing binaries: they share most packages, and
# one action graph keeps both cores busy.
pkgs=()
for b in "${missing[@]}"; do pkgs+=("$(package_of "$b")"); done
out="$(mktemp -d "$CACHE/out.XXXXXX")"
trap 'rm -rf "$out"' EXIT
start=$SECONDS
echo "build: ${missing[*]} (Kubernetes $K8S_VERSION, etcd $ETCD_VERSION; a cold build takes 5-15 minutes on 2 cores)"
go build -trimpath -ldflags "$ld" -o "$out/" "${pkgs[@]}"
for b in "${missing[@]}"; do
	src="$out/$b"
	[ "$b" = etcd ] && src="$out/server" # go names the binary of .../server/v3 "server"
	mv "$src" "$BIN_DIR/$b"
	echo "$STAMP" >"$BIN_DIR/.$b.stamp"
done
echo "build: done in $((SECONDS - start))s: ${missing[*]} in $BIN_DIR"

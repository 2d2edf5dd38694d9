#!/usr/bin/env bash
# Puts images into the test cluster's containerd, where its kubelet finds
# them without a registry.
#
#   scripts/k8s/images.sh import IMAGE...   # from the Docker daemon: docker save | ctr import
#   scripts/k8s/images.sh agent BINARY      # the agent image: FROM scratch + the static agent
#
# `agent` packs BINARY (bin/mcp-code-runner-agent) alone into an image named
# by its content, localhost/mcp-code-runner/agent:<sha256 prefix>, imports it
# and prints the name; the pods' init container copies the agent from it.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=common.sh
. "$HERE/common.sh"
[ -S "$SOCK" ] || { echo "images: the test cluster is not up (no $SOCK): run make k8s-up" >&2; exit 1; }

case "${1:-}" in
import)
	shift
	for img in "$@"; do
		start=$SECONDS
		id=$(docker image inspect -f '{{.Id}}' "$img" 2>/dev/null) || { echo "images: $img is not in the Docker daemon: run make images" >&2; exit 1; }
		stamp="$STATE/images/$(echo "$img" | tr '/:' '__').id"
		if [ "$(cat "$stamp" 2>/dev/null)" = "$id" ]; then
			echo "images: $img is in the cluster already"
			continue
		fi
		docker save "$img" | ctr_k8s images import - >/dev/null
		mkdir -p "$STATE/images" && echo "$id" >"$stamp"
		echo "images: imported $img in $((SECONDS - start))s"
	done
	;;
agent)
	bin="${2:?usage: images.sh agent BINARY}"
	tag="localhost/mcp-code-runner/agent:$(sha256sum "$bin" | cut -c1-16)"
	if ! ctr_k8s images ls -q | grep -qx "$tag"; then
		work=$(mktemp -d)
		trap 'rm -rf "$work"' EXIT
		mkdir -p "$work/rootfs"
		install -m 0555 "$bin" "$work/rootfs/agent"
		bash "$HERE/mk-oci-image.sh" "$work/agent.tar" "$tag" "$work/rootfs" '["/agent"]' 10001:10001
		ctr_k8s images import "$work/agent.tar" >/dev/null
	fi
	echo "$tag"
	;;
*)
	echo "usage: images.sh import IMAGE... | images.sh agent BINARY" >&2
	exit 2
	;;
esac

#!/usr/bin/env bash
# Installs the checkpoint tools, Debian trixie's crun and criu with their
# libraries, into DEST (default /var/lib/mcp-code-runner/checkpoint-tools,
# config sessions.checkpoint_tools): with them the crun backend checkpoints
# a paused session's sandbox and restores it on its next call. The host's
# own crun and criu may lack what that needs (Debian bookworm's crun is
# built without CRIU and its criu fails `criu check` on newer kernels).
#
# Built with Docker from deploy/checkpoint-tools/Dockerfile on the
# mcp-code-runner/debian:trixie image (which `make images` makes; this
# script makes it with the bash image when it is missing). Root only: DEST
# is root's, and so is what the tools do. Idempotent: a DEST from the same
# Dockerfile is kept. Ends with `criu check` on this host, whose failure it
# reports without failing (the server then pauses sessions by replaying
# their cells), unless CI=true, where the tests need checkpoints.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

DEST=${1:-${MCR_CHECKPOINT_TOOLS:-/var/lib/mcp-code-runner/checkpoint-tools}}
BIN=${BIN:-bin/mcp-code-runner}
ROOT_IMAGE=mcp-code-runner/debian:trixie
TAG=mcp-code-runner/checkpoint-tools:build

if [[ $(id -u) -ne 0 ]]; then
	echo "checkpoint-tools: run as root (the tools go to $DEST and checkpoint as root)" >&2
	exit 1
fi
case $DEST in
/*) ;;
*)
	echo "checkpoint-tools: $DEST: want an absolute directory" >&2
	exit 2
	;;
esac

stamp=$(cat deploy/checkpoint-tools/Dockerfile deploy/checkpoint-tools/*.c | sha256sum | cut -c1-16)-$(printf %s "$DEST" | sha256sum | cut -c1-8)
if [[ -f $DEST/STAMP && $(cat "$DEST/STAMP") == "$stamp" && -x $DEST/bin/crun && -x $DEST/bin/criu ]]; then
	echo "checkpoint-tools: $DEST is up to date ($(tr '\n' ' ' <"$DEST/VERSIONS"))"
else
	if ! docker image inspect "$ROOT_IMAGE" >/dev/null 2>&1; then
		echo "checkpoint-tools: $ROOT_IMAGE is missing; building the bash image, which makes it"
		"$BIN" images build bash
	fi
	echo "checkpoint-tools: building with Docker from deploy/checkpoint-tools/Dockerfile"
	DOCKER_BUILDKIT=0 docker build -q --network host --build-arg "DEST=$DEST" -t "$TAG" deploy/checkpoint-tools >/dev/null
	cid=$(docker create "$TAG")
	trap 'docker rm -f "$cid" >/dev/null 2>&1 || true' EXIT
	tmp=$(mktemp -d "$(dirname "$DEST")/.checkpoint-tools.XXXXXX" 2>/dev/null || { mkdir -p "$(dirname "$DEST")" && mktemp -d "$(dirname "$DEST")/.checkpoint-tools.XXXXXX"; })
	docker cp -q "$cid:/out/." "$tmp/"
	echo "$stamp" >"$tmp/STAMP"
	chmod 755 "$tmp"
	rm -rf "$DEST"
	mv "$tmp" "$DEST"
	docker rm -f "$cid" >/dev/null
	trap - EXIT
	echo "checkpoint-tools: installed in $DEST ($(tr '\n' ' ' <"$DEST/VERSIONS"))"
fi

"$DEST/bin/crun" --version | grep -q '+CRIU' || {
	echo "checkpoint-tools: $DEST/bin/crun lacks +CRIU" >&2
	exit 1
}
if out=$(PATH="$DEST/bin:$PATH" "$DEST/bin/criu" check 2>&1); then
	echo "checkpoint-tools: criu check: ${out##*$'\n'}"
else
	echo "checkpoint-tools: criu check fails on this host: ${out##*$'\n'}" >&2
	echo "checkpoint-tools: sessions will pause by replaying their cells ('mcp-code-runner doctor' says so too)" >&2
	[[ ${CI:-} != true ]] || exit 1
fi

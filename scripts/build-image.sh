#!/usr/bin/env bash
# build-image.sh SERVER_BINARY TAG: builds the server's container image
# (Dockerfile at the repository's root) from a static server binary with the
# agent beside it, as `make build` leaves them. The build context holds only
# the Dockerfile, the two binaries and the host's CA certificates.
set -euo pipefail

if [[ $# -ne 2 ]]; then
	echo "usage: $0 SERVER_BINARY TAG   (make image runs it)" >&2
	exit 2
fi
server=$1 tag=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
agent="$(dirname "$server")/mcp-code-runner-agent"
for f in "$server" "$agent"; do
	if [[ ! -x $f ]]; then
		echo "$f: missing or not executable; run \`make build\` first" >&2
		exit 1
	fi
done
certs=/etc/ssl/certs/ca-certificates.crt
if [[ ! -f $certs ]]; then
	echo "$certs: missing; install the ca-certificates package (apt-get install -y ca-certificates)" >&2
	exit 1
fi

ctx=$(mktemp -d "${TMPDIR:-/tmp}/mcr-image.XXXXXX")
trap 'rm -rf "$ctx"' EXIT
cp "$root/Dockerfile" "$ctx/Dockerfile"
cp "$server" "$ctx/mcp-code-runner"
cp "$agent" "$ctx/mcp-code-runner-agent"
cp "$certs" "$ctx/ca-certificates.crt"
chmod 0755 "$ctx/mcp-code-runner" "$ctx/mcp-code-runner-agent"
chmod 0644 "$ctx/ca-certificates.crt"
DOCKER_BUILDKIT=0 docker build --quiet --network host -t "$tag" "$ctx"
echo "built $tag"

#!/bin/sh
# ensure-gvisor.sh installs gVisor's runsc, the runtime of isolation gvisor,
# built from the Go module proxy at the version pinned below, into
# /var/lib/mcp-code-runner/gvisor/runsc (gvisor.runsc's default), and
# registers it with the Docker daemon, when one answers, as the runtime
# "runsc" (gvisor.docker_runtime's default) for the docker backend. The crun
# backend runs it itself. Idempotent: a runsc of the pinned version is kept.
# Run it as root.
#
# The flags of the Docker runtime are those the crun backend gives runsc
# (internal/sandbox/crun/gvisor.go): the systrap platform (no KVM), no
# network stack (sandboxes reach their egress proxy through a Unix socket,
# which --host-uds=open lets them open), no overlay over a read-only root,
# and (on the crun backend) the configuration's seccomp profile applied
# inside gVisor too.
#
# Environment: GVISOR_VERSION overrides the pinned module version;
# MCR_GVISOR_DIR the install directory.
set -eu

GVISOR_VERSION=${GVISOR_VERSION:-v0.0.0-20260905035102-160fafc42237}
DIR=${MCR_GVISOR_DIR:-/var/lib/mcp-code-runner/gvisor}

log() { printf 'ensure-gvisor: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run this script as root"
command -v go >/dev/null 2>&1 || die "go is missing: gVisor is built from the Go module proxy (install Go 1.26)"

runsc="$DIR/runsc"
if [ -x "$runsc" ] && [ "$(cat "$DIR/version" 2>/dev/null)" = "$GVISOR_VERSION" ]; then
	log "runsc $GVISOR_VERSION is installed in $DIR"
else
	log "building runsc $GVISOR_VERSION from the Go module proxy (about 2 minutes on 2 cores)"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	# Static (no cgo), as gVisor's own builds are; the version is the
	# module's, which runsc --version then reports.
	GOBIN="$tmp" CGO_ENABLED=0 go install -trimpath \
		-ldflags "-s -w -X gvisor.dev/gvisor/runsc/version.version=$GVISOR_VERSION" \
		"gvisor.dev/gvisor/runsc@$GVISOR_VERSION" || die "go install gvisor.dev/gvisor/runsc@$GVISOR_VERSION failed"
	mkdir -p "$DIR"
	chmod 0755 "$DIR"
	install -m 0755 "$tmp/runsc" "$runsc.new"
	mv "$runsc.new" "$runsc"
	printf '%s\n' "$GVISOR_VERSION" >"$DIR/version"
	log "installed $("$runsc" --version | head -1) in $DIR"
fi

# A sandbox under it, as the crun backend starts one, is the proof that it
# works on this host (its kernel, its platform).
if ! out=$("$runsc" --root "$DIR/check-state" --platform=systrap --network=none do /bin/true 2>&1); then
	log "warning: runsc installed, but a sandbox under it does not start here: $out"
fi
rm -rf "$DIR/check-state"

if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
	# Without --oci-seccomp: Docker gives runsc its default profile, whose
	# clone3 rule gVisor would answer with EPERM, so that no thread could be
	# made (the crun backend gives gVisor the profile with clone3 allowed).
	sh "$(dirname "$0")/register-runtime.sh" --replace runsc "$runsc" \
		--platform=systrap --network=none --host-uds=open --overlay2=none
else
	log "no Docker daemon answers: runsc is not registered with Docker (the crun backend runs it itself)"
fi

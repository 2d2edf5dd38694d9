#!/bin/sh
# ensure-gvisor.sh installs gVisor's runsc, the runtime of isolation gvisor,
# built from the Go module proxy at the version pinned below, into
# /var/lib/mcp-code-runner/gvisor/runsc (gvisor.runsc's default), and
# registers it with the Docker daemon, when one answers, as the runtime
# "runsc" (gvisor.docker_runtime's default) for the docker backend. The crun
# backend runs it itself. Beside it goes gVisor's containerd shim,
# containerd-shim-runsc-v1 of the same version, through which a containerd
# runs pods under runsc (the test cluster's runtime handler runsc, for the
# kubernetes backend's RuntimeClass). Idempotent: a runsc and a shim of the
# pinned version are kept. Run it as root.
#
# The flags of the Docker runtime are those the crun backend gives runsc
# (internal/sandbox/crun/gvisor.go): the systrap platform (no KVM), no
# network stack (sandboxes reach their egress proxy through a Unix socket,
# which --host-uds=open lets them open), no overlay over a read-only root,
# and (on the crun backend) the configuration's seccomp profile applied
# inside gVisor too.
#
# gVisor is built with the project's patches (scripts/gvisor/*.patch):
#   0001 makes the container's first process (the agent, the root PID
#        namespace's init) ignore the signals its programs send it that it
#        has no handler for, SIGKILL and SIGSTOP always, as Linux does for
#        an init (pid_namespaces(7); gVisor leaves it as a TODO), so that a
#        program cannot end or freeze its own sandbox's agent;
#   0002 does the same for the I/O signals of a file whose owner a program
#        made the agent (fcntl F_SETOWN, F_SETSIG), which gVisor sends as
#        the kernel's;
#   0003 makes the container's pids cgroup inside gVisor hold a limit: the
#        annotation dev.gvisor.spec.cgroup.pids.max sets its pids.max,
#        gVisor charges every fork and clone to it (it charged whichever of
#        the task's cgroups came first), a task holds its charge until it
#        is reaped (a zombie counts, as on Linux; gVisor let it go at
#        exit), and pids.events counts the forks it refused, as Linux's
#        pids controller does.
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
# The project's patches to gVisor (scripts/gvisor/*.patch), applied in
# order to the module's source before the build; the installed runsc is
# stamped with the version and the patches' SHA-256, so that a changed
# patch builds it again.
PATCHES=$(cd "$(dirname "$0")/gvisor" && pwd)
stamp="$GVISOR_VERSION $(cat "$PATCHES"/*.patch | sha256sum | cut -c1-12)"
if [ -x "$runsc" ] && [ "$(cat "$DIR/version" 2>/dev/null)" = "$stamp" ]; then
	log "runsc $stamp is installed in $DIR"
else
	log "building runsc $GVISOR_VERSION from the Go module proxy, with $(ls "$PATCHES"/*.patch | wc -l) patch(es) (about 2 minutes on 2 cores)"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	src=$(cd "$tmp" && go mod download -json "gvisor.dev/gvisor@$GVISOR_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -d "$src" ] || die "go mod download gvisor.dev/gvisor@$GVISOR_VERSION failed"
	cp -R "$src" "$tmp/src"
	chmod -R u+w "$tmp/src"
	for p in "$PATCHES"/*.patch; do
		(cd "$tmp/src" && git apply "$p") || die "applying $p to gVisor $GVISOR_VERSION failed"
	done
	# Static (no cgo), as gVisor's own builds are; runsc --version reports
	# the module's version and the patches'.
	(cd "$tmp/src" && CGO_ENABLED=0 go build -trimpath \
		-ldflags "-s -w -X 'gvisor.dev/gvisor/runsc/version.version=$stamp'" -o "$tmp/runsc" ./runsc) ||
		die "building runsc $GVISOR_VERSION failed"
	mkdir -p "$DIR"
	chmod 0755 "$DIR"
	install -m 0755 "$tmp/runsc" "$runsc.new"
	mv "$runsc.new" "$runsc"
	printf '%s\n' "$stamp" >"$DIR/version"
	log "installed $("$runsc" --version | head -1) in $DIR"
fi

# The containerd shim (runtime_type io.containerd.runsc.v1), from the same
# module at the same version, with the shim's own patches
# (scripts/gvisor/shim/*.patch): today one, which lets it start on a host
# that withholds CAP_SYS_RESOURCE. containerd finds it by this name; it is
# stamped, as runsc is, with the version and its patches' SHA-256.
shim="$DIR/containerd-shim-runsc-v1"
SHIM_PATCHES="$PATCHES/shim"
shim_stamp="$GVISOR_VERSION $(cat "$SHIM_PATCHES"/*.patch | sha256sum | cut -c1-12)"
if [ -x "$shim" ] && [ "$(cat "$DIR/shim-version" 2>/dev/null)" = "$shim_stamp" ]; then
	log "containerd-shim-runsc-v1 $shim_stamp is installed in $DIR"
else
	log "building containerd-shim-runsc-v1 $GVISOR_VERSION from the Go module proxy, with $(ls "$SHIM_PATCHES"/*.patch | wc -l) patch(es) (about a minute on 2 cores)"
	stmp=$(mktemp -d)
	ssrc=$(cd "$stmp" && go mod download -json "gvisor.dev/gvisor@$GVISOR_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -d "$ssrc" ] || { rm -rf "$stmp"; die "go mod download gvisor.dev/gvisor@$GVISOR_VERSION failed"; }
	cp -R "$ssrc" "$stmp/src"
	chmod -R u+w "$stmp/src"
	for p in "$SHIM_PATCHES"/*.patch; do
		(cd "$stmp/src" && git apply "$p") || { rm -rf "$stmp"; die "applying $p to gVisor $GVISOR_VERSION failed"; }
	done
	if ! (cd "$stmp/src" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$stmp/containerd-shim-runsc-v1" ./shim); then
		rm -rf "$stmp"
		die "building containerd-shim-runsc-v1 $GVISOR_VERSION failed"
	fi
	mkdir -p "$DIR"
	install -m 0755 "$stmp/containerd-shim-runsc-v1" "$shim.new"
	rm -rf "$stmp"
	mv "$shim.new" "$shim"
	printf '%s\n' "$shim_stamp" >"$DIR/shim-version"
	log "installed containerd-shim-runsc-v1 $shim_stamp in $DIR"
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

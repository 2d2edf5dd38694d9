#!/bin/sh
# ensure-gvisor.sh installs gVisor (Debian's runsc package) and registers it
# with the Docker daemon as the runtime "runsc", with the ptrace platform
# (the kvm platform needs /dev/kvm and hangs on many virtual machines) and
# no network stack at all (sandboxes have network none anyway).
# Sandboxes then run under gVisor with `serve --runtime runsc`. Run it as
# root after ensure-docker.sh; it is idempotent.
set -eu

log() { printf 'ensure-gvisor: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run this script as root"
if ! command -v runsc >/dev/null 2>&1; then
	log "installing runsc"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null || die "apt-get update failed"
	apt-get install -y -q runsc >/dev/null || die "apt-get install -y runsc failed"
fi
runsc_path=$(command -v runsc)

sh "$(dirname "$0")/register-runtime.sh" runsc "$runsc_path" --platform=ptrace --network=none
log "runsc registered with Docker ($(runsc --version 2>/dev/null | head -1))"

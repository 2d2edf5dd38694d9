#!/bin/sh
# ensure-docker.sh makes sure a Docker daemon answers on this machine, for
# mcp-code-runner on a fresh Debian or Ubuntu system. Run it as root. It is
# idempotent: when `docker info` already works it only adds debootstrap if that
# is missing, and exits.
#
# - Installs Debian's docker.io (and debootstrap, which builds the Debian base
#   image where no registry is reachable) with apt-get when missing.
# - Starts the daemon: `systemctl start docker` where systemd runs, otherwise
#   dockerd in the background with its log in /var/log/dockerd.log. With
#   CI=true or MCR_DOCKERD_NO_BRIDGE=1 that dockerd gets
#   --bridge=none --iptables=false (sandboxes use network none and image
#   builds use the host network, so no bridge is needed).
# - Waits up to 60 seconds for `docker info`.
set -eu

log() { printf 'ensure-docker: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

is_root() { [ "$(id -u)" -eq 0 ]; }

apt_install() {
	is_root || die "these packages are missing: $*; run this script as root (e.g. sudo $0) or install them: apt-get install -y $*"
	command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install $* with this system's package manager"
	log "installing $*"
	export DEBIAN_FRONTEND=noninteractive NEEDRESTART_MODE=a
	apt-get update -q >/dev/null || die "apt-get update failed"
	apt-get install -y -q "$@" >/dev/null || die "apt-get install -y $* failed"
}

docker_ok() { docker info >/dev/null 2>&1; }

missing=""
command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || missing="debootstrap"

if command -v docker >/dev/null 2>&1 && docker_ok; then
	[ -z "$missing" ] || apt_install $missing
	log "Docker is running ($(docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?'))"
	exit 0
fi

export PATH="$PATH:/usr/sbin:/sbin"
if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
	missing="docker.io $missing"
fi
[ -z "$missing" ] || apt_install $missing

if [ -d /run/systemd/system ]; then # systemd is PID 1
	is_root || die "the Docker daemon is not running; start it as root: systemctl start docker"
	log "starting docker with systemctl"
	systemctl start docker || die "systemctl start docker failed; see: journalctl -u docker"
elif command -v pgrep >/dev/null 2>&1 && pgrep -x dockerd >/dev/null 2>&1; then
	log "dockerd is already running; waiting for it to answer"
else
	is_root || die "the Docker daemon is not running; start it as root: dockerd >/var/log/dockerd.log 2>&1 &"
	set --
	if [ "${CI:-}" = true ] || [ "${MCR_DOCKERD_NO_BRIDGE:-}" = 1 ]; then
		set -- --bridge=none --iptables=false
	fi
	log "starting dockerd${*:+ $*} (log: /var/log/dockerd.log)"
	nohup dockerd "$@" >>/var/log/dockerd.log 2>&1 </dev/null &
fi

i=0
while ! docker_ok; do
	i=$((i + 1))
	[ "$i" -lt 60 ] || die "the Docker daemon did not answer within 60 s; see /var/log/dockerd.log (or journalctl -u docker)"
	sleep 1
done
log "Docker is running ($(docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?'))"

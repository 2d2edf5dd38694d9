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
# - Installs Debian's crun and registers it with the daemon
#   (scripts/register-runtime.sh: a SIGHUP reload, running containers are
#   untouched). The server runs sandboxes under crun when the daemon has it
#   (runtime "auto"): a container starts in about half runc's time.
#   MCR_CRUN=0 leaves crun out.
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

# system_dockerd_running reports whether the system daemon's process runs
# (started, but perhaps not answering yet). Only a daemon of root's is: a
# rootless one (dockerd run by another user inside rootlesskit) serves its
# own socket. Nor is a daemon of root's that serves only sockets of its own
# (-H/--host elsewhere, as the arm64 cross-build's second daemon of
# docs/ARM64.md): waiting for it would wait for nothing.
system_dockerd_running() {
	command -v pgrep >/dev/null 2>&1 || return 1
	for pid in $(pgrep -u 0 -x dockerd 2>/dev/null); do
		args=" $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) " || continue
		case "$args" in
		*" -H "* | *" -H="* | *" -Hunix:"* | *" -Htcp:"* | *" -Hfd:"* | *" --host "* | *" --host="*)
			case "$args" in *unix:///var/run/docker.sock* | *unix:///run/docker.sock*) return 0 ;; esac
			;;
		*) return 0 ;;
		esac
	done
	return 1
}

# hybrid_cgroups_ready makes a hybrid cgroup host (v1 controllers, with a
# cgroup2 tree at /sys/fs/cgroup/unified) usable by crun, which refuses to
# start a container while that cgroup2 tree holds any controller: each
# controller found there (hugetlb, where no v1 hierarchy took it) is mounted
# as a v1 hierarchy of its own, as on most hybrid hosts. runc works either
# way. Pure cgroup v1 and pure cgroup v2 hosts need nothing.
hybrid_cgroups_ready() {
	u=/sys/fs/cgroup/unified
	[ -f "$u/cgroup.controllers" ] || return 0
	for c in $(cat "$u/cgroup.controllers"); do
		mkdir -p "/sys/fs/cgroup/$c" && mount -t cgroup -o "$c" cgroup "/sys/fs/cgroup/$c" ||
			{ log "warning: cannot move the $c controller off cgroup2 (crun needs that on this hybrid host)"; return 1; }
		log "mounted the $c cgroup controller as a v1 hierarchy (crun refuses controllers on a hybrid host's cgroup2)"
	done
}

# register_crun registers an installed crun with the running daemon; crun is
# an optimisation, so a failure here is a warning.
register_crun() {
	[ "${MCR_CRUN:-1}" != 0 ] || return 0
	crun_path=$(command -v crun 2>/dev/null) || { log "warning: crun is not installed; sandboxes use the daemon's default runtime"; return 0; }
	is_root || { log "warning: not root, so crun is not registered with Docker; run: sudo $0"; return 0; }
	hybrid_cgroups_ready || { log "warning: crun is not registered; sandboxes use the daemon's default runtime"; return 0; }
	sh "$(dirname "$0")/register-runtime.sh" crun "$crun_path" || log "warning: crun could not be registered; sandboxes use the daemon's default runtime"
}

missing=""
command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || missing="debootstrap"
if [ "${MCR_CRUN:-1}" != 0 ] && ! command -v crun >/dev/null 2>&1; then
	missing="$missing crun"
fi

if command -v docker >/dev/null 2>&1 && docker_ok; then
	[ -z "$missing" ] || apt_install $missing
	register_crun
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
elif system_dockerd_running; then
	log "dockerd is already running; waiting for it to answer"
else
	is_root || die "the Docker daemon is not running; start it as root: dockerd >/var/log/dockerd.log 2>&1 &"
	set --
	if [ "${CI:-}" = true ] || [ "${MCR_DOCKERD_NO_BRIDGE:-}" = 1 ]; then
		set -- --bridge=none --iptables=false
	fi
	log "starting dockerd${*:+ $*} (log: /var/log/dockerd.log)"
	# In a session of its own, so that stopping the run that started it (its
	# process group) leaves the daemon, and its containerd, serving; from /,
	# so that removing the directory it was started from cannot touch it.
	(cd / && exec setsid nohup dockerd "$@") >>/var/log/dockerd.log 2>&1 </dev/null &
fi

i=0
while ! docker_ok; do
	i=$((i + 1))
	[ "$i" -lt 60 ] || die "the Docker daemon did not answer within 60 s; see /var/log/dockerd.log (or journalctl -u docker)"
	sleep 1
done
register_crun
log "Docker is running ($(docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?'))"

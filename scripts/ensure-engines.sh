#!/usr/bin/env bash
# ensure-engines.sh starts the other container engines the server is tested
# against, beside the system's rootful Docker (scripts/ensure-docker.sh), and
# gives them the runtime images their tests use:
#
#   podman           Debian's Podman, rootful, serving its Docker-compatible
#                    API at unix:///run/podman/podman.sock
#   rootless         Docker run by the unprivileged user mcr-rootless through
#                    rootlesskit (Debian's rootlesskit, slirp4netns and uidmap),
#                    at unix:///run/user/UID/docker.sock
#   rootless-podman  Podman run by the same user (`podman system service`), at
#                    unix:///run/user/UID/podman/podman.sock
#
# Usage: bash scripts/ensure-engines.sh [podman] [rootless] [rootless-podman]
# (all by default). It prints one line per engine, NAME=DOCKER_HOST, for the
# callers to use. Idempotent: an engine already answering is left as it is;
# an image already there with the same ID is not loaded again.
set -euo pipefail

IMAGES=${MCR_ENGINE_IMAGES:-"mcp-code-runner/base:1 mcp-code-runner/python:2 mcp-code-runner/node:2"}
# Rootless Docker also runs the packages e2e file, which tests the uids a
# rootless engine gives the installer's files; it needs the installer's image.
ROOTLESS_IMAGES=${MCR_ENGINE_ROOTLESS_IMAGES:-"$IMAGES mcp-code-runner/packages:2"}
ROOTLESS_USER=${MCR_ROOTLESS_USER:-mcr-rootless}
PODMAN_HOST=unix:///run/podman/podman.sock

log() { echo "ensure-engines: $*" >&2; }
die() { log "error: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root: it installs packages, adds a user and starts daemons"

# One run at a time, holding LOCK to its end: CI runs this beside the start
# of make test, and scripts/test-engines.sh takes the same lock before it
# looks for the engines, so it waits for a run still under way. The daemons
# started here do not inherit the lock's descriptor (9>&- on each), which
# would hold the lock for as long as they live.
LOCK=${MCR_ENGINES_LOCK:-/run/mcp-code-runner-engines.lock}
exec 9>"$LOCK"
flock 9

apt_install() {
	log "installing $*"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >/tmp/ensure-engines-apt.log 2>&1 ||
		{ DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null 2>&1 &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >/tmp/ensure-engines-apt.log 2>&1; } ||
		die "apt-get install $* failed; see /tmp/ensure-engines-apt.log"
}

# wait_for HOST SECONDS LOG: until the engine at HOST answers.
wait_for() {
	local host=$1 limit=$2 logfile=$3 i=0
	until docker -H "$host" version >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -le $((limit * 5)) ] || die "the engine at $host did not answer within $limit s; see $logfile"
		sleep 0.2
	done
}

# load_images HOST [IMAGE...]: each image (IMAGES by default) the engine
# lacks, or has under another ID, from the system daemon.
load_images() {
	local host=$1 img want have
	shift
	for img in ${*:-$IMAGES}; do
		want=$(docker image inspect -f '{{.Id}}' "$img" 2>/dev/null) || die "image $img is not built in the system daemon; run make images first"
		have=$(docker -H "$host" image inspect -f '{{.Id}}' "$img" 2>/dev/null || true)
		if [ "$want" != "$have" ]; then
			log "loading $img into $host"
			docker save "$img" | docker -H "$host" load -q >/dev/null || die "loading $img into $host failed"
		fi
	done
}

ensure_podman() {
	command -v podman >/dev/null 2>&1 || apt_install podman
	if ! docker -H "$PODMAN_HOST" version >/dev/null 2>&1; then
		mkdir -p /run/podman
		log "starting podman system service (log: /var/log/podman-service.log)"
		# No systemd here: cgroupfs owns the containers' cgroups, and events go
		# to a file (journald's default would drop them). It runs from /: its
		# conmons inherit its working directory, and one that is removed (the
		# clone a run started it from) fails every container start ("write
		# child: broken pipe", conmon: "Failed to get working directory").
		(cd / && exec setsid nohup podman --cgroup-manager=cgroupfs --events-backend=file system service --time=0 "$PODMAN_HOST") \
			>>/var/log/podman-service.log 2>&1 </dev/null 9>&- &
		wait_for "$PODMAN_HOST" 60 /var/log/podman-service.log
	fi
	load_images "$PODMAN_HOST"
	echo "podman=$PODMAN_HOST"
}

# rootless_user: the unprivileged user that runs the rootless engines, with
# its subordinate ids and runtime directory; prints its uid.
rootless_user() {
	local missing="" p
	for p in rootlesskit slirp4netns newuidmap; do
		command -v "$p" >/dev/null 2>&1 || missing="$missing ${p/newuidmap/uidmap}"
	done
	[ -z "$missing" ] || apt_install $missing
	id "$ROOTLESS_USER" >/dev/null 2>&1 || { log "adding user $ROOTLESS_USER"; useradd -m -s /bin/bash "$ROOTLESS_USER"; }
	# The user's subordinate ids map its containers' users (useradd adds
	# them where login.defs says so; older systems need them added).
	grep -q "^$ROOTLESS_USER:" /etc/subuid || echo "$ROOTLESS_USER:200000:65536" >>/etc/subuid
	grep -q "^$ROOTLESS_USER:" /etc/subgid || echo "$ROOTLESS_USER:200000:65536" >>/etc/subgid
	# slirp4netns opens /dev/net/tun as the user: Debian makes it 0666, some
	# container hosts 0600.
	[ -c /dev/net/tun ] || die "/dev/net/tun is missing: rootlesskit's network needs the tun device"
	chmod 0666 /dev/net/tun
	local uid
	uid=$(id -u "$ROOTLESS_USER")
	install -d -m 0700 -o "$ROOTLESS_USER" -g "$ROOTLESS_USER" "/run/user/$uid"
	echo "$uid"
}

ensure_rootless() {
	local tool=/usr/share/docker.io/contrib/dockerd-rootless.sh
	[ -x "$tool" ] || tool=$(command -v dockerd-rootless.sh || true)
	[ -n "$tool" ] || die "dockerd-rootless.sh not found (Debian's docker.io ships it in /usr/share/docker.io/contrib)"
	local uid
	uid=$(rootless_user)
	local run=/run/user/$uid host=unix:///run/user/$uid/docker.sock
	if ! docker -H "$host" version >/dev/null 2>&1; then
		log "starting rootless dockerd as $ROOTLESS_USER (log: ~$ROOTLESS_USER/dockerd.log)"
		su - "$ROOTLESS_USER" -c "export XDG_RUNTIME_DIR=$run PATH=$(dirname "$tool"):/usr/sbin:/usr/bin:/sbin:/bin;
			setsid nohup $(basename "$tool") --iptables=false >dockerd.log 2>&1 </dev/null &" 9>&-
		wait_for "$host" 60 "$(getent passwd "$ROOTLESS_USER" | cut -d: -f6)/dockerd.log"
	fi
	load_images "$host" $ROOTLESS_IMAGES
	echo "rootless=$host"
}

ensure_rootless_podman() {
	command -v podman >/dev/null 2>&1 || apt_install podman
	local uid
	uid=$(rootless_user)
	local run=/run/user/$uid host=unix:///run/user/$uid/podman/podman.sock
	if ! docker -H "$host" version >/dev/null 2>&1; then
		log "starting rootless podman system service as $ROOTLESS_USER (log: ~$ROOTLESS_USER/podman-service.log)"
		# overlay, not the vfs driver Podman 4.3 picks for a new rootless
		# user, which copies every layer in full; the kernel mounts overlay
		# for an unprivileged user since 5.13. No systemd: cgroupfs, events
		# in a file.
		# A machine stopped while the service ran keeps /run/user on its disk
		# where /run is no tmpfs: Podman's state then still says its containers
		# run, and with no pause process left it fails at start ("invalid
		# internal status ... could not find any running process"). system
		# migrate marks them stopped and starts a new pause process; the
		# sandboxes they were are removed, as no server can be using them.
		su - "$ROOTLESS_USER" -c "export XDG_RUNTIME_DIR=$run;
			if [ ! -e ~/.config/containers/storage.conf ]; then
				mkdir -p ~/.config/containers && printf '[storage]\\ndriver = \"overlay\"\\n' >~/.config/containers/storage.conf
				podman system reset -f >/dev/null 2>&1 || true
			fi
			podman system migrate >>podman-service.log 2>&1
			podman ps -aq --filter label=io.mcp-code-runner.managed=true 2>>podman-service.log | xargs -r podman rm -f >>podman-service.log 2>&1
			mkdir -p $run/podman
			setsid nohup podman --cgroup-manager=cgroupfs --events-backend=file system service --time=0 $host \
				>>podman-service.log 2>&1 </dev/null &" 9>&-
		wait_for "$host" 60 "$(getent passwd "$ROOTLESS_USER" | cut -d: -f6)/podman-service.log"
	fi
	load_images "$host"
	echo "rootless-podman=$host"
}

engines=${*:-podman rootless rootless-podman}
command -v docker >/dev/null 2>&1 || die "the docker CLI is missing; run scripts/ensure-docker.sh first"
for e in $engines; do
	case $e in
	podman) ensure_podman ;;
	rootless) ensure_rootless ;;
	rootless-podman) ensure_rootless_podman ;;
	*) die "unknown engine $e: want podman, rootless or rootless-podman" ;;
	esac
done

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

if docker info --format '{{range $k, $v := .Runtimes}}{{$k}} {{end}}' 2>/dev/null | grep -qw runsc; then
	log "runsc is registered with Docker"
	exit 0
fi

conf=/etc/docker/daemon.json
mkdir -p /etc/docker
if [ -s "$conf" ] && ! grep -q '"runtimes"' "$conf"; then
	# Merge into an existing configuration without losing its settings.
	command -v python3 >/dev/null 2>&1 || die "$conf exists; add a runsc entry to its \"runtimes\" by hand (path $runsc_path, runtimeArgs --platform=ptrace --network=none)"
	python3 - "$conf" "$runsc_path" <<'PY'
import json, sys
path, runsc = sys.argv[1], sys.argv[2]
conf = json.load(open(path))
conf.setdefault("runtimes", {})["runsc"] = {"path": runsc, "runtimeArgs": ["--platform=ptrace", "--network=none"]}
json.dump(conf, open(path, "w"), indent=2)
PY
elif [ -s "$conf" ]; then
	grep -q '"runsc"' "$conf" || die "$conf has runtimes but no runsc; add {\"runsc\": {\"path\": \"$runsc_path\", \"runtimeArgs\": [\"--platform=ptrace\", \"--network=none\"]}} to them"
else
	cat >"$conf" <<JSON
{
  "runtimes": {
    "runsc": {
      "path": "$runsc_path",
      "runtimeArgs": ["--platform=ptrace", "--network=none"]
    }
  }
}
JSON
fi

# Runtimes are reloaded on SIGHUP, without stopping running containers.
if [ -d /run/systemd/system ]; then
	systemctl reload docker || systemctl restart docker
else
	pkill -HUP -x dockerd || die "dockerd is not running; start it (scripts/ensure-docker.sh) and run this again"
fi
i=0
until docker info --format '{{range $k, $v := .Runtimes}}{{$k}} {{end}}' 2>/dev/null | grep -qw runsc; do
	i=$((i + 1))
	[ "$i" -lt 20 ] || die "Docker did not pick up the runsc runtime; see /var/log/dockerd.log"
	sleep 0.5
done
log "runsc registered with Docker ($(runsc --version 2>/dev/null | head -1))"

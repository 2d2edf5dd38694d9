#!/bin/sh
# register-runtime.sh [--replace] NAME PATH [ARG...] registers an OCI runtime with the
# running Docker daemon: it adds {"NAME": {"path": PATH, "runtimeArgs":
# [ARG...]}} to /etc/docker/daemon.json's "runtimes", keeping every other
# setting, and reloads the daemon's configuration (SIGHUP, or systemctl
# reload), which leaves running containers untouched. Idempotent: a runtime
# the daemon already has is left as it is, unless --replace is given and
# daemon.json's entry differs (another binary or other flags). Run it as
# root.
set -eu

log() { printf 'register-runtime: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

replace=false
if [ "${1:-}" = --replace ]; then
	replace=true
	shift
fi
[ $# -ge 2 ] || die "usage: $0 [--replace] NAME PATH [RUNTIME-ARG...]"
name=$1 path=$2
shift 2
[ "$(id -u)" -eq 0 ] || die "run this script as root"
[ -x "$path" ] || die "$path is not an executable runtime"

registered() { docker info --format '{{range $k, $v := .Runtimes}}{{$k}} {{end}}' 2>/dev/null | grep -qw "$name"; }
# loaded says whether the daemon runs name from path (after a reload).
loaded() { docker info --format "{{with index .Runtimes \"$name\"}}{{.Path}}{{end}}" 2>/dev/null | grep -qx "$path"; }
conf=/etc/docker/daemon.json
# same says whether daemon.json's entry for name is path with these flags.
same() {
	[ -s "$conf" ] && command -v python3 >/dev/null 2>&1 && python3 - "$conf" "$name" "$path" "$@" <<'PY'
import json, sys
conf_path, name, path, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
entry = json.load(open(conf_path)).get("runtimes", {}).get(name, {})
want = {"path": path}
if args:
    want["runtimeArgs"] = args
sys.exit(0 if entry == want else 1)
PY
}
if registered && { [ "$replace" = false ] || same "$@"; }; then
	log "$name is registered with Docker"
	exit 0
fi

mkdir -p /etc/docker
if [ -s "$conf" ]; then
	# Merge into the existing configuration without losing its settings.
	command -v python3 >/dev/null 2>&1 || die "$conf exists and python3 is missing to merge into it; add \"$name\": {\"path\": \"$path\"} to its \"runtimes\" by hand and run: kill -HUP \$(pidof dockerd)"
	python3 - "$conf" "$name" "$path" "$@" <<'PY'
import json, sys
conf_path, name, path, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
with open(conf_path) as f:
    conf = json.load(f)
entry = {"path": path}
if args:
    entry["runtimeArgs"] = args
conf.setdefault("runtimes", {})[name] = entry
with open(conf_path + ".tmp", "w") as f:
    json.dump(conf, f, indent=2)
    f.write("\n")
PY
	mv "$conf.tmp" "$conf"
else
	entry="\"path\": \"$path\""
	if [ $# -gt 0 ]; then
		args=""
		for a in "$@"; do args="$args${args:+, }\"$a\""; done
		entry="$entry, \"runtimeArgs\": [$args]"
	fi
	printf '{\n  "runtimes": {\n    "%s": {%s}\n  }\n}\n' "$name" "$entry" >"$conf"
fi

# Runtimes are reloaded on SIGHUP, without stopping running containers.
if [ -d /run/systemd/system ]; then
	systemctl reload docker || systemctl restart docker
else
	pkill -HUP -x dockerd || die "dockerd is not running; start it (scripts/ensure-docker.sh) and run this again"
fi
i=0
until registered && loaded; do
	i=$((i + 1))
	[ "$i" -lt 40 ] || die "Docker did not pick up the $name runtime; see /var/log/dockerd.log"
	sleep 0.5
done
log "$name registered with Docker"

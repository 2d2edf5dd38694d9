#!/usr/bin/env bash
# test-engines.sh runs the tests that prove the server on the engines beside
# the system's rootful Docker, each started by scripts/ensure-engines.sh:
#
#   Podman (rootful)  the hostile battery (internal/containment) and the e2e
#                     files of runs, through Podman's Docker-compatible API
#   rootless Docker   on this cgroup v1 host they run containers without
#   rootless Podman   cgroups: the server must refuse them at start and doctor
#                     must fail, each naming the limits; with
#                     allow_unenforced_limits, e2e files pass with the server
#                     run as the engine's own user, as a rootless deployment
#                     runs it
#
# Usage: MCR_BINARY=bin/mcp-code-runner bash scripts/test-engines.sh [podman] [rootless]
# With no argument, all of them; "podman" is rootful Podman, "rootless" the
# two rootless engines (make test runs each part in a lane of its own).
# An engine that does not answer fails the run under CI=true, and is skipped
# with the command that starts it otherwise.
set -uo pipefail
PARTS=" ${*:-podman rootless} "
for part in $PARTS; do
	case $part in
	podman | rootless) ;;
	*)
		echo "test-engines: unknown part $part (podman, rootless)" >&2
		exit 2
		;;
	esac
done

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN=${MCR_BINARY:?set MCR_BINARY to the built server}
PODMAN_HOST=unix:///run/podman/podman.sock
# A run of scripts/ensure-engines.sh still under way (CI starts it beside
# make test) holds this lock until every engine answers with its images.
LOCK=${MCR_ENGINES_LOCK:-/run/mcp-code-runner-engines.lock}
if [[ -e $LOCK && -w $LOCK ]]; then
	echo "test-engines: waiting for scripts/ensure-engines.sh, if it is running" >&2
	flock -w 900 "$LOCK" true ||
		echo "test-engines: scripts/ensure-engines.sh held its lock for 15 minutes (is a process holding $LOCK?); going on" >&2
fi
ROOTLESS_USER=${MCR_ROOTLESS_USER:-mcr-rootless}
ROOTLESS_HOST= ROOTLESS_PODMAN_HOST=
if id "$ROOTLESS_USER" >/dev/null 2>&1; then
	ROOTLESS_HOST=unix:///run/user/$(id -u "$ROOTLESS_USER")/docker.sock
	ROOTLESS_PODMAN_HOST=unix:///run/user/$(id -u "$ROOTLESS_USER")/podman/podman.sock
fi
# The e2e files whose runs go through the engine, needing no more than the
# bash, python and node images: every tool, both protocol eras, stdio and
# HTTP, both SDKs, tasks (cancellation included). Rootless Docker adds the
# packages file (installs through the egress proxy, files of the engine's
# subordinate uids); rootless Podman runs the client file, every tool. The
# teams and Inspector files test the server's HTTP side, which no engine
# changes, and long runs take 4 minutes an engine: all seven files pass on
# each engine (docs/SECURITY.md), and CI keeps these for its time.
E2E_TESTS=(tests/client.test.mjs tests/sdk-v1.test.mjs tests/tasks.test.mjs)

rc=0
fail() {
	echo "test-engines: FAIL: $*" >&2
	rc=1
}

# reachable NAME HOST: whether the engine answers; if not, fails under CI
# and says how to start it otherwise.
reachable() {
	if [[ -n $2 ]] && docker -H "$2" version >/dev/null 2>&1; then
		return 0
	fi
	if [[ ${CI:-} == true ]]; then
		fail "$1 does not answer${2:+ at $2}; CI starts it with scripts/ensure-engines.sh"
	else
		echo "test-engines: $1 skipped: it does not answer${2:+ at $2}; start it with: sudo bash scripts/ensure-engines.sh" >&2
	fi
	return 1
}

# e2e ENGINE HOST USER FILES [ENV=VALUE...]: e2e files against the engine,
# with the server and client run as USER (root: as this script).
e2e() {
	local engine=$1 host=$2 user=$3 files=$4
	shift 4
	echo "=== e2e against $engine ($host) as $user: $files ==="
	local as=()
	if [[ $user != root ]]; then
		as=(setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" --init-groups
			env HOME="$(getent passwd "$user" | cut -d: -f6)" XDG_RUNTIME_DIR="/run/user/$(id -u "$user")")
	fi
	# shellcheck disable=SC2086 # files is a list
	(cd e2e && "${as[@]}" env MCR_E2E_ENGINE="$engine" DOCKER_HOST="$host" MCR_BINARY="$(realpath "../$BIN")" "$@" \
		node --test --test-concurrency=1 --test-timeout=600000 --test-reporter=spec $files) ||
		fail "the e2e files against $engine"
	local left
	left=$(docker -H "$host" ps -aq --filter label=io.mcp-code-runner.managed=true)
	[[ -z $left ]] || fail "sandbox containers left on $engine: $left"
}

# refused NAME HOST: a rootless engine on this cgroup v1 host cannot set the
# limits, so doctor fails and serve stops at start, each naming them, unless
# allow_unenforced_limits, with which doctor runs bash and warns.
refused() {
	local name=$1 host=$2 out
	echo "=== $name without cgroups is refused ==="
	out=$("$BIN" doctor --docker-host "$host" 2>&1)
	if [[ $? -eq 0 ]] || ! grep -q "cannot set the memory, pids, CPU limits" <<<"$out"; then
		fail "doctor on $name without cgroups did not fail naming the limits: $out"
	fi
	out=$(timeout 60 "$BIN" serve --docker-host "$host" </dev/null 2>&1)
	if [[ $? -eq 0 ]] || ! grep -q "allow_unenforced_limits" <<<"$out"; then
		fail "serve on $name without cgroups did not stop at start with the fix: $out"
	fi
	out=$("$BIN" doctor --docker-host "$host" --allow-unenforced-limits 2>&1)
	if ! grep -q "^ok    bash " <<<"$out" || ! grep -q "WITHOUT the memory, pids, CPU limits" <<<"$out"; then
		fail "doctor on $name with allow_unenforced_limits did not run bash and warn: $out"
	fi
	# This doctor runs as root; the engine, as its user, cannot enter root's
	# private socket directory, and doctor says whom to run the server as.
	if ! grep -q "^ok    agent for .*streams: .*run the server as that user for agent sockets" <<<"$out"; then
		fail "doctor as root on $name did not say to run the server as the engine's user for sockets: $out"
	fi
}

if [[ $PARTS == *" podman "* ]] && reachable "Podman" "$PODMAN_HOST"; then
	echo "=== the hostile battery against Podman ==="
	DOCKER_HOST=$PODMAN_HOST MCR_TEST_BINARY=$(realpath "$BIN") go test -count=1 -timeout 30m ./internal/containment/ ||
		fail "the hostile battery against Podman"
	e2e podman "$PODMAN_HOST" root "${E2E_TESTS[*]}"
	echo "=== an image built through Podman ==="
	# A machine with Podman and no Docker builds its images through Podman's
	# Docker-compatible API: the build, the version check in a throwaway
	# container, the labels, and the skip of an image that is up to date.
	# The Debian root comes from the system daemon, as a registry would give
	# it (these machines have none; images build pulls or bootstraps it).
	docker save mcp-code-runner/debian:trixie | docker -H "$PODMAN_HOST" load -q >/dev/null ||
		fail "loading the Debian root image into Podman"
	out=$("$BIN" images build base --force --docker-host "$PODMAN_HOST" 2>&1) && grep -q "^bash: GNU bash" <<<"$out" ||
		fail "building the base image through Podman: $out"
	out=$("$BIN" images build base --docker-host "$PODMAN_HOST" 2>&1) && grep -q "base:1 is up to date" <<<"$out" ||
		fail "the base image built through Podman is not seen as up to date: $out"
	# Podman's copy goes back to the system daemon's, as ensure-engines loads it.
	docker save mcp-code-runner/base:1 | docker -H "$PODMAN_HOST" load -q >/dev/null || fail "reloading the base image into Podman"
fi

if [[ $PARTS == *" rootless "* ]] && reachable "rootless Docker" "$ROOTLESS_HOST"; then
	refused "rootless Docker" "$ROOTLESS_HOST"
	e2e rootless "$ROOTLESS_HOST" "$ROOTLESS_USER" "${E2E_TESTS[*]} tests/packages.test.mjs" MCR_ALLOW_UNENFORCED_LIMITS=true
fi

if [[ $PARTS == *" rootless "* ]] && reachable "rootless Podman" "$ROOTLESS_PODMAN_HOST"; then
	refused "rootless Podman" "$ROOTLESS_PODMAN_HOST"
	e2e podman "$ROOTLESS_PODMAN_HOST" "$ROOTLESS_USER" tests/client.test.mjs MCR_ALLOW_UNENFORCED_LIMITS=true
fi

exit $rc

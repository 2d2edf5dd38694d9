#!/usr/bin/env bash
# test-engines.sh runs the tests that prove the server on the engines beside
# the system's rootful Docker, each started by scripts/ensure-engines.sh:
#
#   Podman (rootful)  the hostile battery (internal/containment) and the e2e
#                     suites of runs, through Podman's Docker-compatible API
#   rootless Docker   on this cgroup v1 host it runs containers without
#                     cgroups: the server must refuse it at start and doctor
#                     must fail, each naming the limits; with
#                     allow_unenforced_limits, the e2e client suites pass
#
# Usage: MCR_BINARY=bin/mcp-code-runner bash scripts/test-engines.sh
# An engine that does not answer fails the run under CI=true, and is skipped
# with the command that starts it otherwise.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN=${MCR_BINARY:?set MCR_BINARY to the built server}
PODMAN_HOST=unix:///run/podman/podman.sock
ROOTLESS_USER=${MCR_ROOTLESS_USER:-mcr-rootless}
ROOTLESS_HOST=
if id "$ROOTLESS_USER" >/dev/null 2>&1; then
	ROOTLESS_HOST=unix:///run/user/$(id -u "$ROOTLESS_USER")/docker.sock
fi
# The e2e files whose runs go through the engine, needing no more than the
# bash, python and node images and no package registry: every tool, both
# protocol eras, stdio and HTTP, both SDKs, tasks (cancellation included).
# The teams and Inspector files test the server's HTTP side, which no engine
# changes; long runs and packages need more time and images than CI has
# room for twice more.
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

# e2e ENGINE HOST [ENV=VALUE...]: the e2e client suites against the engine.
e2e() {
	local engine=$1 host=$2
	shift 2
	echo "=== e2e against $engine ($host) ==="
	(cd e2e && env MCR_E2E_ENGINE="$engine" DOCKER_HOST="$host" MCR_BINARY="$(realpath "../$BIN")" "$@" \
		node --test --test-concurrency=1 --test-timeout=600000 --test-reporter=spec "${E2E_TESTS[@]}") ||
		fail "the e2e suites against $engine"
	local left
	left=$(docker -H "$host" ps -aq --filter label=io.mcp-code-runner.managed=true)
	[[ -z $left ]] || fail "sandbox containers left on $engine: $left"
}

if reachable "Podman" "$PODMAN_HOST"; then
	echo "=== the hostile battery against Podman ==="
	DOCKER_HOST=$PODMAN_HOST MCR_TEST_BINARY=$(realpath "$BIN") go test -count=1 -timeout 30m ./internal/containment/ ||
		fail "the hostile battery against Podman"
	e2e podman "$PODMAN_HOST"
fi

if reachable "rootless Docker" "$ROOTLESS_HOST"; then
	echo "=== rootless Docker without cgroups is refused ==="
	out=$("$BIN" doctor --docker-host "$ROOTLESS_HOST" 2>&1)
	if [[ $? -eq 0 ]] || ! grep -q "cannot set the memory, pids, CPU limits" <<<"$out"; then
		fail "doctor on rootless Docker without cgroups did not fail naming the limits: $out"
	fi
	out=$(timeout 60 "$BIN" serve --docker-host "$ROOTLESS_HOST" </dev/null 2>&1)
	if [[ $? -eq 0 ]] || ! grep -q "allow_unenforced_limits" <<<"$out"; then
		fail "serve on rootless Docker without cgroups did not stop at start with the fix: $out"
	fi
	out=$("$BIN" doctor --docker-host "$ROOTLESS_HOST" --allow-unenforced-limits true 2>&1)
	if ! grep -q "^ok    bash " <<<"$out" || ! grep -q "WITHOUT the memory, pids, CPU limits" <<<"$out"; then
		fail "doctor with allow_unenforced_limits did not run bash and warn: $out"
	fi
	e2e rootless "$ROOTLESS_HOST" MCR_ALLOW_UNENFORCED_LIMITS=true
fi

exit $rc

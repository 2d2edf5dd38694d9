#!/usr/bin/env bash
# ensure-test-tools.sh: installs (if missing) the programs that tests drive
# besides Docker: Prometheus, which scrapes the server in
# internal/e2e/metrics_test.go (only its binary: the system service is not
# started), and docker-compose, which runs docker-compose.yml in
# internal/e2e/image_test.go; and the other engines scripts/test-engines.sh
# proves the server on: Podman, and rootless Docker's rootlesskit, slirp4netns
# and uidmap; and Chromium, which the browser tests drive headless
# (e2e/tests/browser-*.test.mjs, through playwright-core: no browser of its
# own is downloaded). All come from Debian's archive (Chromium with its
# security updates: the archive keeps only the newest build, so the version is
# the one the release ships, printed below).
set -euo pipefail

missing=()
command -v prometheus >/dev/null || missing+=(prometheus)
command -v docker-compose >/dev/null || docker compose version >/dev/null 2>&1 || missing+=(docker-compose)
command -v podman >/dev/null || missing+=(podman)
command -v rootlesskit >/dev/null || missing+=(rootlesskit)
command -v slirp4netns >/dev/null || missing+=(slirp4netns)
command -v newuidmap >/dev/null || missing+=(uidmap)
command -v chromium >/dev/null || missing+=(chromium)
if [[ ${#missing[@]} -eq 0 ]]; then
	echo "test tools present: $(prometheus --version 2>&1 | head -n1); $(docker-compose version --short 2>/dev/null || docker compose version --short); $(chromium --version 2>/dev/null)"
	exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
	echo "missing ${missing[*]}: install them with: sudo apt-get install -y ${missing[*]}" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# Concurrent apt runs (scripts/ensure-docker.sh) wait for the lock.
apt_get() { apt-get -o DPkg::Lock::Timeout=300 "$@"; }
for try in 1 2 3; do
	if apt_get update -qq && apt_get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
		break
	fi
	if [[ $try -eq 3 ]]; then
		echo "installing ${missing[*]} failed" >&2
		exit 1
	fi
	sleep $((try * 5))
done
# The package's service is not wanted: the tests start their own.
if command -v service >/dev/null && service prometheus status >/dev/null 2>&1; then
	service prometheus stop >/dev/null 2>&1 || true
fi
echo "installed ${missing[*]}: $(prometheus --version 2>&1 | head -n1); $(chromium --version 2>/dev/null)"

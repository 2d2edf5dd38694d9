#!/usr/bin/env bash
# Fails when a sandbox container (or, with a kubeconfig, a sandbox pod) was
# left behind by a process that has ended. A sandbox whose owning process
# still runs on this host belongs to a server or test that is still at work
# (on a shared machine, someone else's), so it is not a leftover yet.
#   usage: check-leftovers.sh [KUBECTL ARGS...]
set -uo pipefail

host=$(hostname)
rc=0

# gone HOST PID: true when PID is not a live process of this host.
gone() {
	[[ $1 != "$host" ]] && return 1
	[[ -z $2 ]] && return 0
	! kill -0 "$2" 2>/dev/null && [[ ! -d /proc/$2 ]]
}

echo "checking that no sandbox container was left behind"
if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
	while read -r id owner_host owner_pid; do
		[[ -z $id ]] && continue
		if gone "$owner_host" "$owner_pid"; then
			echo "left-behind container $id (owner pid $owner_pid has ended):"
			docker ps -a --filter "id=$id" --format '  {{.ID}} {{.Image}} {{.Status}} {{.Names}}'
			rc=1
		fi
	done < <(docker ps -aq --filter label=io.mcp-code-runner.managed=true |
		xargs -r docker inspect --format '{{.Id}} {{index .Config.Labels "io.mcp-code-runner.owner-host"}} {{index .Config.Labels "io.mcp-code-runner.owner-pid"}}' 2>/dev/null)
fi

if [[ $# -gt 0 ]]; then
	echo "checking that no sandbox pod was left behind"
	while read -r name owner_host owner_pid; do
		[[ -z $name ]] && continue
		if gone "$owner_host" "$owner_pid"; then
			echo "left-behind pod $name (owner pid $owner_pid has ended)"
			rc=1
		fi
	done < <("$@" get pods -A -l mcp-code-runner.io/sandbox=true \
		-o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name} {.metadata.annotations.mcp-code-runner\.io/owner-host} {.metadata.annotations.mcp-code-runner\.io/owner-pid}{"\n"}{end}')
fi
exit $rc

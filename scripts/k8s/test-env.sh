#!/usr/bin/env bash
# Prints the test cluster's settings for the tests that use it
# (MCR_KUBECONFIG=... MCR_K8S_AGENT_IMAGE=..., for env) when the cluster is
# up, and nothing when it is not (its tests then skip, and fail under
# CI=true).
#
# CI starts the cluster beside the first tests (.ci/run): with
# MCR_K8S_UP_STATUS set, this waits until that file says how the start
# ended ("ok" or "failed", written by CI's cluster job), at most
# MCR_K8S_UP_WAIT seconds (1800), and fails when it failed or never said.
#
#   env $(bash scripts/k8s/test-env.sh) go test ./internal/sandbox/kubernetes/
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=common.sh
. "$HERE/common.sh"

if [[ -n ${MCR_K8S_UP_STATUS:-} ]]; then
	wait_for=${MCR_K8S_UP_WAIT:-1800} start=$SECONDS
	if [[ ! -s $MCR_K8S_UP_STATUS ]]; then
		echo "test-env: waiting for the test cluster to start ($MCR_K8S_UP_STATUS)" >&2
	fi
	until [[ -s $MCR_K8S_UP_STATUS ]]; do
		if ((SECONDS - start >= wait_for)); then
			echo "test-env: the test cluster did not start within ${wait_for}s (nothing in $MCR_K8S_UP_STATUS)" >&2
			exit 1
		fi
		sleep 1
	done
	status=$(<"$MCR_K8S_UP_STATUS")
	if [[ $status != ok ]]; then
		echo "test-env: the test cluster failed to start ($MCR_K8S_UP_STATUS says \"$status\"; CI's cluster log says why)" >&2
		exit 1
	fi
	echo "test-env: the test cluster is up (waited $((SECONDS - start))s)" >&2
fi

if [[ -f $KUBECONFIG_ADMIN && -s $STATE/agent-image ]]; then
	echo "MCR_KUBECONFIG=$KUBECONFIG_ADMIN MCR_K8S_AGENT_IMAGE=$(<"$STATE/agent-image")"
fi

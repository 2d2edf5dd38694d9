#!/usr/bin/env bash
# Deploys the server from deploy/kubernetes onto the test cluster and runs
# code through it: the Deployment's pod reaches the API server with its
# ServiceAccount (the in-cluster configuration), the Role lets it make
# sandbox pods, its probes pass, and an MCP client reaches the Service
# (through kubectl port-forward) and gets a run_code result. Then it deletes
# everything it applied.
#
#   make k8s-up && make k8s-deploy-check
#
# With kube-controller-manager (WITH_KCM=1 make k8s-up) the Deployment makes
# the server's pod and everything applied is deleted afterwards. Without it
# (the default test cluster) nothing acts on a Deployment, so the check makes
# the pod from the Deployment's own pod template, and afterwards deletes the
# pods and the Deployment but leaves the two namespaces and their RBAC (a
# namespace cannot be deleted without the namespace controller).
#
# The server runs as two replicas sharing their state in etcd: the check
# starts an execution through one replica and reads it through the other,
# and a session made through one runs its cells through the other. Then
# the Deployment's controllers (kube-controller-manager, started here when
# the cluster runs none, and stopped afterwards) restart both replicas one
# at a time under a steady load of run_code calls, and no call may fail.
#
# The test cluster differs from a real one in three ways, which an overlay
# patches and nothing else: its pods have no network at all (no route, no
# kube-proxy), so the server's pods use the host's network, reach the API
# server on 127.0.0.1 (and their namespace allows that), and each replica
# listens on a port of its own; images come from the node's containerd, not
# a registry (imagePullPolicy Never), so the store is the test cluster's own
# etcd (under a prefix of the check's) instead of etcd.yaml's StatefulSet.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source=common.sh
. "$HERE/common.sh"
log() { echo "[k8s-deploy-check] $*"; }
die() {
	log "FAILED: $*"
	kubectl_admin -n mcp-code-runner get pods -o wide 2>/dev/null || true
	kubectl_admin -n mcp-code-runner logs -l app.kubernetes.io/name=mcp-code-runner --tail 40 2>/dev/null || true
	exit 1
}

need=()
for c in jq curl openssl; do command -v "$c" >/dev/null || need+=("$c"); done
if [ ${#need[@]} -gt 0 ]; then
	log "installing ${need[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null ||
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; }
fi
KUBECTL=("$BIN_DIR/kubectl" --kubeconfig "$KUBECONFIG_ADMIN")
KCM=
running kube-controller-manager && KCM=1
SERVER_IMAGE=${SERVER_IMAGE:-mcp-code-runner:latest}
PORT=${PORT:-18080}       # the first replica's port on the host network
PORT2=${PORT2:-18082}     # the second replica's
LOCAL_PORT=${LOCAL_PORT:-18081} # kubectl port-forward's end
AGENT_IMAGE=$(cat "$STATE/agent-image")
bash "$HERE/images.sh" import "$SERVER_IMAGE"

overlay=$(mktemp -d)
pf_pid=
STARTED_KCM=
cleanup() {
	[ -z "$pf_pid" ] || kill "$pf_pid" 2>/dev/null || true
	if [ -n "$KCM" ]; then
		log "deleting what was applied"
		"${KUBECTL[@]}" delete -k "$overlay" --ignore-not-found --wait=true --timeout 120s >/dev/null 2>&1 || log "delete did not finish (see kubectl get ns)"
	else
		log "deleting the server and its sandbox pods (the namespaces stay: no namespace controller)"
		"${KUBECTL[@]}" -n mcp-code-runner delete deployment/mcp-code-runner pod/mcp-code-runner-check pod/mcp-code-runner-check-2 --ignore-not-found --wait=true --timeout 60s >/dev/null 2>&1 || true
		"${KUBECTL[@]}" -n mcp-code-runner-sandboxes delete pods -l mcp-code-runner.io/sandbox=true --ignore-not-found --wait=true --timeout 60s >/dev/null 2>&1 || true
	fi
	rm -rf "$overlay"
	if [ -n "$STARTED_KCM" ]; then
		kill "$(cat "$PIDS/kube-controller-manager.pid")" 2>/dev/null || true
		rm -f "$PIDS/kube-controller-manager.pid"
	fi
}
trap cleanup EXIT

cat >"$overlay/kustomization.yaml" <<EOK
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $(realpath --relative-to="$overlay" "$REPO/deploy/kubernetes")
images:
  - name: mcp-code-runner
    newName: ${SERVER_IMAGE%:*}
    newTag: ${SERVER_IMAGE##*:}
patches:
  - target: {kind: StatefulSet, name: mcp-code-runner-etcd}
    patch: |-
      \$patch: delete
      apiVersion: apps/v1
      kind: StatefulSet
      metadata: {name: mcp-code-runner-etcd, namespace: mcp-code-runner}
  - target: {kind: Service, name: mcp-code-runner-etcd}
    patch: |-
      \$patch: delete
      apiVersion: v1
      kind: Service
      metadata: {name: mcp-code-runner-etcd, namespace: mcp-code-runner}
  - target: {kind: Namespace, name: mcp-code-runner}
    patch: |-
      - op: replace
        path: /metadata/labels/pod-security.kubernetes.io~1enforce
        value: privileged
  - target: {kind: Deployment, name: mcp-code-runner}
    patch: |-
      - op: replace
        path: /spec/replicas
        value: 1
      - op: add
        path: /spec/template/spec/hostNetwork
        value: true
      - op: add
        path: /spec/template/spec/containers/0/imagePullPolicy
        value: Never
      - op: replace
        path: /spec/template/spec/containers/0/ports/0/containerPort
        value: $PORT
      - op: replace
        path: /spec/template/spec/containers/0/resources/requests/cpu
        value: 250m
      - op: replace
        path: /spec/template/spec/containers/0/args
        value:
          - serve
          - --http=0.0.0.0:$PORT
          - --backend=kubernetes
          - --kubernetes-namespace=mcp-code-runner-sandboxes
          - --kubernetes-agent-image=$AGENT_IMAGE
          - --kubernetes-image-pull-policy=Never
          - --cpus=0.25
          - --pool-size=0
          - --pool-sizes=python=1
          - --store-backend=etcd
          - --store-etcd-endpoints=http://127.0.0.1:$ETCD_PORT
          - --store-etcd-prefix=/mcp-code-runner-deploy-check-$$/
      - op: add
        path: /spec/template/spec/containers/0/env/-
        value: {name: KUBERNETES_SERVICE_HOST, value: 127.0.0.1}
      - op: add
        path: /spec/template/spec/containers/0/env/-
        value: {name: KUBERNETES_SERVICE_PORT, value: "$API_PORT"}
EOK

log "applying deploy/kubernetes (with the test cluster's overlay)"
"${KUBECTL[@]}" apply -k "$overlay" >/dev/null
TOKEN=$(openssl rand -hex 32)
kubectl_admin -n mcp-code-runner create secret generic mcp-code-runner-auth --from-literal=token="$TOKEN" \
	--dry-run=client -o yaml | kubectl_admin apply -f - >/dev/null
if [ -n "$KCM" ]; then
	log "waiting for the Deployment's pod to be ready (its readiness probe is /readyz)"
	"${KUBECTL[@]}" -n mcp-code-runner rollout status deploy/mcp-code-runner --timeout 180s || die "the Deployment did not become ready"
else
	# What the controllers would do: a default ServiceAccount for the
	# sandbox pods, and the cluster's CA in each namespace for the server's
	# projected token volume.
	"${KUBECTL[@]}" -n mcp-code-runner-sandboxes get serviceaccount default >/dev/null 2>&1 ||
		"${KUBECTL[@]}" -n mcp-code-runner-sandboxes create serviceaccount default >/dev/null
	"${KUBECTL[@]}" -n mcp-code-runner get configmap kube-root-ca.crt >/dev/null 2>&1 ||
		"${KUBECTL[@]}" -n mcp-code-runner create configmap kube-root-ca.crt --from-file=ca.crt="$PKI/ca.crt" >/dev/null
	log "no kube-controller-manager: making the two replicas' pods from the Deployment's pod template"
	for replica in "mcp-code-runner-check $PORT" "mcp-code-runner-check-2 $PORT2"; do
		read -r name port <<<"$replica"
		"${KUBECTL[@]}" -n mcp-code-runner get deployment mcp-code-runner -o json |
			jq --arg name "$name" --argjson port "$port" '{apiVersion: "v1", kind: "Pod",
				metadata: {name: $name, namespace: "mcp-code-runner", labels: .spec.template.metadata.labels},
				spec: (.spec.template.spec | .containers[0].ports[0].containerPort = $port
					| .containers[0].args |= map(if startswith("--http=") then "--http=0.0.0.0:\($port)" else . end)
					| .containers[0].args += ["--store-advertise-url=http://127.0.0.1:\($port)"])}' |
			"${KUBECTL[@]}" apply -f - >/dev/null
	done
	log "waiting for the servers' pods to be ready (their readiness probe is /readyz: the backend and the state store answer)"
	for name in mcp-code-runner-check mcp-code-runner-check-2; do
		"${KUBECTL[@]}" -n mcp-code-runner wait --for=condition=Ready "pod/$name" --timeout 180s >/dev/null || die "the server's pod $name did not become ready"
	done
fi

log "kubectl port-forward svc/mcp-code-runner $LOCAL_PORT:8080"
"${KUBECTL[@]}" -n mcp-code-runner port-forward svc/mcp-code-runner "$LOCAL_PORT:8080" >/dev/null 2>&1 &
pf_pid=$!
for _ in $(seq 1 100); do
	curl -s -o /dev/null "http://127.0.0.1:$LOCAL_PORT/healthz" && break
	sleep 0.2
done

# mcp POST BODY: one JSON-RPC request through the Service, as a client with
# the bearer token and the Service's name as Host; prints the JSON answer.
session=
URL="http://127.0.0.1:$LOCAL_PORT/mcp"
mcp() {
	local hdr body
	hdr=$(mktemp)
	body=$(curl -sS -D "$hdr" "$URL" \
		-H "Host: mcp-code-runner.mcp-code-runner.svc" -H "Authorization: Bearer $TOKEN" \
		-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
		-H 'MCP-Protocol-Version: 2025-11-25' ${session:+-H "Mcp-Session-Id: $session"} --data "$1")
	[ -n "$session" ] || session=$(sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: *\([^\r]*\).*/\1/p' "$hdr")
	rm -f "$hdr"
	# Streamable HTTP answers as JSON or as one SSE event.
	sed -n 's/^data: //p' <<<"$body" | grep . || echo "$body"
}
init=$(mcp '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"deploy-check","version":"1"}}}')
grep -q '"serverInfo"' <<<"$init" || die "initialize through the Service: $init"
mcp '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null
t0=$(date +%s%N)
result=$(mcp '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_code","arguments":{"language":"python","code":"import socket; print(6*7, socket.gethostname().startswith(\"mcr-python-\"))"}}}')
ms=$((($(date +%s%N) - t0) / 1000000))
grep -q '42 True' <<<"$result" || die "run_code through the Service: $result"
log "run_code through the Service answered in ${ms} ms from a sandbox pod: $(grep -o '"stdout":"[^"]*"' <<<"$result" | head -1)"
if [ -z "$KCM" ]; then
	# One replica starts an execution, the other answers for it: the state
	# is in the store they share. (Each replica is reached on its own port
	# of the host network.)
	URL="http://127.0.0.1:$PORT/mcp" session=
	started=$(mcp '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"start_execution","arguments":{"language":"python","code":"print(\"from-one-replica\")"}}}')
	exec_id=$(grep -o '"execution_id":"[^"]*"' <<<"$started" | head -1 | cut -d'"' -f4)
	[ -n "$exec_id" ] || die "start_execution through the first replica: $started"
	URL="http://127.0.0.1:$PORT2/mcp" session=
	got=$(mcp '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_execution","arguments":{"execution_id":"'"$exec_id"'","wait_seconds":60}}}')
	grep -q 'from-one-replica' <<<"$got" || die "get_execution through the second replica: $got"
	log "an execution started through one replica was read, finished, through the other"
	# A session made through one replica runs its cells through the other,
	# which forwards them to the replica holding its sandbox pod.
	URL="http://127.0.0.1:$PORT/mcp" session=
	created=$(mcp '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"create_session","arguments":{"language":"python"}}}')
	sess_id=$(grep -o '"session_id":"[^"]*"' <<<"$created" | head -1 | cut -d'"' -f4)
	[ -n "$sess_id" ] || die "create_session through the first replica: $created"
	URL="http://127.0.0.1:$PORT2/mcp" session=
	cell=$(mcp '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"run_code","arguments":{"language":"python","session_id":"'"$sess_id"'","code":"x = 20"}}}')
	grep -q '"status":"ok"' <<<"$cell" || die "a session's cell through the second replica: $cell"
	URL="http://127.0.0.1:$PORT/mcp" session=
	cell=$(mcp '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_code","arguments":{"language":"python","session_id":"'"$sess_id"'","code":"print(x + 22)"}}}')
	grep -q '"stdout":"42' <<<"$cell" || die "the session's next cell through the first replica: $cell"
	URL="http://127.0.0.1:$PORT2/mcp" session=
	mcp '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"close_session","arguments":{"session_id":"'"$sess_id"'"}}}' | grep -q "$sess_id" ||
		die "close_session through the second replica"
	log "a session made through one replica ran a cell and closed through the other (forwarded to its holder)"
fi

# A rolling restart under a steady load of run_code calls completes with no
# failed call. The Deployment and ReplicaSet controllers replace the pods
# one at a time (maxSurge 1, maxUnavailable 0), each after the new one is
# ready; a replaced server stops taking connections as SIGTERM comes and
# finishes the calls it has. The test cluster's pods share the host's
# network, so the replicas share one port (http.reuse_port: the kernel
# spreads connections, as kube-proxy would a Service's) and each is probed
# on its own Unix socket (mcp-code-runner healthcheck). A call whose
# connection was refused (no listener took it, so no server saw the call)
# is sent again; any other error (a reset, a transfer cut off, a timeout),
# a wrong answer, an error result or an HTTP error fails the check. Each
# replica writes its audit log to its standard output: both replicas
# before the restart, and both after it, must have answered calls.
rolling_restart() {
	if [ -z "$KCM" ]; then
		if [ ! -x "$BIN_DIR/kube-controller-manager" ]; then
			log "building kube-controller-manager for the rolling restart (minutes, once)"
			bash "$HERE/build.sh" kube-controller-manager || die "building kube-controller-manager"
		fi
		# What runs is scaled to nothing before the controllers start, so
		# that they make only the pods of the template below.
		"${KUBECTL[@]}" -n mcp-code-runner delete pod/mcp-code-runner-check pod/mcp-code-runner-check-2 --ignore-not-found --wait=true --timeout 60s >/dev/null
	fi
	"${KUBECTL[@]}" -n mcp-code-runner scale deploy/mcp-code-runner --replicas 0 >/dev/null
	if [ -n "$KCM" ]; then
		"${KUBECTL[@]}" -n mcp-code-runner wait --for=delete pod -l app.kubernetes.io/name=mcp-code-runner --timeout 90s >/dev/null ||
			die "the Deployment's pods were not deleted when it was scaled to 0"
	fi
	local probe='["/usr/local/bin/mcp-code-runner","healthcheck","--socket","/tmp/mcr-health.sock"]'
	"${KUBECTL[@]}" -n mcp-code-runner patch deploy/mcp-code-runner --type json -p '[
		{"op": "remove", "path": "/spec/template/spec/containers/0/ports"},
		{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "--http-reuse-port=true"},
		{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "--http-health-socket=/tmp/mcr-health.sock"},
		{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "--audit-log=-"},
		{"op": "replace", "path": "/spec/template/spec/containers/0/readinessProbe", "value": {"exec": {"command": '"$probe"'}, "periodSeconds": 1, "timeoutSeconds": 5}},
		{"op": "replace", "path": "/spec/template/spec/containers/0/livenessProbe", "value": {"exec": {"command": '"${probe%]},\"--live\"]"'}, "periodSeconds": 10, "timeoutSeconds": 5}}
	]' >/dev/null || die "patching the Deployment for the rolling restart"
	if [ -z "$KCM" ]; then
		log "starting kube-controller-manager (the Deployment and ReplicaSet controllers)"
		start_kcm || die "kube-controller-manager did not start"
		KCM=1 STARTED_KCM=1
	fi
	"${KUBECTL[@]}" -n mcp-code-runner scale deploy/mcp-code-runner --replicas 2 >/dev/null
	"${KUBECTL[@]}" -n mcp-code-runner rollout status deploy/mcp-code-runner --timeout 180s >/dev/null ||
		die "the Deployment's two replicas did not become ready"
	log "two replicas ready on one port; a steady load of run_code calls, then kubectl rollout restart"

	local load stop workers=()
	load=$(mktemp -d)
	stop="$load/stop"
	URL="http://127.0.0.1:$PORT/mcp"
	for w in 1 2; do
		(
			n=0 ok=0 refused=0
			while [ ! -f "$stop" ]; do
				n=$((n + 1))
				want=$((w * 100000 + n))
				body='{"jsonrpc":"2.0","id":'$n',"method":"tools/call","params":{"name":"run_code","arguments":{"language":"python","code":"print('$want')"}}}'
				for _ in $(seq 1 60); do
					rc=0
					code=$(curl -sS --max-time 120 -o "$load/out.$w" -w '%{http_code}' "$URL" \
						-H "Host: mcp-code-runner.mcp-code-runner.svc" -H "Authorization: Bearer $TOKEN" \
						-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
						-H 'MCP-Protocol-Version: 2025-11-25' --data "$body" 2>"$load/err.$w") || rc=$?
					# curl's 7: the connection was refused, so no server saw
					# the call. Every other error may come after a server
					# took it, and is a failure.
					[ "$rc" = 7 ] || break
					refused=$((refused + 1))
					sleep 0.2
				done
				if [ "$rc" = 0 ] && [ "$code" = 200 ] && grep -qF "\"stdout\":\"$want\\n\"" "$load/out.$w"; then
					ok=$((ok + 1))
				else
					{ echo "worker $w call $n: curl exit $rc, HTTP $code"; cat "$load/err.$w" "$load/out.$w"; echo; } >>"$load/failures"
				fi
				echo "$ok $refused" >"$load/count.$w"
			done
		) &
		workers+=($!)
	done
	# stop_load: ends the load and waits for its workers (a bare wait would
	# wait for kube-controller-manager and the port-forward too).
	stop_load() {
		touch "$stop"
		wait "${workers[@]}"
	}
	# every_pod_answers PODS: waits (2 min at most) until each pod's audit
	# log, on its standard output, has a run_code line: the pod answered
	# calls of the load.
	every_pod_answers() {
		local p t0=$SECONDS
		for p in "$@"; do
			until "${KUBECTL[@]}" -n mcp-code-runner logs "pod/$p" 2>/dev/null | grep -qF '"tool":"run_code"'; do
				[ ! -s "$load/failures" ] || return 0
				[ $((SECONDS - t0)) -lt 120 ] || { stop_load; die "pod $p answered no call of the load in 2 minutes"; }
				sleep 0.5
			done
		done
	}
	local t0 before after
	t0=$(date +%s)
	# The load is steady before the restart begins.
	until [ "$(cut -d' ' -f1 "$load/count.1" 2>/dev/null || echo 0)" -ge 3 ] && [ "$(cut -d' ' -f1 "$load/count.2" 2>/dev/null || echo 0)" -ge 3 ]; do
		[ ! -s "$load/failures" ] || break
		[ $(($(date +%s) - t0)) -lt 120 ] || { stop_load; die "the load did not start: $(cat "$load"/err.* 2>/dev/null)"; }
		sleep 0.5
	done
	before=$("${KUBECTL[@]}" -n mcp-code-runner get pods -l app.kubernetes.io/name=mcp-code-runner -o jsonpath='{.items[*].metadata.name}')
	# The replaced pods' logs are gone with them: kept here, for a failure.
	local p followers=()
	for p in $before; do
		"${KUBECTL[@]}" -n mcp-code-runner logs -f "pod/$p" >"$load/log.$p" 2>&1 &
		followers+=($!)
	done
	# shellcheck disable=SC2086 # one pod name a word
	every_pod_answers $before
	t0=$(date +%s)
	"${KUBECTL[@]}" -n mcp-code-runner rollout restart deploy/mcp-code-runner >/dev/null
	"${KUBECTL[@]}" -n mcp-code-runner rollout status deploy/mcp-code-runner --timeout 300s >/dev/null ||
		{ stop_load; die "the rolling restart did not complete"; }
	# The replaced pods are gone (their calls finished) before the load ends.
	for p in $before; do
		"${KUBECTL[@]}" -n mcp-code-runner wait --for=delete "pod/$p" --timeout 120s >/dev/null ||
			{ stop_load; die "the replaced pod $p was not gone 2 minutes after the rollout"; }
	done
	local took=$(($(date +%s) - t0))
	after=$("${KUBECTL[@]}" -n mcp-code-runner get pods -l app.kubernetes.io/name=mcp-code-runner -o jsonpath='{.items[*].metadata.name}')
	[ "$(wc -w <<<"$after")" = 2 ] || { stop_load; die "after the rollout the Deployment has pods $after, want two"; }
	# Both new replicas answer calls of the load, on their own.
	# shellcheck disable=SC2086 # one pod name a word
	every_pod_answers $after
	stop_load
	kill "${followers[@]}" 2>/dev/null || true
	if [ -s "$load/failures" ]; then
		for p in $before; do
			log "the replaced pod $p's log:"
			tail -n 60 "$load/log.$p"
		done
		cat "$load/failures"
		die "calls failed during the rolling restart (above)"
	fi
	read -r ok1 refused1 <"$load/count.1"
	read -r ok2 refused2 <"$load/count.2"
	log "rolling restart of 2 replicas in ${took} s under load: $((ok1 + ok2)) run_code calls answered right, none failed, $((refused1 + refused2)) sent again after a refused connection (pods replaced: $before; by $after, each answering)"
	rm -rf "$load"
}
rolling_restart

log "OK: the server deployed from deploy/kubernetes runs code in sandbox pods"

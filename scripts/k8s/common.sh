# Shared settings of the test cluster scripts (sourced, not run).
#
# The cluster lives apart from the Docker daemon and anything else on the
# machine: its own containerd (socket, root, state, runc root), its own
# loopback ports, a port-less bridge for the node IP, and the kubelet's own
# kubepods cgroups. Binaries and Go caches survive k8s-down; state does not.

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
MCR_K8S_CACHE="${MCR_K8S_CACHE:-/var/cache/mcp-code-runner/k8s}"
BIN_DIR="$MCR_K8S_CACHE/bin"
STATE="${MCR_K8S_STATE:-/var/lib/mcp-code-runner/k8s}"
RUN_DIR="${MCR_K8S_RUN:-/run/mcp-code-runner-k8s}"
NODE_NAME="${MCR_K8S_NODE:-mcr-node}"
PKI="$STATE/pki" LOGS="$STATE/logs" PIDS="$STATE/pids"
SOCK="$RUN_DIR/containerd/containerd.sock"
KUBECONFIG_ADMIN="$STATE/admin.kubeconfig"
# The node IP sits on a bridge without ports, in the RFC 2544 benchmarking
# range that nothing routes: the kubelet refuses a loopback node IP, and
# pods given addresses next to it reach nothing.
BRIDGE=mcrk8s0
NODE_IP=198.18.254.1
POD_SUBNET=198.18.240.0/21
SVC_CIDR=198.19.254.0/24
# Loopback ports, away from the defaults so that another cluster on the
# machine does not collide.
API_PORT=16443 ETCD_PORT=23791 ETCD_PEER_PORT=23801 SCHED_PORT=10359 KCM_PORT=10358
KUBELET_PORT=10350 KUBELET_HEALTHZ_PORT=10348
PAUSE_IMAGE=localhost/mcp-code-runner/pause:1
# gVisor's runsc and its containerd shim (scripts/ensure-gvisor.sh): with
# both there, containerd gets the runtime handler runsc and the cluster the
# RuntimeClass gvisor (the kubernetes backend's isolation gvisor).
GVISOR_DIR="${MCR_GVISOR_DIR:-/var/lib/mcp-code-runner/gvisor}"
RUNSC_HANDLER=runsc
GVISOR_RUNTIME_CLASS=gvisor

# running NAME: whether the process up.sh recorded for the component NAME
# still runs as it: its PID names a process whose command is NAME (the
# kernel keeps the first 15 characters). A PID file outlives its process
# when the machine stops with the cluster up, and PIDs wrap (pid_max is
# 32768 on small machines): the same number may belong to another process
# since, which must be neither taken for the cluster nor signalled.
running() {
	local pid
	pid=$(cat "$PIDS/$1.pid" 2>/dev/null) || return 1
	[[ $pid =~ ^[0-9]+$ ]] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "${1:0:15}" ]
}

kubectl_admin() { "$BIN_DIR/kubectl" --kubeconfig "$KUBECONFIG_ADMIN" --request-timeout 20s "$@"; }
ctr_k8s() { ctr --address "$SOCK" -n k8s.io "$@"; }

# start_kcm: starts kube-controller-manager (built by build.sh
# kube-controller-manager) with the controllers a Deployment relies on, in
# its own session, its PID recorded for down.sh.
start_kcm() {
	[ -f "$PKI/controller-manager.crt" ] || { echo "the PKI in $PKI has no controller-manager certificate: make k8s-down, then make k8s-up" >&2; return 1; }
	setsid "$BIN_DIR/kube-controller-manager" \
		--kubeconfig "$STATE/controller-manager.kubeconfig" --bind-address 127.0.0.1 --secure-port "$KCM_PORT" \
		--use-service-account-credentials=true --service-account-private-key-file "$PKI/sa.key" \
		--root-ca-file "$PKI/ca.crt" --leader-elect=false --profiling=false \
		--controllers 'serviceaccount-controller,serviceaccount-token-controller,namespace-controller,garbage-collector-controller,pod-garbage-collector-controller,deployment-controller,replicaset-controller,endpoints-controller,endpointslice-controller,root-ca-certificate-publisher-controller' \
		>>"$LOGS/kube-controller-manager.log" 2>&1 </dev/null &
	echo $! >"$PIDS/kube-controller-manager.pid"
}

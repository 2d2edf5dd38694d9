#!/usr/bin/env bash
# Starts a real single-node Kubernetes on this machine for the backend's
# tests: containerd and runc from Debian, etcd, kube-apiserver,
# kube-scheduler and kubelet built from the Go module proxy
# (scripts/k8s/build.sh). It waits until the node is Ready, then writes
# $STATE/env (KUBECONFIG, PATH with kubectl, CONTAINERD_ADDRESS for ctr).
# With gVisor installed (make gvisor: runsc and containerd-shim-runsc-v1),
# containerd gets the runtime handler runsc and the cluster the RuntimeClass
# gvisor, under which the backend runs sandboxes of isolation gvisor.
#
#   make k8s-up            # or: sudo bash scripts/k8s/up.sh
#   make k8s-down          # stops exactly what this started
#
# It coexists with a running Docker daemon: its own containerd socket, root,
# state and runc root; loopback ports only; the kubelet leaves the host
# firewall alone; the kernel settings the kubelet changes are recorded and
# restored by down.sh.
#
# By default the cluster runs no kube-controller-manager (it would double the
# build and the memory, and the backend's tests need none): a namespace gets
# its default ServiceAccount from whoever makes it (kubectl create sa
# default), namespaces are not deleted, Deployments make no pods, and
# ownerReferences are not garbage-collected. WITH_KCM=1 adds it with the
# controllers a server deployed from deploy/kubernetes relies on
# (Deployments, ServiceAccounts, namespaces, garbage collection):
#   WITH_KCM=1 make k8s-up
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=common.sh
. "$HERE/common.sh"
T0=$(date +%s%N)
log() { printf '[k8s-up %5ds] %s\n' $((($(date +%s%N) - T0) / 1000000000)) "$*"; }
die() {
	log "FAILED: $*"
	log "logs: $LOGS (stop what started with: make k8s-down)"
	exit 1
}

[ "$(id -u)" = 0 ] || die "must run as root (containerd and the kubelet manage mounts, cgroups and network namespaces)"
if running kubelet; then
	log "already up; source $STATE/env (make k8s-down stops it)"
	exit 0
fi
# A cluster whose kubelet is gone (a run that was killed, a machine that was
# restored from a snapshot) leaves its state, mounts, bridge and perhaps some
# of its processes behind. One cluster lives on a machine, so that state is
# this cluster's own: down.sh clears it, then this starts afresh.
if [ -d "$STATE" ] || [ -d "$RUN_DIR" ]; then
	log "state of an earlier cluster is left in $STATE or $RUN_DIR (its kubelet is not running): clearing it with down.sh"
	bash "$HERE/down.sh" || die "could not clear the earlier cluster's state; see the lines above, then run make k8s-down"
	if [ -d "$STATE" ] || [ -d "$RUN_DIR" ]; then
		die "the earlier cluster's state is still in $STATE or $RUN_DIR after down.sh; see the lines above"
	fi
fi

# 1. Host packages from Debian.
need=()
command -v containerd >/dev/null || need+=(containerd)
command -v runc >/dev/null || need+=(runc)
[ -x /usr/lib/cni/macvlan ] || need+=(containernetworking-plugins)
command -v openssl >/dev/null || need+=(openssl)
command -v gcc >/dev/null || need+=(gcc libc6-dev)
if [ ${#need[@]} -gt 0 ]; then
	log "apt-get install ${need[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# 2. Binaries (seconds when cached).
log "building (cached by version in $MCR_K8S_CACHE)"
BINS=(etcd kube-apiserver kube-scheduler kubelet kubectl)
[ -z "${WITH_KCM:-}" ] || BINS+=(kube-controller-manager)
if ! bash "$HERE/build.sh" "${BINS[@]}" 2>&1 | sed 's/^/    /'; then
	die "building the binaries failed (see above)"
fi

mkdir -p "$STATE" "$RUN_DIR" "$PKI" "$LOGS" "$PIDS" "$STATE/images"

# 3. The pod sandbox (pause) image, made here: no registry is reachable.
mkdir -p "$STATE/images/pause-rootfs"
gcc -Os -static -o "$STATE/images/pause-rootfs/pause" "$HERE/pause/pause.c"
strip "$STATE/images/pause-rootfs/pause"
bash "$HERE/mk-oci-image.sh" "$STATE/images/pause.tar" "$PAUSE_IMAGE" "$STATE/images/pause-rootfs" '["/pause"]' 65535:65535

# 4. PKI: a CA and one certificate per component (openssl).
log "making certificates"
(
	cd "$PKI"
	umask 077
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ca.key 2>/dev/null
	openssl req -x509 -new -key ca.key -subj "/CN=mcp-code-runner-test-ca" -days 3650 -out ca.crt \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"
	cert() { # name subject extendedKeyUsage [subjectAltName]
		openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null
		openssl req -new -key "$1.key" -subj "$2" -out "$1.csr"
		printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=%s\n%s' \
			"$3" "${4:+subjectAltName=$4}" >"$1.ext"
		openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
		rm -f "$1.csr" "$1.ext"
	}
	cert apiserver "/CN=kube-apiserver" serverAuth \
		"DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:$NODE_IP,IP:${SVC_CIDR%.0/*}.1"
	cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
	cert admin "/O=system:masters/CN=kubernetes-admin" clientAuth
	cert kubelet-client "/O=system:nodes/CN=system:node:$NODE_NAME" clientAuth
	cert kubelet-server "/CN=system:node:$NODE_NAME" serverAuth "DNS:$NODE_NAME,IP:$NODE_IP,IP:127.0.0.1"
	cert scheduler "/CN=system:kube-scheduler" clientAuth
	cert controller-manager "/CN=system:kube-controller-manager" clientAuth
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.key 2>/dev/null
	openssl pkey -in sa.key -pubout -out sa.pub
)
for u in admin kubelet-client scheduler controller-manager; do
	cat >"$STATE/$u.kubeconfig" <<EOK
apiVersion: v1
kind: Config
clusters:
- name: mcr-test
  cluster: {server: "https://127.0.0.1:$API_PORT", certificate-authority: "$PKI/ca.crt"}
users:
- name: $u
  user: {client-certificate: "$PKI/$u.crt", client-key: "$PKI/$u.key"}
contexts:
- name: mcr-test
  context: {cluster: mcr-test, user: $u, namespace: default}
current-context: mcr-test
EOK
done

start() { # name cmd...: runs in its own session; its PID is recorded for down.sh
	local name=$1
	shift
	setsid "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
	echo $! >"$PIDS/$name.pid"
	log "started $name (pid $!)"
}
wait_for() { # what seconds cmd...
	local what=$1 end=$(($(date +%s) + $2))
	shift 2
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$end" ] || die "$what not ready after $2 s (see $LOGS)"
		sleep 0.2
	done
	log "$what ready"
}

# 5. Network: the node IP on a port-less bridge; each pod gets a private
# macvlan on it with an address and no route: sandboxes reach nothing.
if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
	ip link add "$BRIDGE" type bridge
	ip addr add "$NODE_IP/32" dev "$BRIDGE"
	ip link set "$BRIDGE" up
fi
mkdir -p "$STATE/cni/net.d"
cat >"$STATE/cni/net.d/10-isolated.conflist" <<EOC
{
  "cniVersion": "1.0.0",
  "name": "mcr-isolated",
  "plugins": [
    {"type": "macvlan", "master": "$BRIDGE", "mode": "private",
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_SUBNET"}]], "dataDir": "$STATE/cni/networks"}}
  ]
}
EOC

# 6. containerd: Debian's binary, this cluster's own instance.
mkdir -p "$STATE/containerd" "$RUN_DIR/containerd"
# gVisor, when scripts/ensure-gvisor.sh installed it: the runtime handler
# runsc runs a pod's containers under runsc through gVisor's shim, on the
# systrap platform (no KVM) and without gVisor's network stack (the pods'
# sandboxes talk to the server through the API server's attach,
# never through the network), runsc's state in this cluster's run directory.
runsc_runtime=""
if [ -x "$GVISOR_DIR/runsc" ] && [ -x "$GVISOR_DIR/containerd-shim-runsc-v1" ]; then
	# containerd 1.6 reads what a shim's start prints as its socket address;
	# gVisor's shim, built on containerd 2's shim library, prints a JSON
	# bootstrap record ({"version":2,"address":...,"protocol":"ttrpc"}).
	# This front gives containerd the address alone and leaves every other
	# action to the shim itself.
	mkdir -p "$STATE/shim-bin"
	cat >"$STATE/shim-bin/containerd-shim-runsc-v1" <<EOS
#!/bin/sh
case " \$* " in
*" start ") ;;
*) exec "$GVISOR_DIR/containerd-shim-runsc-v1" "\$@" ;;
esac
out=\$("$GVISOR_DIR/containerd-shim-runsc-v1" "\$@") || exit \$?
addr=\$(printf '%s' "\$out" | sed -n 's/.*"address":"\([^"]*\)".*/\1/p')
printf '%s' "\${addr:-\$out}"
EOS
	chmod 0755 "$STATE/shim-bin/containerd-shim-runsc-v1"
	cat >"$STATE/runsc.toml" <<EOC
binary_name = "$GVISOR_DIR/runsc"
root = "$RUN_DIR/runsc"
[runsc_config]
  platform = "systrap"
  network = "none"
EOC
	runsc_runtime="    [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.$RUNSC_HANDLER]
      runtime_type = \"io.containerd.runsc.v1\"
      [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.$RUNSC_HANDLER.options]
        TypeUrl = \"io.containerd.runsc.v1.options\"
        ConfigPath = \"$STATE/runsc.toml\""
	log "gVisor: runtime handler $RUNSC_HANDLER ($("$GVISOR_DIR/runsc" --version 2>/dev/null | head -1))"
else
	log "gVisor is not installed in $GVISOR_DIR (make gvisor): no runtime handler $RUNSC_HANDLER, no RuntimeClass $GVISOR_RUNTIME_CLASS"
fi
cat >"$STATE/containerd.toml" <<EOC
version = 2
root = "$STATE/containerd"
state = "$RUN_DIR/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$RUN_DIR/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  netns_mounts_under_state_dir = true
  # The VM withholds CAP_SYS_RESOURCE: without this, lowering a sandbox's
  # oom_score_adj below containerd's own fails every pod start.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$RUN_DIR/runc"
$runsc_runtime
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni/net.d"
EOC
# containerd finds a runtime's shim on its PATH (containerd 1.6 ignores a
# runtime_path when it starts a pod's sandbox): the front of gVisor's shim
# is put there.
if [ -n "$runsc_runtime" ]; then
	start containerd env PATH="$STATE/shim-bin:$PATH" containerd --config "$STATE/containerd.toml"
else
	start containerd containerd --config "$STATE/containerd.toml"
fi
wait_for containerd 30 ctr_k8s version
ctr_k8s images import "$STATE/images/pause.tar" >/dev/null
log "pause image imported"

# 7. etcd, on loopback.
start etcd "$BIN_DIR/etcd" --name "$NODE_NAME" --data-dir "$STATE/etcd" \
	--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
	--listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
	--initial-cluster "$NODE_NAME=http://127.0.0.1:$ETCD_PEER_PORT" \
	--quota-backend-bytes 2147483648 --log-level warn
wait_for etcd 30 curl -fsS "http://127.0.0.1:$ETCD_PORT/health"

# 8. kube-apiserver, on loopback.
start kube-apiserver "$BIN_DIR/kube-apiserver" \
	--bind-address 127.0.0.1 --secure-port "$API_PORT" --advertise-address "$NODE_IP" \
	--etcd-servers "http://127.0.0.1:$ETCD_PORT" \
	--client-ca-file "$PKI/ca.crt" --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
	--kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
	--kubelet-certificate-authority "$PKI/ca.crt" --kubelet-preferred-address-types InternalIP \
	--service-account-issuer https://kubernetes.default.svc.cluster.local \
	--service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
	--service-cluster-ip-range "$SVC_CIDR" \
	--authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
	--allow-privileged=false --profiling=false --v 1
wait_for kube-apiserver 120 kubectl_admin get --raw /readyz

# 9. kube-scheduler: pods name no node; the scheduler places them (and
# reports Unschedulable when it cannot).
start kube-scheduler "$BIN_DIR/kube-scheduler" --kubeconfig "$STATE/scheduler.kubeconfig" \
	--bind-address 127.0.0.1 --secure-port "$SCHED_PORT" --leader-elect=false --profiling=false

if [ -n "${WITH_KCM:-}" ]; then
	start_kcm || die "kube-controller-manager did not start"
	log "started kube-controller-manager (pid $(cat "$PIDS/kube-controller-manager.pid"))"
fi

# 10. kubelet. It changes these kernel settings: remember them for down.sh.
mkdir -p "$STATE/kubelet" "$STATE/pod-logs"
for k in vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes; do
	echo "$k=$(sysctl -n "$k")"
done >"$STATE/sysctl.orig"
cat >"$STATE/kubelet-config.yaml" <<EOC
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$PKI/ca.crt"}
authorization: {mode: Webhook}
tlsCertFile: "$PKI/kubelet-server.crt"
tlsPrivateKeyFile: "$PKI/kubelet-server.key"
containerRuntimeEndpoint: "unix://$SOCK"
# The host has cgroup v1 (hybrid); Kubernetes 1.37 refuses it unless told.
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
# Else the kubelet adds its chains to the host firewall.
makeIPTablesUtilChains: false
podLogsDir: "$STATE/pod-logs"
volumePluginDir: "$STATE/kubelet/volume-plugins"
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
serializeImagePulls: false
nodeStatusReportFrequency: 10s
syncFrequency: 10s
fileCheckFrequency: 20s
evictionHard: {memory.available: "200Mi", nodefs.available: "5%", imagefs.available: "5%", nodefs.inodesFree: "3%"}
# containerd 1.6 does not pin the pause image: keep image GC away from it.
imageGCHighThresholdPercent: 95
imageGCLowThresholdPercent: 90
maxPods: 60
# The pod-level process limit (a Pod cannot set its own).
podPidsLimit: 1024
EOC
start kubelet "$BIN_DIR/kubelet" --config "$STATE/kubelet-config.yaml" \
	--kubeconfig "$STATE/kubelet-client.kubeconfig" --root-dir "$STATE/kubelet" \
	--cert-dir "$STATE/kubelet/pki" --hostname-override "$NODE_NAME" --node-ip "$NODE_IP" --v 1
node_ready() { [ "$(kubectl_admin get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
wait_for "node $NODE_NAME" 180 node_ready
# Without the node-lifecycle controller nothing removes this taint.
kubectl_admin taint node "$NODE_NAME" node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
kubectl_admin -n default get sa default >/dev/null 2>&1 || kubectl_admin -n default create sa default >/dev/null
if [ -n "$runsc_runtime" ]; then
	kubectl_admin apply -f - >/dev/null <<EOR || die "could not create the RuntimeClass $GVISOR_RUNTIME_CLASS"
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: $GVISOR_RUNTIME_CLASS
handler: $RUNSC_HANDLER
EOR
	log "RuntimeClass $GVISOR_RUNTIME_CLASS (handler $RUNSC_HANDLER)"
fi

cat >"$STATE/env" <<EOE
export KUBECONFIG=$KUBECONFIG_ADMIN
export PATH=$BIN_DIR:\$PATH
export CONTAINERD_ADDRESS=$SOCK CONTAINERD_NAMESPACE=k8s.io
EOE
log "UP: source $STATE/env; kubectl get nodes"

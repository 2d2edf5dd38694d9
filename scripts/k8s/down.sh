#!/usr/bin/env bash
# Stops exactly what up.sh started and leaves the machine as it was: the
# processes whose PIDs it recorded, the container shims of this cluster's
# own containerd socket, its mounts, the kubepods cgroups, the bridge, the
# kernel settings the kubelet changed, and its state. Binaries and Go
# caches stay (the next k8s-up starts in seconds). Safe to run when nothing
# is up. It never touches the Docker daemon or its containers.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=common.sh
. "$HERE/common.sh"
log() { echo "[k8s-down] $*"; }
stop() { # name seconds
	if ! running "$1"; then
		rm -f "$PIDS/$1.pid"
		return 0
	fi
	local pid i
	pid=$(cat "$PIDS/$1.pid")
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < $2 * 5; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "$1 did not exit; SIGKILL $pid"
		kill -KILL "$pid" 2>/dev/null
		sleep 0.5
	fi
	rm -f "$PIDS/$1.pid"
	log "stopped $1 (pid $pid)"
}

[ "$(id -u)" = 0 ] || { log "must run as root"; exit 1; }
if [ ! -d "$STATE" ] && [ ! -d "$RUN_DIR" ] && ! ip link show "$BRIDGE" >/dev/null 2>&1; then
	log "nothing to stop"
	exit 0
fi

# 1. Pods first, while the kubelet can still tear them down through CRI and CNI.
if running kube-apiserver && running kubelet; then
	kubectl_admin delete pods --all --all-namespaces --grace-period 0 --force --wait=true --timeout 60s >/dev/null 2>&1 ||
		log "some pods were not deleted in time; their containers are removed below"
fi
# 2. The kubelet and the control plane.
for c in kubelet kube-scheduler kube-controller-manager kube-apiserver etcd; do stop "$c" 20; done
# 3. What the kubelet left in this cluster's containerd (killing the tasks
# makes their shims exit).
if running containerd; then
	for t in $(ctr_k8s tasks ls -q 2>/dev/null); do ctr_k8s tasks kill -s SIGKILL "$t" >/dev/null 2>&1; done
	for t in $(ctr_k8s tasks ls -q 2>/dev/null); do ctr_k8s tasks delete -f "$t" >/dev/null 2>&1; done
	for c in $(ctr_k8s containers ls -q 2>/dev/null); do ctr_k8s containers delete "$c" >/dev/null 2>&1; done
fi
stop containerd 20
# 4. Shims of this cluster's socket only, matched on their exact -address
# argument and killed by PID (Docker's shims name another socket).
for p in /proc/[0-9]*; do
	cmd=$({ tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null) || continue
	case "$cmd" in
	*containerd-shim*"-address $SOCK "*)
		log "killing leftover shim ${p#/proc/}"
		kill -KILL "${p#/proc/}" 2>/dev/null
		;;
	esac
done
# gVisor sandboxes (the runtime handler runsc) that outlived their shims:
# runsc itself stops those of this cluster's runsc root.
if [ -d "$RUN_DIR/runsc" ] && [ -x "$GVISOR_DIR/runsc" ]; then
	for c in $("$GVISOR_DIR/runsc" --root "$RUN_DIR/runsc" list -q 2>/dev/null); do
		log "deleting leftover gVisor sandbox $c"
		"$GVISOR_DIR/runsc" --root "$RUN_DIR/runsc" delete --force "$c" >/dev/null 2>&1
	done
fi
# 5. Mounts under the cluster's directories (container root file systems,
# emptyDirs, network namespaces), deepest first.
findmnt -rn -o TARGET | grep -E "^($STATE|$RUN_DIR)(/|$)" | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
# 6. The kubelet's cgroups (cgroupfs driver), deepest first, each only if empty.
for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
	[ -d "$h/kubepods" ] || continue
	find "$h/kubepods" -depth -type d -exec rmdir {} \; 2>/dev/null
	[ -d "$h/kubepods" ] && log "cgroup $h/kubepods is still in use"
done
# 7. The bridge.
if ip link show "$BRIDGE" >/dev/null 2>&1; then
	ip link del "$BRIDGE" && log "deleted bridge $BRIDGE"
fi
# 8. The kernel settings the kubelet changed.
if [ -f "$STATE/sysctl.orig" ]; then
	while IFS= read -r kv; do sysctl -q -w "$kv" >/dev/null 2>&1 || log "could not restore $kv"; done <"$STATE/sysctl.orig"
	log "restored $(tr '\n' ' ' <"$STATE/sysctl.orig")"
fi
# 9. State.
rm -rf "$RUN_DIR" "$STATE"
rmdir "$(dirname "$STATE")" 2>/dev/null # its parent, when nothing else is there
log "removed $STATE and $RUN_DIR; binaries stay in $BIN_DIR"

//go:build !fast

package containment_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil/testbackend"
)

// probeLib is sourced by the bash probes: "try NAME CMD..." reports ok when
// the command fails and BREACH when it succeeds; "noread NAME FILE" reports
// BREACH when FILE yields any byte.
const probeLib = `try() {
  local name=$1; shift
  local out
  if out=$("$@" 2>&1); then echo "BREACH $name: $(echo "$out" | head -c 200 | tr '\n' ' ')"
  else echo "ok $name: $(echo "$out" | head -1 | head -c 200)"; fi
}
noread() {
  local n
  n=$(head -c 64 "$2" 2>/dev/null | wc -c)
  if [ "$n" -gt 0 ]; then echo "BREACH $1: read $n bytes of $2"; else echo "ok $1: nothing readable in $2"; fi
}
`

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestHostFilesAreNotVisible reads what would identify the host: the
// sandbox has its own hostname and /etc, the host's shadow file is not
// there (and the image's own is unreadable to the sandbox user), and PID 1
// is the sandbox's own first process, the agent (own PID namespace).
func TestHostFilesAreNotVisible(t *testing.T) {
	h := newHarness(t, "bash")
	code := `echo "hostname $(hostname)"
echo "etc-hostname $(cat /etc/hostname)"
echo "uid $(id -u)"
cat /etc/shadow >/dev/null 2>&1 && echo "shadow readable" || echo "shadow unreadable"
grep -c '^sandbox:x:10001:' /etc/passwd | sed 's/^/sandbox-user /'
echo "pid1 $(tr '\0' ' ' < /proc/1/cmdline)"
echo "pid1-comm $(cat /proc/1/comm)"
echo "processes $(ls -d /proc/[0-9]* | wc -l)"`
	r := h.run(engine.Request{Code: code, TimeoutSeconds: 10}, 30*time.Second)
	got := map[string]string{}
	for _, l := range lines(r.Stdout) {
		k, v, _ := strings.Cut(l, " ")
		got[k] = v
	}
	hostName, _ := os.Hostname()
	hostEtc, _ := os.ReadFile("/etc/hostname")
	if got["hostname"] == "" || got["hostname"] == hostName {
		t.Errorf("sandbox hostname %q; want its own, not the host's %q", got["hostname"], hostName)
	}
	if got["etc-hostname"] == "" || got["etc-hostname"] == strings.TrimSpace(string(hostEtc)) {
		t.Errorf("sandbox /etc/hostname %q is the host's", got["etc-hostname"])
	}
	if got["uid"] != "10001" {
		t.Errorf("uid %q, want 10001", got["uid"])
	}
	if got["shadow"] != "unreadable" {
		t.Errorf("/etc/shadow is readable in the sandbox")
	}
	if got["sandbox-user"] != "1" {
		t.Errorf("/etc/passwd is not the image's (no sandbox user): %q", got["sandbox-user"])
	}
	if hostPasswd, err := os.ReadFile("/etc/passwd"); err == nil && strings.Contains(string(hostPasswd), "sandbox:x:10001:") {
		t.Logf("note: the host also has a sandbox user; the /etc/passwd check proves less here")
	}
	// No separate init: the agent is the container's first process.
	if !strings.HasPrefix(got["pid1"], "/opt/mcp-code-runner/agent ") || got["pid1-comm"] != "agent" {
		t.Errorf("pid 1 is %q (comm %q); want the sandbox's own first process, the agent (own PID namespace)", got["pid1"], got["pid1-comm"])
	}
}

// TestNoDockerSocket looks for the Docker socket and any other socket file
// or Docker setting in the sandbox. Besides /proc files masked with the
// null device (whose content is nothing), the one host directory mounted besides
// the agent's binary is the read-only directory of the socket the agent
// connects to at boot; the server removes the socket once the agent is
// connected, before any program runs, so the program finds it empty.
func TestNoDockerSocket(t *testing.T) {
	h := newHarness(t, "bash")
	code := probeLib + `try docker.sock ls -l /var/run/docker.sock
try run-docker.sock ls -l /run/docker.sock
try containerd.sock ls -l /run/containerd/containerd.sock
socks=$(find / -xdev -type s 2>/dev/null; find /tmp /workspace /run /var/run -type s 2>/dev/null)
if [ -n "$socks" ]; then echo "BREACH socket-files: $socks"; else echo "ok socket-files: none"; fi
if env | grep -qi docker; then echo "BREACH docker-env: $(env | grep -i docker)"; else echo "ok docker-env: none"; fi
# A /proc file masked with the null device is a mask, not a host mount
# (runc binds the container's /dev/null there, crun the host's).
masked() { [ -c "$1" ] && [ "$(stat -c %t:%T "$1")" = 1:3 ]; }
# STDDEV says whether a mount is one of the standard devices bound from the
# host as the device itself (see restored sandboxes below).
stddev() { STDDEV; }
# A cgroup hierarchy is the kernel's, whatever its source is named (crun
# names it by its path on the host): the sandbox's own cgroup, read-only.
hostmounts() { grep -v -E '^(overlay|proc|tmpfs|devpts|sysfs|cgroup|mqueue|shm) ' /proc/mounts | awk '$3 != "cgroup" && $3 != "cgroup2"' | while read -r src mp rest; do masked "$mp" || stddev "$mp" || echo "$src $mp $rest"; done; }
GVISORMOUNTS
mounts=$(hostmounts | awk '{print $2}' | sort | tr '\n' ' ')
case "$mounts" in
  "ROOTETC /opt/mcp-code-runner/agent "|"ROOTETC /opt/mcp-code-runner/agent /run/mcp-code-runner ") echo "ok host-mounts: only $mounts";;
  *) echo "BREACH host-mounts: $mounts";;
esac
rw=$(hostmounts | awk '$4 !~ /^ro(,|$)/ {print $2}' | tr '\n' ' ')
if [ -n "$rw" ]; then echo "BREACH host-mounts-ro: writable: $rw"; else echo "ok host-mounts-ro: all read-only"; fi
left=$(ls -A /run/mcp-code-runner 2>/dev/null | grep -v -x -E 'KEPT')
if [ -n "$left" ]; then echo "BREACH agent-socket: $(ls -lA /run/mcp-code-runner)"; else echo "ok agent-socket: gone once the agent connected"; fi
AGENTLOG`
	// Podman bind-mounts /etc/hosts (read-only, loopback names only) into
	// every container, with or without a network; Docker does not.
	// The crun backend mounts its own /etc/hosts (read-only, loopback
	// names only) beside the sandbox's /etc/hostname.
	etc := "/etc/hostname"
	switch {
	case onCrun():
		etc = "/etc/hostname /etc/hosts"
	case podman(t, h):
		etc = "/etc/hostname /etc/hosts"
	}
	// Under gVisor every mount names its source "none": a file of the
	// host's reaches the sandbox only through gVisor's gofer, as a mount of
	// type 9p, and every other mount is a file system of gVisor's own
	// kernel, holding nothing of the host's. The root is such a host
	// mount too (the image's, read-only), where in a container it is the
	// overlay left out above.
	root, gvisorMounts := "", ""
	if testbackend.OnGVisor() {
		root = "/ "
		gvisorMounts = `hostmounts() { awk '$3 == "9p"' /proc/mounts; }
own=$(awk '$3 != "9p" && $3 !~ /^(dev|devpts|proc|sysfs|tmpfs|cgroup|mqueue)$/ {print $2 " (" $3 ")"}' /proc/mounts | tr '\n' ' ')
if [ -n "$own" ]; then echo "BREACH gvisor-mounts: neither the host's through the gofer nor gVisor's own: $own"; else echo "ok gvisor-mounts: the rest are gVisor's own file systems"; fi`
	}
	code = strings.ReplaceAll(code, `GVISORMOUNTS`, gvisorMounts)
	code = strings.ReplaceAll(code, `ROOTETC /opt`, root+etc+` /opt`)
	// A restored sandbox (a session's that can be checkpointed) has a user
	// namespace, where crun binds the standard devices from the host
	// instead of making them (the backend binds them too, for CRIU): each
	// such mount passes only as the very device its path names (null is
	// masked()'s). It also has its agent's log directory mounted at "log"
	// in its socket's directory: it passes only as what SECURITY.md says it
	// is, a tmpfs of 1 MiB and 16 inodes of its own, root's, mode 0711, that
	// the program cannot list.
	stddev, kept, agentLog := "false", "^$", ""
	if restoredMode() {
		stddev = `[ -c "$1" ] && case "$1 $(stat -c %t:%T "$1")" in "/dev/full 1:7"|"/dev/random 1:8"|"/dev/tty 5:0"|"/dev/urandom 1:9"|"/dev/zero 1:5") true;; *) false;; esac`
		kept = "log"
		agentLog = `log=/run/mcp-code-runner/log
opts=$(awk -v mp="$log" '$2 == mp && $3 == "tmpfs" {print $4}' /proc/mounts)
case ",$opts," in
  *,size=1024k,*nr_inodes=16,*mode=711,*) ;;
  *) echo "BREACH agent-log: $log is not a 1 MiB tmpfs of 16 inodes, mode 0711: $(grep " $log " /proc/mounts)";;
esac
if [ "$(stat -c %u:%a "$log")" != 0:711 ]; then echo "BREACH agent-log: $log is $(stat -c %u:%a "$log"), want root's 0711"
elif ls "$log" >/dev/null 2>&1; then echo "BREACH agent-log: the program lists $log: $(ls -A "$log")"
else echo "ok agent-log: a tmpfs of 1 MiB, root's, not listable"; fi`
	}
	code = strings.ReplaceAll(code, `STDDEV`, stddev)
	code = strings.ReplaceAll(code, `'KEPT'`, `'`+kept+`'`)
	code = strings.ReplaceAll(code, `AGENTLOG`, agentLog)
	r := h.run(engine.Request{Code: code, TimeoutSeconds: 10}, 30*time.Second)
	probes := []string{"docker.sock", "run-docker.sock", "containerd.sock", "socket-files", "docker-env", "host-mounts", "host-mounts-ro", "agent-socket"}
	if restoredMode() {
		probes = append(probes, "agent-log")
	}
	if testbackend.OnGVisor() {
		probes = append(probes, "gvisor-mounts")
	}
	probeReport(t, r, probes...)
}

// TestServerEnvironmentIsNotVisible puts a secret in the server's own
// environment; the sandbox sees none of it, in env or in any process's
// /proc/PID/environ it can read. A variable the request passes is visible
// (the probe works). The agent's environment (the container's, with
// MCR_SANDBOX=1) is not readable from inside, the agent being not dumpable;
// it is checked from the host instead, with the container's configuration.
// Under gVisor the sandbox's first host process is gVisor's Sentry (whose
// environment is checked too), and the agent's environment and command line
// are read inside the sandbox, as root, with runsc exec.
func TestServerEnvironmentIsNotVisible(t *testing.T) {
	secret := "s3cr3t-" + randomHex(t, 12)
	t.Setenv("CONTAINMENT_TEST_SECRET", secret)
	h := newHarness(t, "bash")
	var gv *crunView
	if testbackend.OnGVisor() {
		gv = gvisorView(t, h.view)
	}
	code := `env
for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do
  if [ -r "$f" ] && tr '\0' '\n' < "$f" 2>/dev/null; then :; else echo "unreadable $f"; fi
done
echo END
for i in $(seq 1 200); do [ -e /tmp/host-read ] && break; sleep 0.05; done`
	var (
		hostView  string
		hostErr   error
		agentPid1 bool
	)
	// The program waits (up to 10 s) for the host to have read the
	// sandbox, which reads under gVisor take two runsc exec, each a
	// second or more on a loaded host: the host then leaves a file in the
	// sandbox's /tmp.
	hostRead := func(id string, pid int) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if gv != nil {
			_, _ = gv.inGVisor(ctx, id, "touch", "/tmp/host-read")
			return
		}
		_ = os.WriteFile(fmt.Sprintf("/proc/%d/root/tmp/host-read", pid), nil, 0o644) // as root, into the sandbox's tmpfs
	}
	r := h.runWith(engine.Request{Code: code, TimeoutSeconds: 10, Env: map[string]string{"VISIBLE_FROM_REQUEST": "yes"}}, 30*time.Second,
		engine.RunOptions{OnChunk: onLine("END", func() {
			// What the sandbox was given, seen from the host: the
			// container's configuration and its first process's
			// environment.
			id, pid, err := sandboxOnHost(h.view)
			if err != nil {
				hostErr = err
				return
			}
			defer hostRead(id, pid)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			config, err := h.view.config(ctx, id)
			if err != nil {
				hostErr = err
				return
			}
			environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			if err != nil && os.Geteuid() == 0 {
				hostErr = err
			}
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if gv != nil {
				// The host's first process is gVisor's Sentry (whose
				// environment is checked too); the agent is gVisor's PID 1.
				agentEnv, err := gv.inGVisor(ctx, id, "cat", "/proc/1/environ")
				if err != nil {
					hostErr = err
					return
				}
				environ = append(append(environ, 0), agentEnv...)
				if cmdline, err = gv.inGVisor(ctx, id, "cat", "/proc/1/cmdline"); err != nil {
					hostErr = err
					return
				}
			}
			agentPid1 = strings.HasPrefix(string(cmdline), "/opt/mcp-code-runner/agent\x00")
			hostView = config + "\n" + strings.ReplaceAll(string(environ), "\x00", "\n")
		})})
	if strings.Count(r.Stdout, "VISIBLE_FROM_REQUEST=yes") < 2 {
		t.Fatalf("the probe did not read the environments (env and the program's own /proc/PID/environ): %q", r.Stdout)
	}
	if !strings.Contains(r.Stdout, "END\n") {
		t.Fatalf("probe incomplete: %q", tail(r.Stdout, 500))
	}
	if strings.Contains(r.Stdout, secret) || strings.Contains(r.Stdout, "CONTAINMENT_TEST_SECRET") {
		t.Errorf("the server's secret is visible in the sandbox")
	}
	if !strings.Contains(r.Stdout, "unreadable /proc/1/environ") {
		t.Errorf("the agent's (PID 1's) environment is readable from the sandbox; it should not be (not dumpable)")
	}
	for _, l := range lines(r.Stdout) {
		if strings.HasPrefix(l, "unreadable ") {
			t.Logf("  %s", l)
		}
	}
	skipIfNoHostView(t, hostErr)
	if hostView == "" {
		t.Fatal("never saw the END marker")
	}
	if !agentPid1 {
		t.Errorf("the container's first process is not the agent")
	}
	if os.Geteuid() == 0 && !strings.Contains(hostView, "MCR_SANDBOX=1\n") {
		t.Errorf("the host's view of the agent's environment lacks MCR_SANDBOX=1 (the probe does not work)")
	}
	if strings.Contains(hostView, secret) || strings.Contains(hostView, "CONTAINMENT_TEST_SECRET") {
		t.Errorf("the server's secret is in the sandbox's configuration or the agent's environment")
	}
}

// TestProcAndSys probes the kernel interfaces a container must not use.
func TestProcAndSys(t *testing.T) {
	h := newHarness(t, "bash")
	code := probeLib + `noread kcore /proc/kcore
noread kmsg /proc/kmsg
noread keys /proc/keys
noread timer_list /proc/timer_list
noread dev-mem /dev/mem
noread sysrq-read /proc/sysrq-trigger
try sysrq-write bash -c 'echo h > /proc/sysrq-trigger'
try proc-sys-write bash -c 'echo 1 > /proc/sys/kernel/ns_last_pid'
try proc-sys-vm bash -c 'echo 3 > /proc/sys/vm/drop_caches'
try sys-write touch /sys/kernel/x
try sys-kernel bash -c 'echo never > /sys/kernel/mm/transparent_hugepage/enabled'
try cgroup-write bash -c 'echo max > /sys/fs/cgroup/pids/pids.max'
try cgroup-mem-write bash -c 'echo -1 > /sys/fs/cgroup/memory/memory.limit_in_bytes'
try dmesg dmesg
try core-pattern bash -c 'echo "|/tmp/x" > /proc/sys/kernel/core_pattern'
try mknod mknod /tmp/sda b 8 0
if grep -q -v '^0000000000000000 ' /proc/kallsyms; then echo "BREACH kallsyms: kernel addresses visible"; else echo "ok kallsyms: addresses hidden"; fi
if [ -n "$(ls -A /sys/firmware 2>/dev/null)" ]; then echo "BREACH sys-firmware: $(ls /sys/firmware)"; else echo "ok sys-firmware: empty"; fi`
	r := h.run(engine.Request{Code: code, TimeoutSeconds: 10}, 30*time.Second)
	probeReport(t, r, "kcore", "kmsg", "keys", "timer_list", "dev-mem", "sysrq-read", "sysrq-write", "proc-sys-write",
		"proc-sys-vm", "sys-write", "sys-kernel", "cgroup-write", "cgroup-mem-write", "dmesg", "core-pattern", "mknod",
		"kallsyms", "sys-firmware")
}

// TestPrivilegedOperations tries what needs privileges the sandbox does not
// have: each attempt fails with EPERM (capabilities dropped, seccomp,
// no-new-privileges). Setuid binaries do not elevate. Under gVisor the
// agent's namespace files open (gVisor's /proc does not refuse them for a
// process that is not dumpable), and joining them must fail with EPERM.
func TestPrivilegedOperations(t *testing.T) {
	t.Run("syscalls", func(t *testing.T) {
		h := newHarness(t, "python")
		code := `import ctypes, errno, os, socket
libc = ctypes.CDLL(None, use_errno=True)
class TS(ctypes.Structure):
    _fields_ = [("s", ctypes.c_long), ("ns", ctypes.c_long)]
def report(name, r, e):
    if r < 0:
        print("ok" if e == errno.EPERM else "FAIL", name + ":", errno.errorcode.get(e, e))
    else:
        print("BREACH", name + ":", "succeeded")
def sc(name, nr, *args):
    r = libc.syscall(nr, *args)
    report(name, r, ctypes.get_errno())
fd = os.open('/dev/null', os.O_RDONLY)
# x86_64 syscall numbers
sc("finit_module", 313, fd, b"", 0)
sc("init_module", 175, None, 0, b"")
sc("delete_module", 176, b"ext4", 0)
sc("clock_settime", 227, 0, ctypes.byref(TS(0, 0)))
sc("settimeofday", 164, ctypes.byref(TS(0, 0)), None)
tx = (ctypes.c_char * 256)()
tx[0] = 2  # modes = ADJ_FREQUENCY: a change, not a query
sc("adjtimex", 159, ctypes.byref(tx))
sc("mount", 165, b"none", b"/tmp", b"tmpfs", 0, None)
sc("umount2", 166, b"/tmp", 0)
sc("unshare-user", 272, 0x10000000)
sc("unshare-mount", 272, 0x00020000)
sc("unshare-net", 272, 0x40000000)
# PID 1 (the agent) is not dumpable: its namespace files cannot even be
# opened. setns is tried with the program's own mount namespace instead.
# gVisor opens them (its /proc does not check dumpable there): under
# gVisor the file must open and setns with it must fail with EPERM.
try:
    fd1 = os.open('/proc/1/ns/mnt', os.O_RDONLY)
except OSError as e:
    print("FAIL pid1-ns: gVisor refused to open /proc/1/ns/mnt:" if GVISOR else "ok pid1-ns:", errno.errorcode.get(e.errno, e.errno))
else:
    if GVISOR:
        r = libc.syscall(308, fd1, 0)
        e = ctypes.get_errno()
        if r == 0:
            print("BREACH pid1-ns: setns into the agent's mount namespace")
        else:
            print("ok" if e == errno.EPERM else "FAIL", "pid1-ns: opened (gVisor); setns with it:", errno.errorcode.get(e, e))
    else:
        print("BREACH pid1-ns: /proc/1/ns/mnt opened")
    os.close(fd1)
sc("setns", 308, os.open('/proc/self/ns/mnt', os.O_RDONLY), 0)
sc("chroot", 161, b"/tmp")
sc("pivot_root", 155, b"/tmp", b"/tmp")
sc("setuid-0", 105, 0)
sc("setgid-0", 106, 0)
sc("setgroups", 116, 0, None)
sc("reboot", 169, 0xfee1dead, 672274793, 0x4321fedc, None)
sc("kexec_load", 246, 0, 0, None, 0)
sc("bpf", 321, 0, None, 0)
sc("perf_event_open", 298, ctypes.byref((ctypes.c_char * 128)()), 0, -1, -1, 0)
sc("syslog", 103, 3, None, 0)
sc("swapon", 167, b"/tmp/x", 0)
sc("acct", 163, b"/tmp/x")
sc("iopl", 172, 3)
sc("ioperm", 173, 0, 1024, 1)
sc("sethostname", 170, b"evil", 4)
sc("open_by_handle_at", 304, 3, ctypes.byref((ctypes.c_char * 128)()), 0)
for name, args in (("raw-socket", (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)),
                   ("raw-socket6", (socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)),
                   ("packet-socket", (socket.AF_PACKET, socket.SOCK_RAW, 0))):
    try:
        socket.socket(*args).close()
        report(name, 0, 0)
    except OSError as e:
        report(name, -1, e.errno)
# ptrace stays usable on one's own children (debuggers work), never more.
pid = os.fork()
if pid == 0:
    import time; time.sleep(5); os._exit(0)
r = libc.ptrace(16, pid, None, None)  # PTRACE_ATTACH own child
print("info ptrace-own-child:", "allowed" if r == 0 else errno.errorcode.get(ctypes.get_errno()))
os.kill(pid, 9)`
		code = strings.Replace(code, "libc = ", "GVISOR = "+pyBool(testbackend.OnGVisor())+"\nlibc = ", 1)
		r := h.run(engine.Request{Code: code, TimeoutSeconds: 10}, 30*time.Second)
		for _, l := range lines(r.Stdout) {
			if strings.HasPrefix(l, "FAIL") {
				t.Errorf("failed, but not with EPERM: %s", l)
			}
		}
		probeReport(t, r, "finit_module", "init_module", "delete_module", "clock_settime", "settimeofday", "adjtimex",
			"mount", "umount2", "unshare-user", "unshare-mount", "unshare-net", "pid1-ns", "setns", "chroot", "pivot_root",
			"setuid-0", "setgid-0", "setgroups", "reboot", "kexec_load", "bpf", "perf_event_open", "syslog", "swapon",
			"acct", "iopl", "ioperm", "sethostname", "open_by_handle_at", "raw-socket", "raw-socket6", "packet-socket")
	})
	t.Run("commands", func(t *testing.T) {
		h := newHarness(t, "bash")
		code := probeLib + `try date-s date -s '2001-01-01 00:00:00'
try mount-cmd mount -t tmpfs none /tmp
try unshare-cmd unshare -r true
try unshare-ns unshare -m -n true
try nsenter nsenter -t 1 -m true
try chroot-cmd chroot / true
try setpriv setpriv --reuid=0 true
try insmod bash -c 'command -v insmod >/dev/null || { echo "no insmod in the image (finit_module is probed in syscalls)"; exit 1; }; insmod /tmp/x.ko'
try setuid-mount bash -c 'mount --bind /tmp /workspace'
status() {
  local v
  v=$(grep "^$2:" /proc/self/status | tr -s '\t ' ' ')
  if [ "$v" = "$3" ]; then echo "ok $1: $v"; else echo "BREACH $1: $v"; fi
}
status cap-effective CapEff 'CapEff: 0000000000000000'
status cap-bounding CapBnd 'CapBnd: 0000000000000000'
status cap-ambient CapAmb 'CapAmb: 0000000000000000'
status no-new-privs NoNewPrivs 'NoNewPrivs: 1'
status seccomp Seccomp 'Seccomp: 2'
setuid=$(find / -xdev -perm -4000 -type f 2>/dev/null | sort | tr '\n' ' ')
echo "info setuid-binaries: $setuid(inert under no-new-privileges)"`
		r := h.run(engine.Request{Code: code, TimeoutSeconds: 10}, 30*time.Second)
		probeReport(t, r, "date-s", "mount-cmd", "unshare-cmd", "unshare-ns", "nsenter", "chroot-cmd", "setpriv", "insmod",
			"setuid-mount", "cap-effective", "cap-bounding", "cap-ambient", "no-new-privs", "seccomp")
	})
}

// pyBool is b in Python.
func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// TestNetworkEgress checks that the only interface is loopback and there is
// no route out. No packet is sent anywhere but the sandbox's own loopback:
// a UDP socket's connect looks its route up and sends nothing.
//
// Under gVisor, whose kernel has no /sys/class/net without its network
// stack, the interfaces are the ones the kernel names over netlink; its
// /proc/net/ipv6_route lists no route at all (not even loopback's), and the
// route lookups carry the claim.
func TestNetworkEgress(t *testing.T) {
	h := newHarness(t, "python")
	code := `import errno, os, socket, time
if not GVISOR:
    print("interfaces", " ".join(sorted(os.listdir('/sys/class/net'))))
else:
    print("interfaces", " ".join(sorted(n for _, n in socket.if_nameindex())))
for fam, host in ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1")):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        s.connect((host, 9))
        print("route-" + host, "found")
    except OSError as e:
        print("route-" + host, errno.errorcode.get(e.errno, e.errno))
    s.close()
route = open('/proc/net/route').read().strip().splitlines()
print("ipv4-routes", len(route) - 1)
v6 = [l.split()[-1] for l in open('/proc/net/ipv6_route').read().splitlines()]
print("ipv6-route-devices", " ".join(sorted(set(v6))))
print("dev", " ".join(sorted(l.split(':')[0].strip() for l in open('/proc/net/dev').read().splitlines()[2:])))
for host in ("127.0.0.1", "::1"):
    fam = socket.AF_INET6 if ':' in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(5)
    t = time.monotonic()
    try:
        s.connect((host, 9))
        print("connect", host, "connected")
    except OSError as e:
        print("connect", host, errno.errorcode.get(e.errno, e.errno), "%.3f" % (time.monotonic() - t))
    s.close()`
	code = strings.Replace(code, "GVISOR", pyBool(testbackend.OnGVisor()), 1)
	r := h.run(engine.Request{Code: code, TimeoutSeconds: 10}, 30*time.Second)
	want := map[string]string{
		"interfaces":         "lo",
		"ipv4-routes":        "0",
		"ipv6-route-devices": "lo",
		"dev":                "lo",
		"route-192.0.2.1":    "ENETUNREACH",
		"route-2001:db8::1":  "ENETUNREACH",
	}
	if testbackend.OnGVisor() {
		want["ipv6-route-devices"] = ""
	}
	got := map[string]string{}
	for _, l := range lines(r.Stdout) {
		k, v, _ := strings.Cut(l, " ")
		if k == "connect" {
			f := strings.Fields(v)
			secs, _ := strconv.ParseFloat(f[len(f)-1], 64)
			if len(f) != 3 || f[1] != "ECONNREFUSED" || secs > 0.1 {
				t.Errorf("connect to a closed loopback port should be refused at once: %s", l)
			}
			continue
		}
		got[k] = v
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
	if strings.Count(r.Stdout, "connect ") != 2 {
		t.Errorf("connect probes missing: %q %q", r.Stdout, r.Stderr)
	}
}

// TestLinks follows a symlink to /etc/passwd (the image's, not the host's),
// tries hard links across file systems, and tries to write the agent binary
// (the host's own executable, mounted read-only), also through PID 1's
// /proc entries (the agent's, not dumpable).
func TestLinks(t *testing.T) {
	h := newHarness(t, "bash")
	code := probeLib + `cd /workspace
ln -s /etc/passwd pw
ln -s ../../../../../../etc/shadow sh
if grep -q '^sandbox:x:10001:' pw; then echo "ok symlink-passwd: the image's own /etc/passwd"; else echo "BREACH symlink-passwd: $(head -c 100 pw)"; fi
noread symlink-shadow sh
try hardlink-etc ln /etc/passwd hl
try hardlink-tmp bash -c 'echo x > /tmp/f && ln /tmp/f /workspace/f2'
try hardlink-agent ln /opt/mcp-code-runner/agent /workspace/agent
try agent-write bash -c 'echo x >> /opt/mcp-code-runner/agent'
try agent-chmod chmod 777 /opt/mcp-code-runner/agent
try agent-via-symlink bash -c 'ln -s /opt/mcp-code-runner/agent a && echo x >> a'
try agent-replace bash -c 'cp /bin/true /opt/mcp-code-runner/agent'
try init-exe-write bash -c 'echo x >> /proc/1/exe'
try proc-root-write bash -c 'echo x > /proc/1/root/etc/x'
try hostname-write bash -c 'echo evil > /etc/hostname'`
	r := h.run(engine.Request{Code: code, TimeoutSeconds: 10}, 30*time.Second)
	probeReport(t, r, "symlink-passwd", "symlink-shadow", "hardlink-etc", "hardlink-tmp", "hardlink-agent", "agent-write",
		"agent-chmod", "agent-via-symlink", "agent-replace", "init-exe-write", "proc-root-write", "hostname-write")
	if !strings.Contains(r.Stdout, "Invalid cross-device link") {
		t.Errorf("hard links across file systems should fail with EXDEV: %q", r.Stdout)
	}
}

// TestBackgroundProcessesDie starts processes meant to outlive the run
// (setsid, nohup, double fork, one ignoring SIGTERM and SIGHUP), each named
// with a marker. They are seen on the host while the run is in flight; the
// run returns as soon as its main process ends; afterwards none is left on
// the host, and the next run (from the warm pool) sees only its own
// processes. Under gVisor, where the host sees the sandbox's Sentry, they
// are listed inside the sandbox with runsc exec, and afterwards the sandbox
// is gone from runsc's state and from the host's processes.
func TestBackgroundProcessesDie(t *testing.T) {
	h := newPooledHarness(t, "bash", func(c *config.Config) {
		c.Pool.Size = 0
		c.Pool.Sizes = []string{"bash=1"}
	})
	marker := "mcrbg" + randomHex(t, 6)
	code := `setsid bash -c 'exec -a "$MARK-setsid" sleep 300' &
nohup bash -c 'exec -a "$MARK-nohup" sleep 300' >/dev/null 2>&1 &
( bash -c 'exec -a "$MARK-double" sleep 300' & )
setsid bash -c 'trap "" TERM HUP INT; exec -a "$MARK-trap" sleep 300' </dev/null >/dev/null 2>&1 &
( setsid bash -c 'exec -a "$MARK-daemon" sleep 300' </dev/null >/dev/null 2>&1 & ) &
echo spawned
# The run ends once the test has seen its processes.
while [ ! -e /workspace/.seen ]; do sleep 0.05; done
echo done`
	var gv *crunView
	if testbackend.OnGVisor() {
		gv = gvisorView(t, h.view)
	}
	var (
		seen    []string
		seenIn  map[string]bool // under gVisor, the sandboxes they ran in
		seenErr error
	)
	list := func() {
		if gv == nil {
			seen = hostProcesses(t, marker)
			return
		}
		// Under gVisor the host runs the Sentry; the program's processes
		// are the Sentry's, listed inside the sandbox.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		seen, seenIn, seenErr = gv.gvisorProcesses(ctx, marker)
	}
	// look waits for the marked processes to start, then lets the run end.
	look := func() {
		testutil.WaitFor(15*time.Second, func() bool { list(); return len(seen) >= 5 })
		if gv != nil {
			for id := range seenIn {
				_, _ = gv.inGVisor(context.Background(), id, "touch", "/workspace/.seen")
			}
			return
		}
		if len(seen) > 0 {
			pid, _, _ := strings.Cut(seen[0], " ")
			_ = os.WriteFile("/proc/"+pid+"/root/workspace/.seen", nil, 0o644)
		}
	}
	r := h.runWith(engine.Request{Code: code, TimeoutSeconds: 20, Env: map[string]string{"MARK": marker}}, 60*time.Second,
		engine.RunOptions{OnChunk: onLine("spawned", look)})
	if len(seen) < 5 && seenErr != nil {
		t.Errorf("listing the sandbox's processes: %v", seenErr)
	}
	if r.Status != engine.StatusOK || r.Stdout != "spawned\ndone\n" {
		t.Errorf("got status %s stdout %q stderr %q", r.Status, r.Stdout, r.Stderr)
	}
	t.Logf("on the host during the run: %d marked processes", len(seen))
	if len(seen) != 5 {
		t.Errorf("want the 5 marked processes visible on the host during the run (the probe works), saw %q", seen)
	}
	var left []string
	testutil.WaitFor(15*time.Second, func() bool { left = hostProcesses(t, marker); return len(left) == 0 })
	if len(left) > 0 {
		t.Errorf("processes outlived the run on the host: %q", left)
	}
	if gv != nil {
		// Under gVisor the processes end with their sandbox: runsc no
		// longer has it, and no host process (its Sentry, its gofer)
		// names it.
		testutil.WaitFor(15*time.Second, func() bool {
			left = nil
			list, err := gv.list(context.Background())
			if err != nil {
				left = append(left, err.Error())
			}
			for _, c := range list {
				if seenIn[c.ID] {
					left = append(left, "sandbox "+c.ID+" "+c.Status)
				}
			}
			for id := range seenIn {
				left = append(left, hostProcesses(t, id)...)
			}
			return len(left) == 0
		})
		if len(left) > 0 {
			t.Errorf("the run's gVisor sandbox outlived the run: %q", left)
		}
	}
	next := h.run(engine.Request{Code: `for p in /proc/[0-9]*; do read -r -d '' c < $p/cmdline; echo "${p#/proc/} $c"; done`, TimeoutSeconds: 10}, 30*time.Second)
	var others []string
	for _, l := range lines(next.Stdout) {
		_, cmd, _ := strings.Cut(l, " ")
		switch cmd {
		case "/opt/mcp-code-runner/agent", "bash": // PID 1, the agent, and the run itself
		default:
			others = append(others, l)
		}
	}
	if strings.Contains(next.Stdout, marker) || len(others) > 0 {
		t.Errorf("the next run sees processes besides the agent and itself: %q", others)
	}
}

//go:build linux && !fast

package crun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/agentconn"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// requireCheckpoints fails the test under CI=true (which installs the
// checkpoint tools) where b cannot checkpoint, and skips it elsewhere.
func requireCheckpoints(t *testing.T, b *Backend) {
	t.Helper()
	if err := b.CheckpointSupport(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: checkpoints must work here: %v", err)
		}
		t.Skipf("no checkpoints here: %v", err)
	}
}

// TestACheckpointIsRestoredByAnotherServerAndAFailedRestoreLeavesNothing:
// a session's sandbox checkpointed by a server that is then gone comes
// back in the next one with its workspace, that server's now (the sweep
// keeps it); a checkpoint whose images were damaged is not restored, and
// leaves no bundle, socket or log directory, log mount or cgroup.
func TestACheckpointIsRestoredByAnotherServerAndAFailedRestoreLeavesNothing(t *testing.T) {
	gone, live := reattachBackends(t)
	requireCheckpoints(t, gone)
	requireCheckpoints(t, live)
	ctx := context.Background()
	tmpl := sessionTemplate(t)
	sb, err := gone.Create(ctx, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := sb.Call(ctx, bashJob("echo kept > kept.txt"), nil); err != nil || res.Incomplete || res.AgentError != "" {
		t.Fatalf("first call: %+v, %v", res, err)
	}
	id := sb.ID()
	// The freezer the checkpoint uses ahead of CRIU freezes the sandbox,
	// and a thaw (after a failed dump) gives it back working.
	if !gone.freeze(id) {
		t.Fatal("the sandbox's cgroup was not frozen")
	}
	_, frozen, _, read := gone.freezer(id)
	if state, err := read(); err != nil || state != frozen {
		t.Fatalf("after freeze the freezer reads %q (%v)", state, err)
	}
	gone.thaw(id)
	if res, err := sb.Call(ctx, bashJob("cat kept.txt"), nil); err != nil || res.Incomplete || res.AgentError != "" {
		t.Fatalf("a call after the thaw: %+v, %v", res, err)
	}
	dir := filepath.Join(t.TempDir(), "checkpoint")
	if err := gone.Checkpoint(ctx, sb, dir); err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	if _, err := os.Stat(filepath.Join(gone.bundlesDir(), id)); !os.IsNotExist(err) {
		t.Errorf("the checkpointed sandbox's bundle remains: %v", err)
	}
	// A checkpoint its verification refuses is not restored, and leaves
	// nothing: the restore below takes the same name.
	refused := errors.New("refused by its hash")
	if _, err := live.Restore(ctx, tmpl, dir, func() error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("a restore whose verification refuses the checkpoint: %v", err)
	}
	// A refusal that comes after CRIU has restored the sandbox (the hash
	// is read beside the restore) removes it: it is never returned, and
	// leaves nothing either.
	pidFile := filepath.Join(live.bundlesDir(), id, "pid")
	late := func() error {
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if _, err := os.Stat(pidFile); err == nil {
				return refused
			}
		}
		t.Error("the restore never wrote its pid file while its verification ran")
		return refused
	}
	if sb, err := live.Restore(ctx, tmpl, dir, late); !errors.Is(err, refused) || sb != nil {
		t.Fatalf("a restore whose verification refuses the checkpoint once CRIU has restored it: %v, %v", sb, err)
	}
	if _, err := os.Stat(filepath.Join(live.bundlesDir(), id)); !os.IsNotExist(err) {
		t.Errorf("the sandbox restored before its checkpoint was refused remains: %v", err)
	}
	verified := false
	again, err := live.Restore(ctx, tmpl, dir, func() error { verified = true; return nil })
	if err == nil && !verified {
		t.Fatal("the restore did not verify the checkpoint")
	}
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	// CRIU's kernel facts stay cached where /run would not keep them.
	if !isTmpfs("/run") {
		if target, err := os.Readlink(kdatCache); err != nil || target != filepath.Join(kdatDir, "criu.kdat") || !isTmpfs(kdatDir) {
			t.Errorf("CRIU's cache is not kept: %s -> %q (%v)", kdatCache, target, err)
		}
	}
	res, err := again.Call(ctx, bashJob("cat kept.txt"), nil)
	if err != nil || len(res.Stages) != 1 || string(res.Stages[0].Stdout) != "kept\n" {
		t.Fatalf("after the restore: %+v, %v", res, err)
	}
	// CRIU logged errors and warnings only, not its debug log that crun
	// asks for (the tools' libcriu; MCR_CRIU_LOG_LEVEL unset).
	if log, err := os.ReadFile(filepath.Join(live.bundlesDir(), id, "checkpoint-work", "restore.log")); err != nil || strings.Contains(string(log), "as cg yard") {
		t.Errorf("CRIU's restore log holds its information lines (%v): %d bytes:\n%s", err, len(log), grepLines(string(log), "cg"))
	}
	if n, err := live.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("the sweep removed %d (%v) sandboxes though this server restored its one", n, err)
	}

	// The images damaged: the restore fails, and leaves nothing.
	dir2 := filepath.Join(t.TempDir(), "checkpoint")
	if err := live.Checkpoint(ctx, again, dir2); err != nil {
		t.Fatalf("second checkpoint: %v", err)
	}
	cores, _ := filepath.Glob(filepath.Join(dir2, checkpointImages, "core-*.img"))
	for _, c := range cores {
		if err := os.WriteFile(c, []byte("not a core image"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := live.Restore(ctx, tmpl, dir2, nil); err == nil || !strings.Contains(err.Error(), "crun restore") {
		t.Fatalf("restoring damaged images: %v", err)
	}
	host := id[strings.LastIndexByte(id, '-')+1:]
	left := []string{filepath.Join(live.bundlesDir(), id), agentDir(id), agentLogDir(id)}
	for _, c := range cgroupControllers() {
		left = append(left, filepath.Join("/sys/fs/cgroup", c, cgroupParent, id))
	}
	if live.cgroupV2 {
		left = append(left, filepath.Join("/sys/fs/cgroup", cgroupParent, id))
	}
	for _, p := range left {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s remains after a failed restore: %v", p, err)
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mounts")
	if strings.Contains(string(mounts), host) {
		t.Errorf("a mount of sandbox %s remains after a failed restore", host)
	}
}

// netProbe prints the sandbox's network namespace, its interfaces (as
// /proc and /sys see them), loopback's flags (0x9: up), whether ::1 is
// there, and what a connection to 127.0.0.1 meets: refused on a loopback
// that is up, unreachable on one that is down.
const netProbe = `readlink /proc/self/ns/net
echo "ifaces $(ls /sys/class/net | tr '\n' ' ')"
echo "proc $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\n' ' ')"
echo "flags $(cat /sys/class/net/lo/flags)"
echo "v6 $(awk '{print $1, $6}' /proc/net/if_inet6 | tr '\n' ' ')"
(exec 3<>/dev/tcp/127.0.0.1/9) 2>&1 | sed 's/.*: //' | sort -u
`

// TestARestoredSandboxHasANewNetworkNamespaceOfLoopbackAlone: CRIU leaves
// the sandbox's network namespace out of its checkpoint (criunet.go), and
// a restore gives the sandbox a new one: not the one it was dumped with,
// nor another sandbox's, with loopback alone, up, refusing a connection
// to a port nothing listens on, as before the checkpoint, whether the
// backend brought its loopback up after CRIU (a sandbox that held no
// internet socket) or CRIU's action script did (one that held one).
func TestARestoredSandboxHasANewNetworkNamespaceOfLoopbackAlone(t *testing.T) {
	_, b := reattachBackends(t)
	requireCheckpoints(t, b)
	if b.tools.netConf == nil {
		t.Fatal("CRIU's configuration that leaves the network namespace out is not in use")
	}
	ctx := context.Background()
	// Python's image: its python3 holds a socket between calls.
	tmpl := sessionTemplate(t)
	reg := languages.Builtin()
	tmpl.Image = reg.ImageOf(mustLang(t, reg, "python")).Tag
	probe := func(sb sandbox.Sandbox) []string {
		t.Helper()
		res, err := sb.Call(ctx, bashJob(netProbe), nil)
		if err != nil || len(res.Stages) != 1 || res.AgentError != "" {
			t.Fatalf("the network probe: %+v, %v", res, err)
		}
		return strings.Split(strings.TrimSpace(string(res.Stages[0].Stdout)), "\n")
	}
	want := []string{"ifaces lo ", "proc lo ", "flags 0x9", "v6 00000000000000000000000000000001 lo ", "Connection refused"}
	other, err := b.Create(ctx, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	// A sandbox holding an internet socket is seen to hold one. (CRIU
	// 4.1.1 cannot dump one on kernels where SO_PASSCRED is a Unix
	// socket's option alone, 6.18 here: such a session replays.)
	holder, err := b.Create(ctx, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	listen := "setsid -f python3 -c 'import socket, time\ns = socket.socket()\ns.bind((\"127.0.0.1\", 8765))\ns.listen()\ntime.sleep(600)' >/dev/null 2>&1\n" +
		"for i in $(seq 100); do [ $(tail -n +2 /proc/net/tcp | wc -l) -gt 0 ] && break; sleep 0.05; done"
	if res, err := holder.Call(ctx, bashJob(listen), nil); err != nil || res.AgentError != "" {
		t.Fatalf("the listener: %+v, %v", res, err)
	}
	if !holdsInetSockets(holder.(*agentconn.Sandbox).Link().(*link).proc.Pid) {
		t.Error("a sandbox listening on 127.0.0.1 is not seen to hold an internet socket")
	}
	for _, tc := range []struct {
		name string
		// script restores with CRIU's action script, as a checkpoint of a
		// sandbox that held an internet socket is.
		script bool
	}{
		{"loopback brought up by the backend", false},
		{"loopback brought up by CRIU's action script", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb, err := b.Create(ctx, tmpl)
			if err != nil {
				t.Fatal(err)
			}
			if holdsInetSockets(sb.(*agentconn.Sandbox).Link().(*link).proc.Pid) {
				t.Error("a new sandbox is seen to hold an internet socket")
			}
			before := probe(sb)
			if !slices.Equal(before[1:], want) {
				t.Fatalf("before the checkpoint the sandbox's network reads %q, want %q", before[1:], want)
			}
			// The dumped namespace is held open until the end, so that the
			// kernel cannot give its number to the restored one (it reuses
			// a freed namespace's number, and the checkpoint ends the
			// sandbox): equal numbers then mean the same namespace.
			dumpedNS, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", sb.(*agentconn.Sandbox).Link().(*link).proc.Pid))
			if err != nil {
				t.Fatalf("holding the sandbox's network namespace: %v", err)
			}
			defer dumpedNS.Close()
			if held, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", dumpedNS.Fd())); err != nil || held != before[0] {
				t.Fatalf("the namespace held is %q (%v), the sandbox's is %q", held, err, before[0])
			}
			dir := filepath.Join(t.TempDir(), "checkpoint")
			if err := b.Checkpoint(ctx, sb, dir); err != nil {
				t.Fatalf("checkpoint: %v", err)
			}
			metaFile := filepath.Join(dir, checkpointMetaFile)
			var meta checkpointMeta
			if data, err := os.ReadFile(metaFile); err != nil || json.Unmarshal(data, &meta) != nil || !meta.LoopbackLater {
				t.Fatalf("the checkpoint of a sandbox without internet sockets says loopback_later %v (%v)", meta.LoopbackLater, err)
			}
			if tc.script {
				meta.LoopbackLater = false
				data, _ := json.Marshal(meta)
				if err := os.WriteFile(metaFile, data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			restored, err := b.Restore(ctx, tmpl, dir, nil)
			if err != nil {
				t.Fatalf("restore: %v", err)
			}
			defer restored.Close()
			after := probe(restored)
			if !slices.Equal(after[1:], want) {
				t.Errorf("after the restore the sandbox's network reads %q, want %q", after[1:], want)
			}
			if after[0] == before[0] || !strings.HasPrefix(after[0], "net:[") {
				t.Errorf("the restored sandbox's network namespace is %q, the dumped one was %q", after[0], before[0])
			}
			if o := probe(other)[0]; o == after[0] || o == before[0] {
				t.Errorf("another sandbox's network namespace %q is the restored one's (%q) or the dumped one's (%q)", o, after[0], before[0])
			}
			// The dump holds no network state of the sandbox, and the
			// restore ran none of the tools that would put it back.
			for _, img := range []string{"ifaddr", "route", "rule", "iptables", "ip6tables", "netdev"} {
				if m, _ := filepath.Glob(filepath.Join(dir, checkpointImages, img+"-*.img")); len(m) > 0 {
					t.Errorf("the checkpoint holds the sandbox's network state: %v", m)
				}
			}
		})
	}
}

// maskProbe prints what /dev holds (each entry's type, mode, owner,
// device numbers and link target) and what a write there meets; for each
// masked directory the sandbox has, its file system, mode, entries and
// what a write meets; and the directories at /sys/fs/cgroup.
const maskProbe = `cd /dev && stat -c '%n %F %a %t:%T %N' . * | sort; touch /dev/x 2>/dev/null && echo /dev writable || echo /dev refuses writes; cd /
for d in /dev/pts /dev/shm /dev/mqueue; do echo "$d $(stat -f -c %T $d) $(stat -c %a $d)"; done
echo ok > /dev/shm/w && cat /dev/shm/w && rm /dev/shm/w
head -c 4 /dev/zero | od -An -tx1; echo hi > /dev/null && echo null-ok
` + `for d in /proc/acpi /proc/asound /proc/scsi /sys/firmware /sys/devices/virtual/powercap; do
  [ -d $d ] && echo "$d $(stat -f -c %T $d) $(stat -c %a $d) $(ls -A $d | wc -l) $(touch $d/x 2>&1 | sed 's/.*: //')"
done
echo "cgroup $(ls /sys/fs/cgroup | tr '\n' ' ')"
echo "pids.max $(cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max)"
`

// TestACheckpointSavesOnlyTheSandboxsOwnTmpfsMounts: a checkpointable
// sandbox's masked directories and, on cgroup v1, its /sys/fs/cgroup are
// the backend's read-only tmpfs mounts, bound (masks.go), so CRIU saves
// only the tmpfs mounts that hold the sandbox's files (/dev, /dev/shm,
// /tmp, /workspace); the sandbox sees the same before and after a
// restore, and as a sandbox that cannot be checkpointed does: an empty
// tmpfs that refuses writes at each masked directory, its cgroup's
// controllers at /sys/fs/cgroup.
func TestACheckpointSavesOnlyTheSandboxsOwnTmpfsMounts(t *testing.T) {
	_, b := reattachBackends(t)
	requireCheckpoints(t, b)
	if b.masks() == nil {
		t.Fatal("the backend's masks were not made")
	}
	ctx := context.Background()
	tmpl := sessionTemplate(t)
	probe := func(sb sandbox.Sandbox) string {
		t.Helper()
		res, err := sb.Call(ctx, bashJob(maskProbe), nil)
		if err != nil || len(res.Stages) != 1 || res.AgentError != "" {
			t.Fatalf("the probe: %+v, %v", res, err)
		}
		return string(res.Stages[0].Stdout)
	}
	plainTmpl := tmpl
	plainTmpl.ReattachGrace = 0 // a one-shot sandbox: no user namespace, crun's own masks
	plain, err := b.Create(ctx, plainTmpl)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	res, err := plain.Call(ctx, sandbox.Job{Deadline: 30 * time.Second, Request: wire.Request{Workdir: wire.WorkspacePath, OutputLimit: 4096,
		Files:  []wire.File{{Path: "main.sh", Data: []byte(maskProbe)}},
		Stages: []wire.Stage{{Name: "run", Argv: []string{"bash", "main.sh"}, TimeoutMs: 120_000}}}}, nil)
	if err != nil || len(res.Stages) != 1 {
		t.Fatalf("the probe in a one-shot sandbox: %+v, %v", res, err)
	}
	// The one-shot sandbox's masked directories; its /sys/fs/cgroup is
	// a cgroup namespace's, not a checkpointable sandbox's: there, on
	// cgroup v1, the controllers' directories (on v2 its own cgroup's
	// directory, bound as before).
	shown, _, _ := strings.Cut(string(res.Stages[0].Stdout), "cgroup ")
	for _, d := range b.masks().dirs {
		if !strings.Contains(shown, d+" tmpfs 1777 0 Read-only file system\n") {
			t.Fatalf("a one-shot sandbox's masked %s reads otherwise: %q", d, shown)
		}
	}
	sb, err := b.Create(ctx, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	got := probe(sb)
	_, cgroups, _ := strings.Cut(got, "cgroup ")
	if !strings.HasSuffix(cgroups, "\npids.max 64\n") {
		t.Errorf("a checkpointable sandbox does not read its own cgroup's pids limit (64): %q", cgroups)
	}
	if !b.cgroupV2 && strings.TrimSuffix(cgroups, "\npids.max 64\n") != strings.Join(cgroupControllers(), " ")+" " {
		t.Errorf("a checkpointable sandbox's /sys/fs/cgroup holds %q, want the controllers %v", cgroups, cgroupControllers())
	}
	want := shown + "cgroup " + cgroups
	if got != want {
		t.Errorf("a checkpointable sandbox reads\n%s, a one-shot one\n%s", got, want)
	}
	dir := filepath.Join(t.TempDir(), "checkpoint")
	if err := b.Checkpoint(ctx, sb, dir); err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	if tars, _ := filepath.Glob(filepath.Join(dir, checkpointImages, "tmpfs-dev-*")); len(tars) != 3 {
		t.Errorf("the checkpoint holds %d tmpfs archives, want 3 (/dev/shm, /tmp, /workspace): %v", len(tars), tars)
	}
	restored, err := b.Restore(ctx, tmpl, dir, nil)
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	defer restored.Close()
	if got := probe(restored); got != want {
		t.Errorf("a restored sandbox reads\n%s, a one-shot one\n%s", got, want)
	}
}

// TestTheAgentsTarSavesAndRestoresTheSandboxsTmpfsMounts: CRIU runs the
// agent binary as its tar (Options.CRIUTar, internal/criutar): every
// tmpfs archive of a checkpoint is the agent's (its gzip header is Go's,
// whose OS byte is 255 where gzip writes 3), and the restored sandbox
// reads its files as they were: types, modes, owners, sizes, times, hard
// and symbolic links, content.
func TestTheAgentsTarSavesAndRestoresTheSandboxsTmpfsMounts(t *testing.T) {
	_, b := reattachBackends(t)
	requireCheckpoints(t, b)
	if b.opts.CRIUTar == "" || b.tools.tarDir == "" {
		t.Fatalf("the backend does not give CRIU the agent as its tar (CRIUTar %q)", b.opts.CRIUTar)
	}
	ctx := context.Background()
	tmpl := sessionTemplate(t)
	sb, err := b.Create(ctx, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	const setup = `set -e
mkdir -p /workspace/d/e /tmp/t
printf 'hello\n' > /workspace/d/f
head -c 300000 /dev/urandom > /workspace/d/e/big
ln /workspace/d/f /workspace/d/hard
ln -s d/f /workspace/rel
ln -s /nowhere /tmp/t/dangling
mkfifo -m 640 /tmp/t/fifo
echo shm > /dev/shm/x
chmod 4755 /workspace/d/f
chmod 700 /workspace/d/e
chmod 1777 /tmp/t
touch -d '2026-01-02 03:04:05' /workspace/d/f /workspace/d/e/big /tmp/t/fifo /dev/shm/x /workspace/d/e
`
	const probe = `find /workspace/d /workspace/rel /tmp/t /dev/shm/x -exec stat -c '%n %F %a %u:%g %s %Y %h' {} + | sort
sha256sum /workspace/d/e/big /workspace/d/f`
	call := func(sb sandbox.Sandbox, script string) string {
		t.Helper()
		res, err := sb.Call(ctx, bashJob(script), nil)
		if err != nil || len(res.Stages) != 1 || res.Stages[0].ExitCode != 0 || res.AgentError != "" {
			t.Fatalf("%q: %+v, %v", script, res, err)
		}
		return string(res.Stages[0].Stdout)
	}
	call(sb, setup)
	want := call(sb, probe)
	dir := filepath.Join(t.TempDir(), "checkpoint")
	if err := b.Checkpoint(ctx, sb, dir); err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	archives, _ := filepath.Glob(filepath.Join(dir, checkpointImages, "tmpfs-dev-*"))
	if len(archives) == 0 {
		t.Fatal("the checkpoint holds no tmpfs archive")
	}
	for _, a := range archives {
		data, err := os.ReadFile(a)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) < 10 || data[0] != 0x1f || data[1] != 0x8b || data[9] != 255 {
			t.Errorf("%s was not written by the agent's tar (gzip header % x)", filepath.Base(a), data[:min(len(data), 10)])
		}
	}
	restored, err := b.Restore(ctx, tmpl, dir, nil)
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	defer restored.Close()
	if got := call(restored, probe); got != want {
		t.Errorf("the restored sandbox's files read\n%s\nbefore the checkpoint\n%s", got, want)
	}
}

// TestCRIUReachesTheSandboxsCgroupsThroughTheBackendsYard: CRIU is told
// to use the backend's cgroup yard (cgyard.go) and mounts no cgroup
// hierarchy of its own at a restore, and the restored sandbox is back in
// its own cgroup in every hierarchy, its memory limit kept.
func TestCRIUReachesTheSandboxsCgroupsThroughTheBackendsYard(t *testing.T) {
	// CRIU's debug log, which says what it mounted (the tools' libcriu
	// reads this from the server's environment).
	t.Setenv("MCR_CRIU_LOG_LEVEL", "4")
	_, b := reattachBackends(t)
	requireCheckpoints(t, b)
	if b.tools.netConf == nil {
		t.Fatal("CRIU's configuration files are not in use")
	}
	for op, conf := range b.tools.netConf {
		data, err := os.ReadFile(conf)
		if err != nil || !strings.Contains(string(data), "cgroup-yard "+cgroupYardBase+"\n") {
			t.Errorf("CRIU's configuration of %s does not name the backend's cgroup yard: %q (%v)", op, data, err)
		}
	}
	ctx := context.Background()
	tmpl := sessionTemplate(t)
	sb, err := b.Create(ctx, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "checkpoint")
	if err := b.Checkpoint(ctx, sb, dir); err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	restored, err := b.Restore(ctx, tmpl, dir, nil)
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	defer restored.Close()
	l := restored.(*agentconn.Sandbox).Link().(*link)
	log, err := os.ReadFile(filepath.Join(b.bundlesDir(), l.id, "checkpoint-work", "restore.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "Opening "+cgroupYardBase+" as cg yard") || strings.Contains(string(log), "Making controller dir") {
		t.Errorf("CRIU's restore did not take the backend's yard, or mounted a hierarchy of its own:\n%s", grepLines(string(log), "cg"))
	}
	cgroups, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", l.proc.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(cgroups)), "\n") {
		if !strings.HasSuffix(line, ":"+cgroupParent+"/"+l.id) {
			t.Errorf("the restored agent's cgroup %q is not its sandbox's (%s)", line, l.id)
		}
	}
	limit := "/sys/fs/cgroup/memory" + cgroupParent + "/" + l.id + "/memory.limit_in_bytes"
	if b.cgroupV2 {
		limit = "/sys/fs/cgroup" + cgroupParent + "/" + l.id + "/memory.max"
	}
	want := strconv.Itoa(tmpl.Resources.MemoryMB << 20)
	if got, err := os.ReadFile(limit); err != nil || strings.TrimSpace(string(got)) != want {
		t.Errorf("the restored sandbox's memory limit reads %q (%v), want %s", got, err, want)
	}
}

// grepLines is the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for line := range strings.SplitSeq(text, "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// TestTheCheckpointToolsAnswerCRIUsVersionWithoutStartingCRIU: crun asks
// libcriu for CRIU's version before every checkpoint and restore; the
// tools' libcriu answers from the version it was built with
// (deploy/checkpoint-tools/libcriu-version.c) rather than start a `criu
// swrk` for the question. A `criu` first on crun's PATH records each
// start; the restore below, of a checkpoint that is not there, gets past
// the version check (its error is about the missing directory, which
// crun opens after it) without one.
func TestTheCheckpointToolsAnswerCRIUsVersionWithoutStartingCRIU(t *testing.T) {
	_, b := reattachBackends(t)
	requireCheckpoints(t, b)
	dir := t.TempDir()
	calls := filepath.Join(dir, "criu-calls")
	fake := filepath.Join(dir, "path")
	if err := os.Mkdir(fake, 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\necho \"$@\" >> %s\nexec %s \"$@\"\n", calls, filepath.Join(b.tools.dir, "bin", "criu"))
	if err := os.WriteFile(filepath.Join(fake, "criu"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(dir, "bundle")
	if err := os.MkdirAll(filepath.Join(bundle, "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	config := `{"ociVersion":"1.0.2","root":{"path":"rootfs"},"process":{"args":["true"],"cwd":"/"},"mounts":[],"linux":{"namespaces":[{"type":"mount"}]}}`
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "no-checkpoint")
	cmd := exec.Command(b.tools.crun(), "--root", filepath.Join(dir, "state"), "restore", "--bundle", bundle, "--image-path", missing, "mcr-version-test")
	cmd.Env = append(b.tools.env(), "PATH="+fake+":"+filepath.Join(b.tools.dir, "bin")+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "error opening checkpoint directory `"+missing+"`") {
		t.Fatalf("crun restore of a missing checkpoint: %v: %s (want it past the version check, at the missing directory)", err, out)
	}
	if started, err := os.ReadFile(calls); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("crun started criu to learn its version: %q (%v)", started, err)
	}
}

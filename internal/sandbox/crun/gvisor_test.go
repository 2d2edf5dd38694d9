//go:build linux && !fast

package crun_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/crun"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// newGVisorBackend is newBackend with gVisor's runsc (testutil.Runsc).
func newGVisorBackend(t *testing.T) (*crun.Backend, string) {
	t.Helper()
	return newBackendWith(t, testutil.Runsc(t))
}

func gvisorTemplate(t *testing.T) sandbox.Template {
	return sandbox.Template{Image: languages.Builtin().ImageOf(mustLookup(t, "bash")).Tag, MaxLife: time.Minute,
		Resources: sandbox.Resources{MemoryMB: 128, CPUs: 1, PidsLimit: 64, WorkspaceMB: 4, TmpMB: 4, NoFile: 64, FileSizeMB: 1},
		Isolation: sandbox.IsolationGVisor}
}

func runScript(ctx context.Context, t *testing.T, sb sandbox.Sandbox, script string, session bool) (stdout, stderr string) {
	t.Helper()
	job := sandbox.Job{Deadline: time.Minute, Request: wire.Request{Workdir: wire.WorkspacePath, OutputLimit: 1 << 16, Session: session,
		Files:  []wire.File{{Path: "main.sh", Data: []byte(script)}},
		Stages: []wire.Stage{{Name: "run", Argv: []string{"bash", "main.sh"}, TimeoutMs: 60_000}}}}
	var res *sandbox.Result
	var err error
	if session {
		res, err = sb.Call(ctx, job, nil)
	} else {
		res, err = sb.Exec(ctx, job, nil)
	}
	if err != nil || len(res.Stages) != 1 {
		t.Fatalf("want one stage, got %+v, %v", res, err)
	}
	return string(res.Stages[0].Stdout), string(res.Stages[0].Stderr)
}

// A sandbox of isolation gvisor runs its programs on gVisor's kernel, not
// the host's: uname and /proc/version say so, and the host kernel's own
// interfaces are absent.
func TestAGVisorSandboxRunsOnGVisorsKernel(t *testing.T) {
	b, state := newGVisorBackend(t)
	ctx := context.Background()
	sb, err := b.Create(ctx, gvisorTemplate(t))
	if err != nil {
		t.Fatal(err)
	}
	out, errOut := runScript(ctx, t, sb, "uname -r; cat /proc/version; id -u; echo \"interfaces: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ' ')\"; "+
		"awk '$2 == \"/\" {print \"root \" $4}' /proc/mounts; "+
		"for f in /proc/kallsyms /sys/kernel/debug /proc/sys/kernel/core_pattern /dev/kmsg; do [ -e $f ] && echo \"present $f\"; done; true", false)
	sb.Close()
	host, _ := os.ReadFile("/proc/version")
	t.Logf("gVisor sandbox said:\n%s%s", out, errOut)
	if !strings.Contains(out, "gvisor") {
		t.Errorf("uname and /proc/version in a gVisor sandbox do not name gVisor: %q (stderr %q)", out, errOut)
	}
	if strings.Contains(out, strings.TrimSpace(string(host))) {
		t.Errorf("the sandbox sees the host's kernel %q", host)
	}
	if !strings.Contains(out, fmt.Sprintf("\n%d\n", wire.SandboxUID)) {
		t.Errorf("the program does not run as the sandbox's user %d: %q", wire.SandboxUID, out)
	}
	if !strings.Contains(out, "\ninterfaces: lo \n") {
		t.Errorf("the sandbox has network interfaces beside loopback: %q", out)
	}
	if !strings.Contains(out, "\nroot ro,") && !strings.Contains(out, "\nroot ro\n") {
		t.Errorf("the root file system is not mounted read-only under gVisor: %q", out)
	}
	if strings.Contains(out, "present /proc/kallsyms") || strings.Contains(out, "present /sys/kernel/debug") {
		t.Errorf("host kernel interfaces are present under gVisor: %q", out)
	}
	requireNoLeftovers(t, b, state)
}

// A gVisor sandbox with network access reaches its own proxy through its
// agent's relay, and nothing else: runsc's --host-uds=open lets it connect
// to the one host socket it is shown.
func TestAGVisorSandboxWithNetworkAccessReachesOnlyItsOwnProxy(t *testing.T) {
	b, state := newGVisorBackend(t)
	ctx := context.Background()
	tmpl := gvisorTemplate(t)
	tmpl.Egress = greetingEgress{}
	sb, err := b.Create(ctx, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	out, errOut := runScript(ctx, t, sb, "exec 3<>/dev/tcp/"+strings.Replace(wire.EgressListen, ":", "/", 1)+" && head -1 <&3\n"+
		"echo \"interfaces: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ' ')\"\n", false)
	sb.Close()
	if want := "proxy here\ninterfaces: lo \n"; out != want {
		t.Errorf("the sandbox printed %q (stderr %q), want %q", out, errOut, want)
	}
	requireNoLeftovers(t, b, state)
}

// A session's gVisor sandbox keeps its files from call to call; it ends
// with its server (it cannot be re-attached to: the host cannot tell its
// agent's connection from another program's, since gVisor's gofer makes
// them all), and the next server replays the session.
func TestAGVisorSessionSandboxKeepsItsFilesAcrossCalls(t *testing.T) {
	b, state := newGVisorBackend(t)
	ctx := context.Background()
	tmpl := gvisorTemplate(t)
	tmpl.ReattachGrace = 10 * time.Second
	sb, err := b.Create(ctx, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if ref, ok := b.RefOf(sb); ok {
		t.Errorf("a session's gVisor sandbox can be re-attached to (%+v): its agent's socket would take any program's connection", ref)
	}
	runScript(ctx, t, sb, "echo kept > note.txt", true)
	if out, errOut := runScript(ctx, t, sb, "cat note.txt; uname -r", true); !strings.HasPrefix(out, "kept\n") || !strings.Contains(out, "gvisor") {
		t.Errorf("second call printed %q (stderr %q), want the file kept, on gVisor", out, errOut)
	}
	sb.Close()
	requireNoLeftovers(t, b, state)
}

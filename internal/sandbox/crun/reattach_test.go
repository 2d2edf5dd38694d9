//go:build linux && !fast

package crun

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/agentconn"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// reattachBackends returns a backend of a server that is gone (as the
// sweep test's) and one of this process, on one state directory.
func reattachBackends(t *testing.T) (gone, live *Backend) {
	t.Helper()
	cli := testutil.RequireDocker(t)
	state := filepath.Join("/run", fmt.Sprintf("mcr-crun-reattach-test-%d", os.Getpid()))
	t.Cleanup(func() { _ = os.RemoveAll(state) })
	agent := testutil.AgentBinary(t)
	opts := Options{AgentPath: agent, StateDir: state}
	if filepath.Base(agent) == testutil.AgentName { // as serve: the standalone agent is CRIU's tar
		opts.CRIUTar = agent
	}
	mk := func() *Backend {
		b, err := New(cli, opts)
		if err == nil {
			err = b.Check(context.Background())
		}
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("the crun backend is required under CI=true: %v", err)
			}
			t.Skipf("crun backend unavailable: %v", err)
		}
		return b
	}
	gone, live = mk(), mk()
	t.Cleanup(func() { _ = live.Close() })
	gone.owner = sandbox.Owner{ID: "gone", Host: live.owner.Host, PID: 1, Start: "gone"}
	gone.roots = newImageRoots(filepath.Join(state, "rootfs", gone.owner.NameFields()+"-1"))
	// The gone server's image roots are unmounted as its own Close would
	// (it shares live's Docker client, which live closes): left mounted,
	// they kept the state directory, and each run left two mounts on the
	// host.
	t.Cleanup(func() {
		if err := gone.roots.close(); err != nil {
			t.Errorf("unmounting the gone server's image roots: %v", err)
		}
	})
	return gone, live
}

func sessionTemplate(t *testing.T) sandbox.Template {
	reg := languages.Builtin()
	return sandbox.Template{Image: reg.ImageOf(mustLang(t, reg, "bash")).Tag, MaxLife: 5 * time.Minute, ReattachGrace: time.Minute,
		Resources: sandbox.Resources{MemoryMB: 64, CPUs: 1, PidsLimit: 64, WorkspaceMB: 1, TmpMB: 1, NoFile: 64, FileSizeMB: 1}}
}

func bashJob(script string) sandbox.Job {
	return sandbox.Job{Deadline: 30 * time.Second, Request: wire.Request{Workdir: wire.WorkspacePath, OutputLimit: 4096, Session: true,
		Files:  []wire.File{{Path: "main.sh", Data: []byte(script)}},
		Stages: []wire.Stage{{Name: "run", Argv: []string{"bash", "main.sh"}, TimeoutMs: 120_000}}}}
}

// disconnect drops sb's connection to its agent as a killed server's
// does, leaving the sandbox running.
func disconnect(sb sandbox.Sandbox) {
	_ = sb.(*agentconn.Sandbox).Link().(*link).conn.Close()
}

// TestReattachFindsACrunSandboxAsItsServerLeftIt: a session's sandbox of a
// server that is gone keeps running with its workspace; the sweep keeps it
// while a live session's record names it; a new server re-attaches to it,
// after which no sweep takes it (it is the new server's); closing it
// removes everything, its socket directory included.
func TestReattachFindsACrunSandboxAsItsServerLeftIt(t *testing.T) {
	gone, live := reattachBackends(t)
	ctx := context.Background()
	sb, err := gone.Create(ctx, sessionTemplate(t))
	if err != nil {
		t.Fatal(err)
	}
	res, err := sb.Call(ctx, bashJob("echo still here > kept.txt"), nil)
	if err != nil || res.Incomplete || res.AgentError != "" {
		t.Fatalf("first call: %+v, %v", res, err)
	}
	ref, ok := gone.RefOf(sb)
	if !ok {
		t.Fatal("a sandbox created with a ReattachGrace should be re-attachable")
	}
	disconnect(sb) // its server is killed

	live.SetKeep(sandbox.Keep{Sandboxes: func(context.Context) ([]sandbox.Ref, error) { return []sandbox.Ref{ref}, nil }})
	if n, err := live.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("the sweep removed %d (%v) though a live session's record names the sandbox", n, err)
	}
	again, err := live.Reattach(ctx, ref)
	if err != nil {
		t.Fatalf("re-attaching: %v", err)
	}
	res, err = again.Call(ctx, bashJob("cat kept.txt"), nil)
	if err != nil || len(res.Stages) != 1 {
		t.Fatalf("after re-attaching: %+v, %v", res, err)
	}
	if out := string(res.Stages[0].Stdout); out != "still here\n" {
		t.Errorf("the workspace after re-attaching: %q", out)
	}
	// The record no longer names it (say the store lost it): it is this
	// server's now, which its owner file tells any server's sweep.
	live.SetKeep(sandbox.Keep{})
	live.adoptedIDs.Clear()
	if n, err := live.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("the sweep removed %d (%v) sandboxes though this server re-attached to its one", n, err)
	}
	again.Close()
	select {
	case <-again.Ended():
	case <-time.After(10 * time.Second):
		t.Error("the sandbox still runs after Close")
	}
	for _, p := range []string{ref.SocketDir, filepath.Join(live.bundlesDir(), ref.ID)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s remains after Close: %v", p, err)
		}
	}
}

// TestTheSweepRemovesAGoneServersSessionSandboxNoRecordNames: a session's
// sandbox whose server is gone and which no live session's record names is
// swept like any other, its socket directory with it.
func TestTheSweepRemovesAGoneServersSessionSandboxNoRecordNames(t *testing.T) {
	gone, live := reattachBackends(t)
	ctx := context.Background()
	sb, err := gone.Create(ctx, sessionTemplate(t))
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := gone.RefOf(sb)
	disconnect(sb)
	live.SetKeep(sandbox.Keep{Sandboxes: func(context.Context) ([]sandbox.Ref, error) { return nil, nil }})
	if n, err := live.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("the sweep removed %d (%v), want the gone server's session sandbox", n, err)
	}
	select {
	case <-sb.Ended():
	case <-time.After(10 * time.Second):
		t.Error("the swept sandbox still runs")
	}
	if _, err := os.Stat(ref.SocketDir); !os.IsNotExist(err) {
		t.Errorf("the swept sandbox's socket directory remains: %v", err)
	}
	if _, err := live.Reattach(ctx, ref); err == nil {
		t.Error("re-attached to a swept sandbox")
	}
}

// TestTheSweepLeavesAGoneServersSessionSandboxOfAnotherStoreToItsExpiry:
// servers on different state stores share one host's crun state; a
// session's sandbox whose server is gone is swept only by a server on the
// store that records its session (and which no longer names it), never by
// one on another store or on none, which cannot tell whether a session
// still owns it.
func TestTheSweepLeavesAGoneServersSessionSandboxOfAnotherStoreToItsExpiry(t *testing.T) {
	gone, live := reattachBackends(t)
	ctx := context.Background()
	gone.SetKeep(sandbox.Keep{Store: "store-a"})
	sb, err := gone.Create(ctx, sessionTemplate(t))
	if err != nil {
		t.Fatal(err)
	}
	disconnect(sb)
	none := func(context.Context) ([]sandbox.Ref, error) { return nil, nil }
	for _, tt := range []struct {
		sweeper string
		keep    sandbox.Keep
		removed int
	}{
		{"a server on another store", sandbox.Keep{Store: "store-b", Sandboxes: none}, 0},
		{"a server on no store", sandbox.Keep{}, 0},
		{"a server on the session's store, which no longer names it", sandbox.Keep{Store: "store-a", Sandboxes: none}, 1},
	} {
		live.SetKeep(tt.keep)
		if n, err := live.Sweep(ctx); err != nil || n != tt.removed {
			t.Fatalf("%s swept %d (%v), want %d", tt.sweeper, n, err, tt.removed)
		}
	}
	select {
	case <-sb.Ended():
	case <-time.After(10 * time.Second):
		t.Error("the swept sandbox still runs")
	}
}

// TestTheAgentSocketTakesOnlyTheSandboxsInit: a connection from any other
// process is closed and the wait goes on.
func TestTheAgentSocketTakesOnlyTheSandboxsInit(t *testing.T) {
	dir := t.TempDir()
	ln, err := listenIn(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("unix", filepath.Join(dir, agentSocketName))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// This process is not PID 1 (the init it waits for here).
	if conn, err := acceptAgent(ln, 1, time.Now().Add(500*time.Millisecond), slog.New(slog.DiscardHandler), "test"); err == nil {
		conn.Close()
		t.Fatal("took a connection from a process that is not the sandbox's init")
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("the refused connection is still open")
	}
}

func TestAReattachRefusesARefThatNamesAnotherDirectory(t *testing.T) {
	tests := []struct {
		name string
		ref  sandbox.Ref
	}{
		{"not a sandbox name", sandbox.Ref{ID: "../etc", SocketDir: agentBase + "/etc"}},
		{"another directory", sandbox.Ref{ID: "mcr-1-2-h-3-abcdef012345", SocketDir: "/tmp"}},
		{"another sandbox's directory", sandbox.Ref{ID: "mcr-1-2-h-3-abcdef012345", SocketDir: agentBase + "/000000000000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkRef(tt.ref); err == nil {
				t.Errorf("%+v accepted", tt.ref)
			}
		})
	}
	if err := checkRef(sandbox.Ref{ID: "mcr-1-2-h-3-abcdef012345", SocketDir: agentBase + "/abcdef012345"}); err != nil {
		t.Errorf("a sandbox's own reference refused: %v", err)
	}
}

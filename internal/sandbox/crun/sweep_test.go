//go:build linux && !fast

package crun

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// TestSweepRemovesWhatAGoneServerLeft starts a sandbox as a server that is
// gone (PID 1 with a start time it never had) would have, and one of this
// process; the sweep removes the first (its container, its processes, its
// bundle, its image root), RemoveOwn the second and not a third made for
// another server of this process (whose RemoveOwn removes it), and Close
// unmounts.
func TestSweepRemovesWhatAGoneServerLeft(t *testing.T) {
	cli := testutil.RequireDocker(t)
	state := filepath.Join("/run", fmt.Sprintf("mcr-crun-sweep-test-%d", os.Getpid()))
	defer os.RemoveAll(state)
	mk := func() *Backend {
		b, err := New(cli, Options{AgentPath: testutil.AgentBinary(t), StateDir: state})
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
	gone, live := mk(), mk()
	defer live.Close()
	// PID 1 runs, but no process ever started at tick "gone".
	gone.owner = sandbox.Owner{ID: "gone", Host: live.owner.Host, PID: 1, Start: "gone"}
	goneRoots := gone.owner.NameFields() + "-1"
	gone.roots = newImageRoots(filepath.Join(state, "rootfs", goneRoots))
	reg := languages.Builtin()
	tmpl := sandbox.Template{Image: reg.ImageOf(mustLang(t, reg, "bash")).Tag, MaxLife: time.Minute,
		Resources: sandbox.Resources{MemoryMB: 64, CPUs: 1, PidsLimit: 64, WorkspaceMB: 1, TmpMB: 1, NoFile: 64, FileSizeMB: 1}}
	ctx := context.Background()
	orphan, err := gone.Create(ctx, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	if err := orphan.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	own, err := live.Create(ctx, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	if err := own.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	// Another server of this process, on the same backend.
	siblingTmpl := tmpl
	siblingTmpl.Instance = "sibling"
	sibling, err := live.Create(ctx, siblingTmpl)
	if err != nil {
		t.Fatal(err)
	}
	if err := sibling.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := live.Sweep(ctx); err != nil || n != 1 {
		t.Errorf("sweep removed %d (%v), want the gone server's 1", n, err)
	}
	select {
	case <-orphan.Ended():
	case <-time.After(10 * time.Second):
		t.Error("the gone server's sandbox still runs after the sweep")
	}
	if _, err := os.Stat(filepath.Join(state, "rootfs", goneRoots)); !os.IsNotExist(err) {
		t.Errorf("the gone server's image roots remain: %v", err)
	}
	if n, err := live.RemoveOwn(ctx, ""); err != nil || n != 1 {
		t.Errorf("RemoveOwn removed %d (%v), want this server's 1", n, err)
	}
	select {
	case <-own.Ended():
	case <-time.After(10 * time.Second):
		t.Error("this server's sandbox still runs after RemoveOwn")
	}
	select {
	case <-sibling.Ended():
		t.Error("RemoveOwn removed the sandbox of another server of this process")
	default:
	}
	if n, err := live.RemoveOwn(ctx, "sibling"); err != nil || n != 1 {
		t.Errorf("RemoveOwn of the other server removed %d (%v), want its 1", n, err)
	}
	out, _ := exec.Command(live.crun, "--root", live.crunRoot(), "list", "--quiet").CombinedOutput()
	entries, _ := os.ReadDir(live.bundlesDir())
	if len(strings.Fields(string(out))) != 0 || len(entries) != 0 {
		t.Errorf("left: containers %q, %d bundles", out, len(entries))
	}
	rootsDir := live.roots.dir
	live.Close()
	mounts, _ := os.ReadFile("/proc/self/mounts")
	if strings.Contains(string(mounts), state) {
		t.Errorf("an image root stays mounted after Close:\n%s", mounts)
	}
	if _, err := os.Stat(rootsDir); !os.IsNotExist(err) {
		t.Errorf("the image roots' directory remains after Close: %v", err)
	}
}

func mustLang(t *testing.T, reg *languages.Registry, name string) languages.Language {
	t.Helper()
	l, ok := reg.Lookup(name)
	if !ok {
		t.Fatalf("no language %s", name)
	}
	return l
}

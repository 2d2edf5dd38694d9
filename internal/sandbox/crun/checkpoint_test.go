//go:build linux && !fast

package crun

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

package fake_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/fake"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

func job(script string) sandbox.Job {
	return sandbox.Job{Deadline: time.Minute, Request: wire.Request{Workdir: wire.WorkspacePath, OutputLimit: 1 << 10,
		Stages: []wire.Stage{{Name: "run", Argv: []string{"bash", "-c", script}, TimeoutMs: 30_000}}}}
}

func TestASandboxRunsItsJobInItsOwnWorkspace(t *testing.T) {
	b := fake.New(t.TempDir())
	sb, err := b.Create(context.Background(), sandbox.Template{Image: "any"})
	if err != nil {
		t.Fatal(err)
	}
	dir := b.Workspace(sb.ID())
	res, err := sb.Exec(context.Background(), job("echo hi > f; pwd"), nil)
	if err != nil || len(res.Stages) != 1 || string(res.Stages[0].Stdout) != dir+"\n" {
		t.Fatalf("exec: %v %+v", err, res)
	}
	if data, err := os.ReadFile(dir + "/f"); err != nil || string(data) != "hi\n" {
		t.Errorf("workspace file: %q %v", data, err)
	}
	sb.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("workspace left after Close: %v", err)
	}
	if created, removed, live := b.Counts(); created != 1 || removed != 1 || live != 0 {
		t.Errorf("counts %d %d %d", created, removed, live)
	}
}

func TestKillEndsAnIdleSandboxAndItsProcesses(t *testing.T) {
	b := fake.New(t.TempDir())
	sb, err := b.Create(context.Background(), sandbox.Template{Image: "any"})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	b.Kill(sb.ID(), false)
	select {
	case <-sb.Ended():
	case <-time.After(10 * time.Second):
		t.Fatal("a killed sandbox did not end")
	}
	if _, err := sb.Exec(context.Background(), job("true"), nil); !errors.Is(err, sandbox.ErrDead) {
		t.Errorf("exec on a killed sandbox: %v, want ErrDead", err)
	}
}

func TestCreateFailsAsTold(t *testing.T) {
	b := fake.New(t.TempDir())
	b.MissingImages = map[string]bool{"ghost": true}
	if _, err := b.Create(context.Background(), sandbox.Template{Image: "ghost"}); !errors.Is(err, sandbox.ErrImageMissing) {
		t.Errorf("missing image: %v", err)
	}
	b.SetBeforeCreate(func(context.Context, sandbox.Template) error { return sandbox.ErrUnavailable })
	if _, err := b.Create(context.Background(), sandbox.Template{Image: "any"}); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Errorf("unavailable: %v", err)
	}
	if created, _, _ := b.Counts(); created != 0 {
		t.Errorf("%d created", created)
	}
}

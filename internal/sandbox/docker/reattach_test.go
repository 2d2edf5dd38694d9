//go:build !fast

package docker_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

func TestReattachFindsTheSandboxAsItsServerLeftIt(t *testing.T) {
	eng, b := testutil.Engine(t, nil)
	reg := languages.Builtin()
	testutil.RequireImage(t, b, reg, "python")
	tmpl := eng.Template(mustLang(t, reg, "python"))
	tmpl.ReattachGrace = time.Minute
	ctx := context.Background()
	sb, err := b.Create(ctx, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	job := func(script string) sandbox.Job {
		return sandbox.Job{Deadline: 30 * time.Second, Request: wire.Request{Workdir: wire.WorkspacePath, OutputLimit: 4096, Session: true,
			Files:  []wire.File{{Path: "main.sh", Data: []byte(script)}},
			Stages: []wire.Stage{{Name: "run", Argv: []string{"bash", "main.sh"}, TimeoutMs: 120_000}}}}
	}
	res, err := sb.Call(ctx, job("echo still here > kept.txt"), nil)
	if err != nil || res.Incomplete {
		t.Fatalf("first call: %+v, %v", res, err)
	}
	ref, ok := b.RefOf(sb)
	if !ok {
		t.Fatal("a sandbox created with a ReattachGrace should be re-attachable")
	}
	docker.Disconnect(sb) // the server is killed

	again, err := b.Reattach(ctx, ref)
	if err != nil {
		t.Fatalf("re-attaching: %v", err)
	}
	defer again.Close()
	res, err = again.Call(ctx, job("cat kept.txt"), nil)
	if err != nil || len(res.Stages) != 1 {
		t.Fatalf("after re-attaching: %+v, %v", res, err)
	}
	if out := string(res.Stages[0].Stdout); out != "still here\n" {
		t.Errorf("the workspace after re-attaching: %q", out)
	}
	again.Close()
	testutil.NoLeftovers(t, b.Client())
}

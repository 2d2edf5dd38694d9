package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAgentBeside(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "mcp-code-runner")
	agent := filepath.Join(dir, agentBinaryName)
	if err := os.WriteFile(exe, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := agentBeside(exe); got != exe {
		t.Errorf("no agent beside: got %s, want the executable itself", got)
	}
	if err := os.WriteFile(agent, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := agentBeside(exe); got != exe {
		t.Errorf("agent not executable: got %s, want the executable itself", got)
	}
	if err := os.Chmod(agent, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := agentBeside(exe); got != agent {
		t.Errorf("agent beside: got %s, want %s", got, agent)
	}
}

func TestShareAgent(t *testing.T) {
	t.Setenv("TMPDIR", os.Getenv("TMPDIR")) // restored after the test
	src := filepath.Join(t.TempDir(), agentBinaryName)
	if err := os.WriteFile(src, []byte("agent v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	shared := t.TempDir()
	got, err := shareAgent(src, shared)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(got) != shared || !strings.HasPrefix(filepath.Base(got), agentBinaryName+"-") {
		t.Fatalf("shared agent at %s, want %s/%s-HASH", got, shared, agentBinaryName)
	}
	if fi, err := os.Stat(got); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("shared agent: %v %v, want mode 0755", fi, err)
	}
	if os.TempDir() != shared {
		t.Errorf("temporary directory %s, want the shared one (agent sockets are made there)", os.TempDir())
	}
	again, err := shareAgent(src, shared)
	if err != nil || again != got {
		t.Errorf("sharing the same agent again: %s %v, want %s", again, err, got)
	}
	if err := os.WriteFile(src, []byte("agent v2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if other, _ := shareAgent(src, shared); other == got {
		t.Errorf("another agent got the same name %s", other)
	}
	if _, err := shareAgent(src, filepath.Join(shared, "missing")); err == nil || !strings.Contains(err.Error(), "same path for this server and the Docker daemon") {
		t.Errorf("missing shared directory: %v, want an error saying what it must be", err)
	}
}

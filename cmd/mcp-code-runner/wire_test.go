package main

import (
	"os"
	"path/filepath"
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

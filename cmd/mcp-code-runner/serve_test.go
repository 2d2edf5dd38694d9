package main

import (
	"strings"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
)

func TestOpenAudit(t *testing.T) {
	if l, err := openAudit("", true); l != nil || err != nil {
		t.Fatalf("no path: %v %v, want no log", l, err)
	}
	if _, err := openAudit("-", true); err == nil || !strings.Contains(err.Error(), "stdout carries the MCP messages") {
		t.Fatalf(`"-" on stdio: %v, want a refusal`, err)
	}
	if l, err := openAudit("-", false); l == nil || err != nil {
		t.Fatalf(`"-" with --http: %v %v, want stdout`, l, err)
	}
}

func TestReplicaNameIsLocalOnTheEmbeddedStoreAndUniquePerProcessOnEtcd(t *testing.T) {
	if got := replicaName(config.Config{}); got != "local" {
		t.Errorf("embedded store: replica %q, want local", got)
	}
	etcd := config.Config{Store: config.Store{Backend: config.StoreEtcd}}
	// Two processes on one host network, each PID 1 in its own namespace,
	// differ only in the random ending.
	a, b := replicaName(etcd), replicaName(etcd)
	if a == b {
		t.Errorf("two replicas of one host and PID share the name %q", a)
	}
}

package main

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// healthcheck runs `mcp-code-runner healthcheck args...` and returns its
// exit code and stderr.
func healthcheck(t *testing.T, args ...string) (int, string) {
	t.Helper()
	root := newRootCmd()
	var stderr bytes.Buffer
	root.SetErr(&stderr)
	root.SetArgs(append([]string{"healthcheck"}, args...))
	err := root.ExecuteContext(t.Context())
	var exit exitCodeError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errors.As(err, &exit):
		return int(exit), stderr.String()
	}
	return -1, err.Error()
}

func TestHealthcheckAsksTheServerOnItsSocketAndExitsOneWhenItIsNotReady(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "health.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "store: connection refused", http.StatusServiceUnavailable)
	})
	srv := &http.Server{Handler: mux}
	// Serve's error after Close is http.ErrServerClosed: nothing to report.
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	if code, out := healthcheck(t, "--socket", sock, "--live"); code != 0 {
		t.Errorf("--live on a live server: exit %d, %s", code, out)
	}
	if code, out := healthcheck(t, "--socket", sock); code != 1 || !strings.Contains(out, "503") || !strings.Contains(out, "store: connection refused") {
		t.Errorf("a server that is not ready: exit %d, want 1 with its answer; stderr %q", code, out)
	}
	if code, out := healthcheck(t, "--socket", filepath.Join(t.TempDir(), "none.sock")); code != 1 || !strings.Contains(out, "none.sock") {
		t.Errorf("no server on the socket: exit %d, want 1 naming the socket; stderr %q", code, out)
	}
	if code, out := healthcheck(t); code != -1 || !strings.Contains(out, "--socket") {
		t.Errorf("no target: want an error naming --socket, got exit %d, %q", code, out)
	}
}

package storetest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EtcdBinaryCache is where scripts/k8s/build.sh (make k8s-build, and CI
// beside its other phases) puts the etcd binary.
const EtcdBinaryCache = "/var/cache/mcp-code-runner/k8s/bin/etcd"

// EtcdBinary returns the etcd binary: MCR_ETCD_BINARY when set, else the
// one the test cluster's build made, else etcd on PATH. Without one the
// test is skipped, except under CI=true, where it fails.
func EtcdBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("MCR_ETCD_BINARY"); p != "" {
		return p
	}
	if fi, err := os.Stat(EtcdBinaryCache); err == nil && fi.Mode().IsRegular() {
		return EtcdBinaryCache
	}
	if p, err := exec.LookPath("etcd"); err == nil {
		return p
	}
	msg := "no etcd binary: run `bash scripts/k8s/build.sh etcd` (it puts one in " + EtcdBinaryCache + "), or set MCR_ETCD_BINARY"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (required under CI=true)")
	}
	t.Skip(msg)
	return ""
}

// Etcd is an etcd server that a test started on loopback.
type Etcd struct {
	// Endpoint is its client URL.
	Endpoint string
	// Log holds its output, for a failed test's message.
	Log *syncBuffer
}

// EtcdOptions are the extra flags of StartEtcd's server.
type EtcdOptions struct {
	// TLS serves the client port over TLS with these files, requiring a
	// client certificate signed by CAFile.
	CertFile, KeyFile, CAFile string
}

// StartEtcd starts an etcd of the test's own on loopback ports (free ones,
// chosen by the kernel) with a data directory in the test's temporary
// directory, waits until it reports healthy and stops it when the test
// ends.
func StartEtcd(t testing.TB, opts EtcdOptions) *Etcd {
	t.Helper()
	bin := EtcdBinary(t)
	var lastErr error
	// A port found free may be taken before etcd binds it: try again.
	for range 3 {
		e, err := startEtcd(t, bin, opts)
		if err == nil {
			return e
		}
		lastErr = err
	}
	t.Fatal(lastErr)
	return nil
}

func startEtcd(t testing.TB, bin string, opts EtcdOptions) (*Etcd, error) {
	clientPort, peerPort, err := freePorts()
	if err != nil {
		return nil, err
	}
	scheme := "http"
	if opts.CertFile != "" {
		scheme = "https"
	}
	client := fmt.Sprintf("%s://127.0.0.1:%d", scheme, clientPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	args := []string{
		"--name", "test",
		"--data-dir", filepath.Join(t.TempDir(), "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "test=" + peer,
		"--log-level", "warn",
	}
	// Health is read over plain HTTP on a port of its own, so that the
	// wait does not depend on the client port's TLS.
	metricsPort, _, err := freePorts()
	if err != nil {
		return nil, err
	}
	health := fmt.Sprintf("http://127.0.0.1:%d", metricsPort)
	args = append(args, "--listen-metrics-urls", health)
	if opts.CertFile != "" {
		args = append(args, "--cert-file", opts.CertFile, "--key-file", opts.KeyFile, "--trusted-ca-file", opts.CAFile, "--client-cert-auth")
	}
	cmd := exec.Command(bin, args...)
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			return nil, fmt.Errorf("etcd exited before it was healthy:\n%s", log.String())
		default:
		}
		if healthy(health + "/health") {
			t.Cleanup(stop)
			return &Etcd{Endpoint: client, Log: log}, nil
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("etcd not healthy after 30 s:\n%s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func healthy(url string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	return resp.StatusCode == http.StatusOK && strings.Contains(body.String(), `"health":"true"`)
}

// freePorts returns two loopback ports that were free a moment ago.
func freePorts() (int, int, error) {
	var ports [2]int
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, 0, err
		}
		defer ln.Close()
		_, p, _ := net.SplitHostPort(ln.Addr().String())
		ports[i], _ = strconv.Atoi(p)
	}
	return ports[0], ports[1], nil
}

// ClosedPort returns a loopback address where nothing listens.
func ClosedPort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// syncBuffer is a bytes.Buffer that a process writes while a test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Package etcdlocal runs an etcd server process of the caller's own on
// loopback ports: the real etcd that the store's tests and the bench use,
// with a data directory the caller owns.
package etcdlocal

import (
	"bytes"
	"context"
	"errors"
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
	"time"
)

// BinaryCache is where scripts/k8s/build.sh (make k8s-build, and CI beside
// its other phases) puts the etcd binary.
const BinaryCache = "/var/cache/mcp-code-runner/k8s/bin/etcd"

// ErrNoBinary is Binary's error when no etcd binary is found.
var ErrNoBinary = errors.New("no etcd binary: run `bash scripts/k8s/build.sh etcd` (it puts one in " + BinaryCache + "), or set MCR_ETCD_BINARY")

// Binary returns the etcd binary: MCR_ETCD_BINARY when set, else the one
// the test cluster's build made, else etcd on PATH.
func Binary() (string, error) {
	if p := os.Getenv("MCR_ETCD_BINARY"); p != "" {
		return p, nil
	}
	if fi, err := os.Stat(BinaryCache); err == nil && fi.Mode().IsRegular() {
		return BinaryCache, nil
	}
	if p, err := exec.LookPath("etcd"); err == nil {
		return p, nil
	}
	return "", ErrNoBinary
}

// Options are the extra settings of a Server.
type Options struct {
	// TLS serves the client port over TLS with these files, requiring a
	// client certificate signed by CAFile.
	CertFile, KeyFile, CAFile string
}

// Server is a running etcd.
type Server struct {
	// Endpoint is its client URL.
	Endpoint string
	bin      string
	args     []string
	health   string
	log      *Buffer
	stop     func()
}

// Log is what the server wrote so far, for an error message.
func (s *Server) Log() string { return s.log.String() }

// Stop ends the server (SIGTERM, then SIGKILL after 10 s) and waits for it.
func (s *Server) Stop() { s.stop() }

// Restart starts the stopped server again on the same ports and data, as
// an etcd that was away and came back, and waits until it is healthy.
func (s *Server) Restart() error {
	s.stop()
	stop, err := launch(s.bin, s.args, s.health, s.log)
	if err != nil {
		return err
	}
	s.stop = stop
	return nil
}

// Start starts bin with its data in dataDir on free loopback ports and
// waits until it reports healthy. A port found free may be taken before
// etcd binds it, so it tries three times.
func Start(bin, dataDir string, opts Options) (*Server, error) {
	var lastErr error
	for try := range 3 {
		s, err := start(bin, filepath.Join(dataDir, "etcd-"+strconv.Itoa(try)), opts)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func start(bin, dataDir string, opts Options) (*Server, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	scheme := "http"
	if opts.CertFile != "" {
		scheme = "https"
	}
	client := fmt.Sprintf("%s://127.0.0.1:%d", scheme, ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	// Health is read over plain HTTP on a port of its own, so that the
	// wait does not depend on the client port's TLS.
	health := fmt.Sprintf("http://127.0.0.1:%d", ports[2])
	args := []string{
		"--name", "local",
		"--data-dir", dataDir,
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "local=" + peer,
		"--listen-metrics-urls", health,
		"--log-level", "warn",
	}
	if opts.CertFile != "" {
		args = append(args, "--cert-file", opts.CertFile, "--key-file", opts.KeyFile, "--trusted-ca-file", opts.CAFile, "--client-cert-auth")
	}
	log := &Buffer{}
	stop, err := launch(bin, args, health, log)
	if err != nil {
		return nil, err
	}
	return &Server{Endpoint: client, bin: bin, args: args, health: health, log: log, stop: stop}, nil
}

// launch runs bin with args, writing its output to log, and waits until
// health reports it healthy; the function it returns stops it.
func launch(bin string, args []string, health string, log *Buffer) (func(), error) {
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	ownProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		})
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			return nil, fmt.Errorf("etcd exited before it was healthy:\n%s", log.String())
		default:
		}
		if healthy(health + "/health") {
			return stop, nil
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

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		_, p, _ := net.SplitHostPort(ln.Addr().String())
		ports[i], _ = strconv.Atoi(p)
	}
	return ports, nil
}

// Buffer is a bytes.Buffer that a process writes while another goroutine
// reads it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

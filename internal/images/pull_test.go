package images

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// The daemon's texts below are as Docker Engine reports them (HTTP 500 for
// network failures, or a message in the pull's progress stream).
func TestPullFailuresAreClassifiedByErrdefsThenByTheDaemonsText(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want PullCause
	}{
		{"a pull that made no progress", fmt.Errorf("pulling: %w", errNoProgress), PullNoProgress},
		{"an unauthorized status", cerrdefs.ErrUnauthenticated.WithMessage("Error response from daemon: Head: unauthorized"), PullUnauthorized},
		{"a not-found status", cerrdefs.ErrNotFound.WithMessage("Error response from daemon: manifest for debian:nope not found: manifest unknown"), PullNotFound},
		{"a too-many-requests status", cerrdefs.ErrResourceExhausted.WithMessage("Error response from daemon: slow down"), PullRateLimited},
		{"an unknown registry name", errors.New(`Error response from daemon: Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io on 10.0.0.2:53: no such host`), PullDNS},
		{"a resolver that failed", errors.New(`Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io: Temporary failure in name resolution`), PullDNS},
		{"a resolver that misbehaves", errors.New(`dial tcp: lookup registry-1.docker.io on 127.0.0.53:53: server misbehaving`), PullDNS},
		{"a resolver that timed out", errors.New(`dial tcp: lookup registry-1.docker.io on 10.0.0.2:53: read udp 10.0.0.5:40000->10.0.0.2:53: i/o timeout`), PullDNS},
		{"a refused connection", errors.New(`Error response from daemon: Get "http://127.0.0.1:42775/v2/": dial tcp 127.0.0.1:42775: connect: connection refused`), PullRefused},
		{"a proxy that refuses", errors.New(`Get "https://registry-1.docker.io/v2/": proxyconnect tcp: dial tcp 10.0.0.1:3128: connect: connection refused`), PullRefused},
		{"a refused connection on Windows", errors.New(`connectex: No connection could be made because the target machine actively refused it`), PullRefused},
		{"no route", errors.New(`dial tcp 10.1.2.3:443: connect: no route to host`), PullUnreachable},
		{"no network", errors.New(`dial tcp [2600::1]:443: connect: network is unreachable`), PullUnreachable},
		{"a connection that timed out", errors.New(`Get "https://10.1.2.3/v2/": dial tcp 10.1.2.3:443: i/o timeout`), PullTimeout},
		{"a client timeout", errors.New(`Get "https://registry-1.docker.io/v2/": net/http: request canceled while waiting for connection (Client.Timeout exceeded while awaiting headers)`), PullTimeout},
		{"a TLS handshake that timed out", errors.New(`Get "https://registry-1.docker.io/v2/": net/http: TLS handshake timeout`), PullTimeout},
		{"an untrusted certificate", errors.New(`Get "https://mirror.example/v2/": x509: certificate signed by unknown authority`), PullTLS},
		{"a registry without TLS", errors.New(`Get "https://mirror.example:5000/v2/": http: server gave HTTP response to HTTPS client`), PullTLS},
		{"credentials wanted, in the stream", errors.New(`unauthorized: authentication required`), PullUnauthorized},
		{"access denied", errors.New(`pull access denied for private/debian, repository does not exist or may require 'docker login': denied: requested access to the resource is denied`), PullUnauthorized},
		{"a rate limit, in the stream", errors.New(`toomanyrequests: You have reached your pull rate limit`), PullRateLimited},
		{"an unknown manifest, in the stream", errors.New(`manifest unknown: manifest unknown`), PullNotFound},
		{"an unknown repository", errors.New(`name unknown: repository name not known to registry`), PullNotFound},
		{"a full disk", errors.New(`write /var/lib/docker/tmp/GetImageBlob1: no space left on device`), PullFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := classifyPull(c.err); got != c.want {
				t.Errorf("classifyPull(%q) = %v, want %v", c.err, got, c.want)
			}
		})
	}
}

func TestPullErrorNamesTheDaemonTheRegistryTheCauseAndTheFixes(t *testing.T) {
	refused := errors.New("dial tcp 10.9.8.7:443: connect: connection refused")
	for _, c := range []struct {
		name   string
		err    PullError
		want   []string
		absent []string
	}{
		{"a remote daemon without the registry",
			PullError{Ref: PullRef, Registry: "docker.io", Daemon: "tcp://10.0.0.5:2376", Cause: PullRefused, Err: refused},
			[]string{"the Docker daemon at tcp://10.0.0.5:2376", "its own network", "could not pull debian:trixie-slim from the registry docker.io",
				"could not reach the registry: the connection was refused", "connection refused", "give the daemon access to docker.io",
				"root_image (--root-image, MCR_ROOT_IMAGE)", "debootstrap", "as root", "docker save mcp-code-runner/debian:trixie", "docker load"},
			[]string{"on this machine)"}},
		{"a local daemon whose registry name does not resolve",
			PullError{Ref: "mirror.example/library/debian:trixie-slim", Registry: "mirror.example", Daemon: "unix:///var/run/docker.sock", Cause: PullDNS, Err: errors.New("no such host")},
			[]string{"unix:///var/run/docker.sock (on this machine)", "registry mirror.example", "could not resolve its name (DNS)", "give the daemon access to mirror.example"},
			nil},
		{"a registry that wants credentials",
			PullError{Ref: "mirror.example/library/debian:trixie-slim", Registry: "mirror.example", Daemon: "unix:///run/docker.sock", Cause: PullUnauthorized, Err: errors.New("unauthorized")},
			[]string{"refused to serve the image without credentials", "docker login mirror.example && docker pull mirror.example/library/debian:trixie-slim", "debootstrap", "docker save"},
			[]string{"could not reach"}},
		{"a registry without the image",
			PullError{Ref: "mirror.example/debian:trixie-slim", Registry: "mirror.example", Daemon: "unix:///run/docker.sock", Cause: PullNotFound, Err: errors.New("manifest unknown")},
			[]string{"has no such image", "MIRROR/library/debian:trixie-slim", "debootstrap", "docker save"},
			[]string{"could not reach"}},
		{"a registry with an untrusted certificate",
			PullError{Ref: "mirror.example:5000/library/debian:trixie-slim", Registry: "mirror.example:5000", Daemon: "tcp://build.example:2376", Cause: PullTLS, Err: errors.New("x509: certificate signed by unknown authority")},
			[]string{"/etc/docker/certs.d/mirror.example:5000/ca.crt", "insecure-registries", "x509"},
			nil},
		{"a daemon that does not answer",
			PullError{Ref: PullRef, Registry: "docker.io", Daemon: "tcp://10.0.0.5:2376", Cause: PullDaemonUnreachable, Err: errors.New("Cannot connect to the Docker daemon")},
			[]string{"tcp://10.0.0.5:2376", "did not answer this program", "--docker-host"},
			[]string{"debootstrap", "docker save"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			msg := c.err.Error()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("the message lacks %q:\n%s", w, msg)
				}
			}
			for _, a := range c.absent {
				if strings.Contains(msg, a) {
					t.Errorf("the message says %q, which does not fit:\n%s", a, msg)
				}
			}
		})
	}
}

func TestRegistryHostIsTheDaemonsReadingOfTheReference(t *testing.T) {
	for _, c := range []struct{ ref, want string }{
		{"debian:trixie-slim", "docker.io"},
		{"library/debian:trixie-slim", "docker.io"},
		{"mirror.example/library/debian:trixie-slim", "mirror.example"},
		{"127.0.0.1:5000/library/debian:trixie-slim", "127.0.0.1:5000"},
		{"localhost/debian:trixie-slim", "localhost"},
		{"[::1]:5000/debian:trixie-slim", "[::1]:5000"},
	} {
		t.Run(c.ref, func(t *testing.T) {
			got, err := RegistryHost(c.ref)
			if err != nil || got != c.want {
				t.Errorf("RegistryHost(%q) = %q, %v; want %q", c.ref, got, err, c.want)
			}
		})
	}
}

func TestRootImageSettingMustNameATagOrDigest(t *testing.T) {
	for _, c := range []struct {
		ref  string
		want string // "" for accepted
	}{
		{"debian:trixie-slim", ""},
		{"mirror.example/library/debian:trixie-slim", ""},
		{"mirror.example/library/debian@sha256:" + strings.Repeat("a", 64), ""},
		{"mirror.example/library/debian", "names no tag: add the Debian trixie tag, e.g. mirror.example/library/debian:trixie-slim"},
		{"Mirror.Example/Debian:trixie", "want an image reference such as mirror.example/library/debian:trixie-slim"},
		{"debian:trixie slim", "want an image reference"},
	} {
		t.Run(c.ref, func(t *testing.T) {
			err := CheckRootImage(c.ref)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "MCR_ROOT_IMAGE")):
				t.Errorf("got %v, want an error naming the setting and containing %q", err, c.want)
			}
		})
	}
}

func TestRootErrorCarriesBothFailuresReadably(t *testing.T) {
	pullErr := &PullError{Ref: PullRef, Registry: "docker.io", Daemon: "tcp://10.0.0.5:2376", Cause: PullTimeout, Err: errors.New("i/o timeout")}
	bootErr := errors.New("debootstrap is not installed: install it with `apt-get install -y debootstrap`")
	err := error(&RootError{Pull: pullErr, Bootstrap: bootErr})
	msg := err.Error()
	lines := strings.Split(msg, "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "  1. pulling: the Docker daemon at tcp://10.0.0.5:2376") ||
		!strings.HasPrefix(lines[2], "  2. bootstrapping with debootstrap on this machine: debootstrap is not installed") {
		t.Errorf("the message is not the two failures, one a line:\n%s", msg)
	}
	var pe *PullError
	if !errors.As(err, &pe) || pe.Cause != PullTimeout || !errors.Is(err, bootErr) {
		t.Errorf("errors.As/Is do not find both failures in %v", err)
	}
}

// TestPullFromADaemonThatDoesNotAnswer pulls through a socket nothing
// listens on: the failure is the daemon's, not the registry's.
func TestPullFromADaemonThatDoesNotAnswer(t *testing.T) {
	sock := "unix://" + filepath.Join(t.TempDir(), "none.sock")
	cli, err := client.New(client.WithHost(sock))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	err = Pull(context.Background(), cli, PullRef, ocispec.Platform{})
	var pe *PullError
	if !errors.As(err, &pe) || pe.Cause != PullDaemonUnreachable || !strings.Contains(err.Error(), sock) {
		t.Fatalf("got %v, want a PullError naming %s that says the daemon did not answer", err, sock)
	}
}

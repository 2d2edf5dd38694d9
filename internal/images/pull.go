package images

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// RootImageSetting names the setting that replaces PullRef, in the config
// file, on the command line and in the environment, for messages.
const RootImageSetting = "root_image (--root-image, MCR_ROOT_IMAGE)"

// PullCause is why the daemon could not pull an image.
type PullCause int

// The causes a pull failure is classified into, from the error's errdefs
// class where the daemon gives one and from the daemon's text otherwise.
const (
	// PullFailed is a failure of no known kind; the daemon's text says more.
	PullFailed PullCause = iota
	// PullDaemonUnreachable: this program could not reach the daemon itself.
	PullDaemonUnreachable
	// PullDNS: the daemon could not resolve the registry's name.
	PullDNS
	// PullRefused: the registry's address refused the daemon's connection.
	PullRefused
	// PullUnreachable: the daemon has no route to the registry's address.
	PullUnreachable
	// PullTimeout: the daemon's connection to the registry timed out.
	PullTimeout
	// PullNoProgress: the daemon reported nothing for pullIdleTimeout.
	PullNoProgress
	// PullTLS: the daemon does not trust the registry's certificate, or
	// the registry does not speak TLS.
	PullTLS
	// PullUnauthorized: the registry wants credentials.
	PullUnauthorized
	// PullNotFound: the registry has no such repository or tag.
	PullNotFound
	// PullRateLimited: the registry refused more anonymous pulls for now.
	PullRateLimited
)

// String is the cause's name, for logs and tests.
func (c PullCause) String() string {
	names := [...]string{"failed", "daemon unreachable", "DNS", "refused", "unreachable", "timeout", "no progress", "TLS", "unauthorized", "not found", "rate limited"}
	if int(c) < len(names) {
		return names[c]
	}
	return fmt.Sprintf("PullCause(%d)", int(c))
}

// describe says what happened, in words that follow "it" (the daemon).
func (c PullCause) describe() string {
	switch c {
	case PullDaemonUnreachable:
		return "did not answer this program, so nothing reached the registry"
	case PullDNS:
		return "could not reach the registry: the daemon could not resolve its name (DNS)"
	case PullRefused:
		return "could not reach the registry: the connection was refused"
	case PullUnreachable:
		return "could not reach the registry: no route to its address"
	case PullTimeout:
		return "could not reach the registry: the connection timed out"
	case PullNoProgress:
		return fmt.Sprintf("could not reach the registry: the pull made no progress for %v", pullIdleTimeout)
	case PullTLS:
		return "could not reach the registry over TLS: the daemon does not trust its certificate, or the registry does not speak HTTPS"
	case PullUnauthorized:
		return "reached the registry, which refused to serve the image without credentials"
	case PullNotFound:
		return "reached the registry, which has no such image"
	case PullRateLimited:
		return "reached the registry, which refused the pull: its rate limit for this address is spent"
	default:
		return "could not pull the image"
	}
}

// errNoProgress ends a pull whose daemon reported nothing for
// pullIdleTimeout.
var errNoProgress = fmt.Errorf("no progress for %v", pullIdleTimeout)

// PullError is a failed pull of the root image, with the daemon that
// pulled, the registry it pulled from, why it failed and what to do.
type PullError struct {
	// Ref is the image asked for ("debian:trixie-slim").
	Ref string
	// Registry is the registry host of Ref ("docker.io").
	Registry string
	// Daemon is the daemon's address as this program's client sees it
	// ("unix:///var/run/docker.sock", "tcp://10.0.0.5:2376").
	Daemon string
	// Cause is the kind of failure.
	Cause PullCause
	// Err is the error the client or the daemon gave.
	Err error
}

func (e *PullError) Unwrap() error { return e.Err }

func (e *PullError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s could not pull %s from the registry %s: it %s (%v)", describeDaemon(e.Daemon), e.Ref, e.Registry, e.Cause.describe(), e.Err)
	if e.Cause == PullDaemonUnreachable {
		b.WriteString(". Start the daemon, or point --docker-host (DOCKER_HOST) at one that runs, then retry")
		return b.String()
	}
	b.WriteString(". To fix it, any of: ")
	switch e.Cause {
	case PullUnauthorized, PullRateLimited:
		fmt.Fprintf(&b, "pull it once with credentials (`docker login %s && docker pull %s`, against the same daemon; images build then uses the local copy), or set %s to the image on a registry mirror that allows anonymous pulls; ", e.Registry, e.Ref, RootImageSetting)
	case PullNotFound:
		fmt.Fprintf(&b, "set %s to an image the registry has, with its tag (a mirror of Docker Hub usually keeps official images under library/, e.g. MIRROR/library/%s); ", RootImageSetting, PullRef)
	case PullTLS:
		fmt.Fprintf(&b, "give the daemon the registry's CA certificate (/etc/docker/certs.d/%s/ca.crt on the daemon's machine) or list the registry in the daemon's insecure-registries, or set %s to a mirror the daemon trusts; ", e.Registry, RootImageSetting)
	default:
		fmt.Fprintf(&b, "give the daemon access to %s (network, DNS or HTTPS_PROXY on the daemon's machine), or set %s to the same image on a registry mirror the daemon reaches (e.g. mirror.example/library/%s); ", e.Registry, RootImageSetting, PullRef)
	}
	fmt.Fprintf(&b, "or let the debootstrap fallback make it (run `mcp-code-runner images build` as root on a Debian or Ubuntu machine with debootstrap installed, against the same daemon); "+
		"or copy the image from a machine that has it: `docker save %s | gzip > root.tar.gz` there, then `docker load -i root.tar.gz` against this daemon (the runtime images the same way, to skip their builds)", RootTag)
	return b.String()
}

// describeDaemon names the daemon by its address, saying whether it is on
// this machine: a remote daemon pulls over its own network, not this one's.
func describeDaemon(host string) string {
	switch {
	case host == "":
		return "the Docker daemon"
	case strings.HasPrefix(host, "unix://"), strings.HasPrefix(host, "npipe://"):
		return "the Docker daemon at " + host + " (on this machine)"
	default:
		return "the Docker daemon at " + host + " (it pulls over its own network, not this machine's)"
	}
}

// RegistryHost returns the registry host of an image reference as the
// daemon resolves it: "docker.io" for "debian:trixie-slim".
func RegistryHost(ref string) (string, error) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return "", err
	}
	return reference.Domain(named), nil
}

// CheckRootImage refuses a root image reference the daemon could not pull
// as meant: unparseable, or without a tag or digest (which would pull
// "latest", not trixie).
func CheckRootImage(ref string) error {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return fmt.Errorf("%s %q: %w; want an image reference such as mirror.example/library/%s", RootImageSetting, ref, err, PullRef)
	}
	if _, tagged := named.(reference.Tagged); !tagged {
		if _, digested := named.(reference.Digested); !digested {
			return fmt.Errorf("%s %q names no tag: add the Debian trixie tag, e.g. %s:trixie-slim", RootImageSetting, ref, reference.FamiliarName(named))
		}
	}
	return nil
}

// classifyPull tells why a pull failed: errdefs classes first, as the
// client maps the daemon's HTTP status, then the daemon's text, which is
// all there is for errors reported in the pull's progress stream and for
// the daemon's network failures (HTTP 500).
func classifyPull(err error) PullCause {
	switch {
	case errors.Is(err, errNoProgress):
		return PullNoProgress
	case client.IsErrConnectionFailed(err):
		return PullDaemonUnreachable
	case cerrdefs.IsUnauthorized(err), cerrdefs.IsPermissionDenied(err):
		return PullUnauthorized
	case cerrdefs.IsNotFound(err):
		return PullNotFound
	case cerrdefs.IsResourceExhausted(err):
		return PullRateLimited
	}
	text := strings.ToLower(err.Error())
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(text, s) {
				return true
			}
		}
		return false
	}
	switch {
	case has("no such host", "server misbehaving", "temporary failure in name resolution", "name or service not known", "dial tcp: lookup "):
		return PullDNS
	case has("connection refused", "actively refused"):
		return PullRefused
	case has("network is unreachable", "no route to host", "host is unreachable"):
		return PullUnreachable
	case has("x509:", "certificate", "tls:", "http response to https client"):
		return PullTLS
	case has("i/o timeout", "timeout exceeded", "handshake timeout", "deadline exceeded", "timed out"):
		return PullTimeout
	case has("toomanyrequests", "rate limit"):
		return PullRateLimited
	case has("unauthorized", "authentication required", "pull access denied", "denied:", "incorrect username or password"):
		return PullUnauthorized
	case has("manifest unknown", "not found", "name unknown", "repository does not exist"):
		return PullNotFound
	}
	return PullFailed
}

// Pull pulls ref for platform (zero: the daemon's own) through the daemon,
// giving up when the daemon reports nothing for pullIdleTimeout. A failure
// is a *PullError, which names the daemon and the registry, says why and
// what to do.
func Pull(ctx context.Context, cli *client.Client, ref string, platform ocispec.Platform) error {
	err := pullStream(ctx, cli, ref, platform)
	if err == nil || ctx.Err() != nil {
		return err
	}
	registry, perr := RegistryHost(ref)
	if perr != nil {
		return fmt.Errorf("pulling %s: %w", ref, perr)
	}
	return &PullError{Ref: ref, Registry: registry, Daemon: cli.DaemonHost(), Cause: classifyPull(err), Err: err}
}

// pullStream pulls ref, reading the daemon's progress until it ends;
// errNoProgress when the daemon reports nothing for pullIdleTimeout.
func pullStream(ctx context.Context, cli *client.Client, ref string, platform ocispec.Platform) error {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	idle := time.AfterFunc(pullIdleTimeout, cancel)
	defer idle.Stop()
	stalled := func(err error) error {
		if pctx.Err() != nil && ctx.Err() == nil {
			return errNoProgress
		}
		return err
	}
	var opts client.ImagePullOptions
	if platform.OS != "" {
		opts.Platforms = []ocispec.Platform{platform}
	}
	resp, err := cli.ImagePull(pctx, ref, opts)
	if err != nil {
		return stalled(err)
	}
	defer resp.Close()
	for msg, err := range resp.JSONMessages(pctx) {
		if err != nil {
			return stalled(err)
		}
		if msg.Error != nil {
			return errors.New(msg.Error.Message)
		}
		idle.Reset(pullIdleTimeout)
	}
	return stalled(nil)
}

// RootError is the failure of both ways to make the root image: the pull
// and the debootstrap fallback.
type RootError struct {
	Pull      error
	Bootstrap error
}

func (e *RootError) Error() string {
	return fmt.Sprintf("the root image %s could not be made either way:\n  1. pulling: %v\n  2. bootstrapping with debootstrap on this machine: %v", RootTag, e.Pull, e.Bootstrap)
}

// Unwrap gives both failures to errors.Is and errors.As.
func (e *RootError) Unwrap() []error { return []error{e.Pull, e.Bootstrap} }

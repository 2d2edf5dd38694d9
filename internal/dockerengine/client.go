// Package dockerengine speaks to the container engine behind the Docker API
// (Docker Engine, Docker Desktop, rootful or rootless, or Podman's
// Docker-compatible service) for every package that makes containers: the
// docker and crun sandbox backends and the image builds. It connects and
// pings with advice, tells the engines apart, and works around their
// quirks (Podman's races with a container's exit, its tmpfs and nproc
// options, architectures named as uname or as Go names them).
package dockerengine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/moby/moby/client"
)

// NewClient connects to the Docker daemon at host (empty: DOCKER_HOST or the
// default socket) and negotiates the API version, so that daemons as old as
// Docker Engine 20.10 (API 1.41) work.
func NewClient(host string) (*client.Client, error) {
	opts := []client.Opt{client.FromEnv}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	cli, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("creating Docker client: %w", err)
	}
	return cli, nil
}

// StartDaemonHint says what to do about a daemon that does not answer.
const StartDaemonHint = "start the Docker daemon (`make docker`, `systemctl start docker` or `dockerd &`) and check that this user may use its socket"

// Ping checks that the daemon answers within a few seconds and returns a
// message that says what to do when it does not.
func Ping(ctx context.Context, cli *client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return pingError(cli.DaemonHost(), err, os.Getuid())
	}
	return nil
}

// ErrSocketPermission marks a daemon socket this user may not open.
var ErrSocketPermission = errors.New("permission denied on the daemon's socket")

// pingError says what to do about a daemon that did not answer: a socket
// this user may not open needs another fix than a daemon that is down.
func pingError(host string, err error, uid int) error {
	if strings.Contains(err.Error(), "permission denied") {
		return fmt.Errorf("%w: this user (uid %d) may not use the Docker socket at %s (%v): add the user to the socket's group "+
			"(`sudo usermod -aG docker $USER`, then log in again), run the server as a user that may, "+
			"or point it at a daemon of this user's own (rootless Docker: --docker-host unix://$XDG_RUNTIME_DIR/docker.sock)", ErrSocketPermission, uid, host, err)
	}
	return fmt.Errorf("the Docker daemon at %s is not reachable (%v): %s", host, err, StartDaemonHint)
}

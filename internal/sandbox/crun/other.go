//go:build !linux

package crun

import (
	"context"
	"fmt"

	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// Backend is the crun backend, which runs on Linux only: crun, overlay
// mounts and cgroups are Linux's. Elsewhere every call says so.
type Backend struct{ cli *client.Client }

var _ sandbox.Backend = (*Backend)(nil)

func unavailable() error {
	return fmt.Errorf("%w: the crun backend runs on Linux only; use the docker backend", sandbox.ErrUnavailable)
}

// New fails: there is no crun backend off Linux.
func New(*client.Client, Options) (*Backend, error) { return nil, unavailable() }

// Binary is empty off Linux.
func (b *Backend) Binary() string { return "" }

// Version is empty off Linux.
func (b *Backend) Version() string { return "" }

// Client returns the Docker client.
func (b *Backend) Client() *client.Client { return b.cli }

func (b *Backend) Create(context.Context, sandbox.Template) (sandbox.Sandbox, error) {
	return nil, unavailable()
}
func (b *Backend) Check(context.Context) error                    { return unavailable() }
func (b *Backend) CheckImage(context.Context, string) error       { return unavailable() }
func (b *Backend) Architecture(context.Context) string            { return "" }
func (b *Backend) Sweep(context.Context) (int, error)             { return 0, nil }
func (b *Backend) RemoveOwn(context.Context, string) (int, error) { return 0, nil }
func (b *Backend) Close() error                                   { return nil }

// DefaultCheckpointTools is where scripts/checkpoint-tools.sh installs the
// checkpoint tools.
const DefaultCheckpointTools = "/var/lib/mcp-code-runner/checkpoint-tools"

// CheckCheckpointTools fails: checkpoints are the crun backend's, on Linux.
func CheckCheckpointTools(string) error { return unavailable() }

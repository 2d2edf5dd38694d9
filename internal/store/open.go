package store

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
)

// Open opens the configured store: the embedded one in the data directory
// (the default), or etcd. A store that cannot be opened (the directory
// held by another server, a file that is not ours, etcd unreachable) is an
// error the server stops on: it never serves without its state.
func Open(cfg config.Config) (Store, error) {
	switch cfg.Store.Backend {
	case "", config.StoreEmbedded:
		dir, err := DataDir(cfg)
		if err != nil {
			return nil, err
		}
		return OpenEmbedded(dir, EmbeddedOptions{})
	case config.StoreEtcd:
		return OpenEtcd(cfg.Store.Etcd)
	}
	return nil, fmt.Errorf("store.backend %q: want %q or %q", cfg.Store.Backend, config.StoreEmbedded, config.StoreEtcd)
}

// DataDir returns the configured data directory, or the default one:
// $XDG_STATE_HOME/mcp-code-runner, else ~/.local/state/mcp-code-runner, or
// /var/lib/mcp-code-runner for root.
func DataDir(cfg config.Config) (string, error) {
	if cfg.DataDir != "" {
		return filepath.Abs(cfg.DataDir)
	}
	if os.Geteuid() == 0 {
		return "/var/lib/mcp-code-runner", nil
	}
	if xdg := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(xdg) {
		return filepath.Join(xdg, "mcp-code-runner"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the default data directory: %w; set data_dir", err)
	}
	return filepath.Join(home, ".local", "state", "mcp-code-runner"), nil
}

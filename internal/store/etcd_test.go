//go:build !fast

package store_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store/storetest"
)

func TestEtcdUnreachableAtOpenIsUnavailableAndNamed(t *testing.T) {
	endpoint := "http://" + storetest.ClosedPort(t)
	start := time.Now()
	_, err := store.OpenEtcd(config.Etcd{Endpoints: []string{endpoint}, Prefix: "/mcr/", DialTimeoutSeconds: 1})
	if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), endpoint) || !strings.Contains(err.Error(), "start etcd") {
		t.Fatalf("OpenEtcd of a closed port = %v; want ErrUnavailable naming %s and the fix", err, endpoint)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("refusing took %s, want about the dial timeout (1 s)", took)
	}
}

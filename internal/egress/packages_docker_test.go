//go:build !fast

package egress_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// packagesConfig allows the packages tier, with the package cache in a
// directory of the test's own.
func packagesConfig(t *testing.T) config.Config {
	cfg := config.Default()
	cfg.Network.MaxTier = config.TierPackages
	cfg.Packages.CacheDir = t.TempDir()
	cfg.Pool.Sizes = nil
	return cfg
}

func requireImages(t *testing.T, e *engine.Engine, langs ...string) {
	t.Helper()
	b := e.Backend()
	for _, l := range langs {
		if lang, ok := e.Registry().Lookup(l); ok {
			if err := b.CheckImage(context.Background(), e.Registry().ImageOf(lang).Tag); err != nil {
				t.Fatalf("%v (run `make images`)", err)
			}
		}
	}
	img, _ := e.Registry().Image("packages")
	if err := b.CheckImage(context.Background(), img.Tag); err != nil {
		t.Fatalf("%v (run `make images`)", err)
	}
}

// The npm registry is reachable from these machines: npm itself fetches
// lodash through the egress proxy, and the program requires it.
func TestJavaScriptRunInstallsFromTheNpmRegistryAndRequiresIt(t *testing.T) {
	cfg := packagesConfig(t)
	e, b := testutil.Engine(t, &cfg)
	requireImages(t, e, "javascript")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	req := engine.Request{Language: "javascript", Packages: []string{"lodash@4"},
		Code: "console.log(JSON.stringify(require('lodash').chunk([1,2,3,4],2)))"}
	res, err := e.Run(ctx, req, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.StatusOK || strings.TrimSpace(res.Stdout) != "[[1,2],[3,4]]" {
		t.Fatalf("status %s, stdout %q, stderr %q", res.Status, res.Stdout, res.Stderr)
	}
	if len(res.Packages) != 1 || res.Packages[0].Name != "lodash" || !strings.HasPrefix(res.Packages[0].Version, "4.") || res.PackagesCached {
		t.Fatalf("packages %+v cached %v, want lodash 4.x freshly installed", res.Packages, res.PackagesCached)
	}
	// The same packages again come from the cache: no installer runs.
	again, err := e.Run(ctx, req, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !again.PackagesCached || strings.TrimSpace(again.Stdout) != "[[1,2],[3,4]]" {
		t.Fatalf("second run: cached %v, stdout %q, stderr %q", again.PackagesCached, again.Stdout, again.Stderr)
	}
	// The program cannot write the cache.
	w, err := e.Run(ctx, engine.Request{Language: "javascript", Packages: []string{"lodash@4"},
		Code: "try { require('fs').writeFileSync('" + engine.PackagesPath + "/node_modules/lodash/x', 'y'); console.log('wrote') } catch (e) { console.log(e.code) }"}, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(w.Stdout) != "EROFS" {
		t.Fatalf("writing the cache: %q %q, want EROFS", w.Stdout, w.Stderr)
	}
	testutil.NoLeftovers(t, b.Client())
}

func languagesBuiltin() *languages.Registry { return languages.Builtin() }

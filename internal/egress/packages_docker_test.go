//go:build !fast

package egress_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/packages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil/testbackend"
)

// packagesConfig allows the packages tier, with the package cache in a
// directory of the test's own.
func packagesConfig(t *testing.T) config.Config {
	cfg := config.Default()
	cfg.Network.MaxTier = config.TierPackages
	cfg.Packages.CacheDir = t.TempDir()
	cfg.Pool.Sizes = nil
	testutil.Unhurried(&cfg)
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
	e, b := testbackend.Engine(t, &cfg)
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
		Code: "try { require('fs').writeFileSync('" + packages.Path + "/node_modules/lodash/x', 'y'); console.log('wrote') } catch (e) { console.log(e.code) }"}, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w.Status != engine.StatusOK || strings.TrimSpace(w.Stdout) != "EROFS" {
		t.Fatalf("writing the cache: %q %q, want EROFS", w.Stdout, w.Stderr)
	}
	testutil.NoLeftovers(t, b.Client())
}

// javascript-lts (Node.js 24) requires what the packages image's npm (beside
// Debian's Node.js 20) installed: pure JavaScript modules do not depend on
// the Node.js that installed them.
func TestJavaScriptLTSRunRequiresWhatNpmInstalled(t *testing.T) {
	cfg := packagesConfig(t)
	e, b := testbackend.Engine(t, &cfg)
	requireImages(t, e, "javascript-lts")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := e.Run(ctx, engine.Request{Language: "javascript-lts", Packages: []string{"lodash@4"},
		Code: "console.log(process.version.split('.')[0], JSON.stringify(require('lodash').chunk([1,2,3,4],2)))"}, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.StatusOK || strings.TrimSpace(res.Stdout) != "v24 [[1,2],[3,4]]" {
		t.Fatalf("status %s, stdout %q, stderr %q", res.Status, res.Stdout, res.Stderr)
	}
	testutil.NoLeftovers(t, b.Client())
}

// In a JavaScript session: create_session's packages, then
// install_packages, each importable by the next call with no restart.
func TestAJavaScriptSessionInstallsPackagesAndRequiresThem(t *testing.T) {
	cfg := packagesConfig(t)
	e, b := testbackend.Engine(t, &cfg)
	requireImages(t, e, "javascript")
	m := sessions.NewManager(e)
	defer m.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	info, err := m.Create(ctx, "javascript", 0, sessions.Options{Packages: []string{"lodash@4"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Packages) != 1 || info.Packages[0].Name != "lodash" {
		t.Fatalf("session packages %+v", info.Packages)
	}
	run := func(code string) string {
		t.Helper()
		res, err := m.Run(ctx, engine.Request{SessionID: info.SessionID, Code: code}, engine.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(res.Stdout + res.Value + res.Stderr)
	}
	if got := run("const _ = require('lodash'); console.log(_.chunk([1,2,3,4],2).length)"); got != "2" {
		t.Fatalf("require lodash: %q", got)
	}
	if got := run("try { require('ms'); console.log('present') } catch (e) { console.log(e.code) }"); got != "MODULE_NOT_FOUND" {
		t.Fatalf("ms before install_packages: %q", got)
	}
	installed, err := m.InstallPackages(ctx, info.SessionID, []string{"ms@2.1.3"})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, p := range installed.Packages {
		names[p.Name] = p.Version
	}
	if names["ms"] != "2.1.3" || names["lodash"] == "" {
		t.Fatalf("after install_packages: %+v", installed.Packages)
	}
	if got := run("console.log(require('ms')('2h'), require('lodash').VERSION.split('.')[0])"); got != "7200000 4" {
		t.Fatalf("after install_packages: %q", got)
	}
	if _, err := m.Close(ctx, info.SessionID); err != nil {
		t.Fatal(err)
	}
	testutil.NoLeftovers(t, b.Client())
}

// BenchmarkPackageCache measures what the host cache saves: a run whose
// packages are installed first (npm downloads lodash from the registry)
// against the same run with them cached. go test -run - -bench
// PackageCache -benchtime 3x ./internal/egress/
func BenchmarkPackageCache(b *testing.B) {
	req := engine.Request{Language: "javascript", Packages: []string{"lodash@4"}, Code: "console.log(require('lodash').VERSION)"}
	var miss, hit time.Duration
	for range b.N {
		b.StopTimer()
		cfg := config.Default()
		cfg.Network.MaxTier = config.TierPackages
		cfg.Packages.CacheDir = b.TempDir()
		cfg.Pool.Sizes = nil
		testutil.Unhurried(&cfg)
		e, _ := testbackend.Engine(b, &cfg)
		b.StartTimer()
		for j, d := range []*time.Duration{&miss, &hit} {
			start := time.Now()
			res, err := e.Run(context.Background(), req, engine.RunOptions{})
			if err != nil || res.Status != engine.StatusOK || res.PackagesCached != (j == 1) {
				b.Fatalf("run %d: %v %+v", j, err, res)
			}
			*d += time.Since(start)
		}
	}
	b.ReportMetric(float64(miss.Milliseconds())/float64(b.N), "ms/install")
	b.ReportMetric(float64(hit.Milliseconds())/float64(b.N), "ms/cached")
	b.ReportMetric(float64(miss)/float64(hit), "speedup")
}

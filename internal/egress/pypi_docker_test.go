//go:build !fast

package egress_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil/testbackend"
)

// wheel builds a pure-Python wheel of one module that exposes VERSION.
func wheel(t *testing.T, name, version string, requires ...string) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	info := fmt.Sprintf("%s-%s.dist-info", name, version)
	files := map[string]string{
		name + "/__init__.py": fmt.Sprintf("VERSION = %q\n", version),
		info + "/METADATA":    fmt.Sprintf("Metadata-Version: 2.1\nName: %s\nVersion: %s\n", name, version),
		info + "/WHEEL":       "Wheel-Version: 1.0\nGenerator: mcp-code-runner-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
	}
	for _, r := range requires {
		files[info+"/METADATA"] += "Requires-Dist: " + r + "\n"
	}
	var record strings.Builder
	for _, p := range []string{name + "/__init__.py", info + "/METADATA", info + "/WHEEL"} {
		w, err := zw.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(files[p]))
		sum := sha256.Sum256([]byte(files[p]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", p, base64.RawURLEncoding.EncodeToString(sum[:]), len(files[p]))
	}
	record.WriteString(info + "/RECORD,,\n")
	w, _ := zw.Create(info + "/RECORD")
	_, _ = w.Write([]byte(record.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s-%s-py3-none-any.whl", name, version), buf.Bytes()
}

// simpleIndex serves a PEP 503 simple index of wheels on loopback and
// counts the wheel downloads.
func simpleIndex(t *testing.T, wheels map[string][]byte) (*httptest.Server, *atomic.Int32) {
	var downloads atomic.Int32
	byProject := map[string][]string{}
	for file := range wheels {
		project, _, _ := strings.Cut(file, "-")
		byProject[project] = append(byProject[project], file)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/simple/":
			for p := range byProject {
				fmt.Fprintf(w, "<a href=\"/simple/%s/\">%s</a>\n", p, p)
			}
		case strings.HasPrefix(r.URL.Path, "/simple/"):
			project := strings.Trim(strings.TrimPrefix(r.URL.Path, "/simple/"), "/")
			files, ok := byProject[project]
			if !ok {
				http.NotFound(w, r)
				return
			}
			fmt.Fprint(w, "<!DOCTYPE html><html><body>\n")
			for _, f := range files {
				sum := sha256.Sum256(wheels[f])
				fmt.Fprintf(w, "<a href=\"/files/%s#sha256=%s\">%s</a>\n", f, hex.EncodeToString(sum[:]), f)
			}
			fmt.Fprint(w, "</body></html>\n")
		case strings.HasPrefix(r.URL.Path, "/files/"):
			data, ok := wheels[strings.TrimPrefix(r.URL.Path, "/files/")]
			if !ok {
				http.NotFound(w, r)
				return
			}
			downloads.Add(1)
			_, _ = w.Write(data)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &downloads
}

// The Python path against an operator-configured index: a PEP 503 index
// this test serves on loopback from wheels it built, named by the
// operator as a private mirror. The same code path serves any mirror.
func TestPythonInstallsFromTheOperatorsIndexAndReportsWhatItInstalled(t *testing.T) {
	wheels := map[string][]byte{}
	for _, w := range []struct {
		name, version string
		requires      []string
	}{{"mcrdemo", "1.0", []string{"mcrdep<2"}}, {"mcrdemo", "2.0", []string{"mcrdep>=2"}}, {"mcrdep", "1.5", nil}, {"mcrdep", "2.0", nil}} {
		f, data := wheel(t, w.name, w.version, w.requires...)
		wheels[f] = data
	}
	srv, downloads := simpleIndex(t, wheels)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	cfg := packagesConfig(t)
	cfg.Packages.PypiIndexURL = srv.URL + "/simple"
	cfg.Network.PrivateHosts = []string{"127.0.0.1:" + port}
	e, b := testbackend.Engine(t, &cfg)
	requireImages(t, e, "python")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	req := engine.Request{Language: "python", Packages: []string{"mcrdemo==1.0"},
		Code: "import mcrdemo, mcrdep\nprint(mcrdemo.VERSION, mcrdep.VERSION)"}
	res, err := e.Run(ctx, req, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.StatusOK || strings.TrimSpace(res.Stdout) != "1.0 1.5" {
		t.Fatalf("status %s, stdout %q, stderr %q", res.Status, res.Stdout, res.Stderr)
	}
	got := fmt.Sprint(res.Packages)
	if got != "[{mcrdemo 1.0} {mcrdep 1.5}]" {
		t.Fatalf("packages %s, want mcrdemo 1.0 and its dependency mcrdep 1.5", got)
	}
	first := downloads.Load()
	again, err := e.Run(ctx, req, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !again.PackagesCached || downloads.Load() != first || strings.TrimSpace(again.Stdout) != "1.0 1.5" {
		t.Fatalf("second run: cached %v, downloads %d then %d, stdout %q", again.PackagesCached, first, downloads.Load(), again.Stdout)
	}

	// Bad input: each answers with pip's own message and a summary.
	for _, c := range []struct {
		name     string
		packages []string
		want     string
	}{
		{"a package that does not exist", []string{"nosuchpackage==1.0"}, "does not exist"},
		{"a version conflict", []string{"mcrdemo==1.0", "mcrdep==2.0"}, "conflict"},
	} {
		_, err := e.Run(ctx, engine.Request{Language: "python", Packages: c.packages, Code: "print(1)"}, engine.RunOptions{})
		if err == nil || engine.CodeOf(err) != engine.CodeInstall || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "package manager said") {
			t.Errorf("%s: %v, want %s with pip's message", c.name, err, c.want)
		}
	}
	testutil.NoLeftovers(t, b.Client())
}

// A registry that is down, and a tier above the operator's maximum.
func TestInstallsFromARegistryThatIsDownAndTiersAboveTheMaximumAreRefusedClearly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: the registry is down
	cfg := packagesConfig(t)
	cfg.Packages.PypiIndexURL = "http://" + addr + "/simple"
	cfg.Network.PrivateHosts = []string{addr}
	e, b := testbackend.Engine(t, &cfg)
	requireImages(t, e, "python")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err = e.Run(ctx, engine.Request{Language: "python", Packages: []string{"requests==2.32.3"}, Code: "print(1)"}, engine.RunOptions{})
	if err == nil || engine.CodeOf(err) != engine.CodeInstall || !strings.Contains(err.Error(), "could not be reached") {
		t.Errorf("registry down: %v", err)
	}
	_, err = e.Run(ctx, engine.Request{Language: "python", Network: "allowlist", Code: "print(1)"}, engine.RunOptions{})
	if err == nil || !engine.IsInvalid(err) || !strings.Contains(err.Error(), "above this server's maximum") {
		t.Errorf("tier above the maximum: %v", err)
	}
	for _, bad := range []string{"--index-url=http://evil", "../x", "https://evil/x.whl", "-e ."} {
		_, err = e.Run(ctx, engine.Request{Language: "python", Packages: []string{bad}, Code: "print(1)"}, engine.RunOptions{})
		if err == nil || !engine.IsInvalid(err) {
			t.Errorf("package %q: %v, want refused as invalid", bad, err)
		}
	}
	testutil.NoLeftovers(t, b.Client())
}

// An install over the time limit (an index that never answers) and one
// over the size limit (a wheel larger than packages.max_mb) each answer
// with a summary naming the setting, and leave no container behind.
func TestInstallsOverTheTimeOrSizeLimitAreStoppedAndSaySo(t *testing.T) {
	big := make([]byte, 3<<20)
	for i := range big {
		big[i] = byte(i*7919 + i>>8) // does not compress away
	}
	_, data := wheel(t, "mcrbig", "1.0")
	wheels := map[string][]byte{}
	// A wheel with a large data file inside.
	{
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		w, _ := zw.CreateHeader(&zip.FileHeader{Name: "mcrbig/blob.bin", Method: zip.Store})
		_, _ = w.Write(big)
		r, _ := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		for _, zf := range r.File {
			src, _ := zf.Open()
			dst, _ := zw.Create(zf.Name)
			_, _ = io.Copy(dst, src)
			src.Close()
		}
		zw.Close()
		wheels["mcrbig-1.0-py3-none-any.whl"] = buf.Bytes()
	}
	srv, _ := simpleIndex(t, wheels)
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(hang); slow.Close() })
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	_, slowPort, _ := net.SplitHostPort(slow.Listener.Addr().String())

	cfg := packagesConfig(t)
	cfg.Network.PrivateHosts = []string{"127.0.0.1:" + port, "127.0.0.1:" + slowPort}
	cfg.Packages.MaxMB = 2
	cfg.Packages.PypiIndexURL = srv.URL + "/simple"
	e, b := testbackend.Engine(t, &cfg)
	requireImages(t, e, "python")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err := e.Run(ctx, engine.Request{Language: "python", Packages: []string{"mcrbig==1.0"}, Code: "print(1)"}, engine.RunOptions{})
	if err == nil || engine.CodeOf(err) != engine.CodeInstall || !strings.Contains(err.Error(), "packages.max_mb") {
		t.Errorf("over the size limit: %v", err)
	}

	cfg.Packages.MaxMB = 512
	cfg.Packages.TimeoutSeconds = 5
	cfg.Packages.PypiIndexURL = slow.URL + "/simple"
	e, _ = testbackend.Engine(t, &cfg)
	_, err = e.Run(ctx, engine.Request{Language: "python", Packages: []string{"mcrbig==1.0"}, Code: "print(1)"}, engine.RunOptions{})
	if err == nil || engine.CodeOf(err) != engine.CodeInstall || !strings.Contains(err.Error(), "packages.timeout_seconds") {
		t.Errorf("over the time limit: %v", err)
	}
	testutil.NoLeftovers(t, b.Client())
}

// Package testbackend gives the suites that run on every sandbox backend
// the one MCR_TEST_BACKEND names: the Docker backend, or the crun backend
// on the Docker daemon's images. It is apart from testutil, which the
// crun package's own tests import.
package testbackend

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/images"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/crun"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// Env names the sandbox backend: "" or "docker" (testutil.Backend),
// "crun", or "default": the one serve runs with no backend set, crun
// wherever crun.Refusal finds nothing against it (under CI=true, where the
// machines can run crun, a default that is not crun fails). make test runs
// the hostile batteries on the Docker backend and on the default.
const Env = "MCR_TEST_BACKEND"

// Default is Env's value for the backend serve runs with no backend set.
const Default = "default"

// IsolationEnv names the isolation the suites' sandboxes run under:
// "" or "container", or "gvisor" (gVisor's runsc, testutil.Runsc); make
// test runs the hostile battery and a language matrix under gVisor.
const IsolationEnv = "MCR_TEST_ISOLATION"

// Isolation is the isolation IsolationEnv names ("container" when unset).
func Isolation() string {
	if i := os.Getenv(IsolationEnv); i != "" {
		return i
	}
	return config.IsolationContainer
}

// OnGVisor says the suites' sandboxes run under gVisor.
func OnGVisor() bool { return Isolation() == config.IsolationGVisor }

// OnCrun says the suites run on the crun backend.
func OnCrun() bool { return Name() == config.BackendCrun }

// Name is the backend Env names, "default" resolved.
func Name() string {
	name, _ := resolve()
	return name
}

// RequireName is Name, and fails the test under CI=true where the default
// is not crun: the CI machines run as root with crun, so a default there
// that is docker means the batteries would not prove the default backend.
func RequireName(t testing.TB) string {
	t.Helper()
	name, refusal := resolve()
	if refusal != "" && os.Getenv("CI") == "true" {
		t.Fatalf("%s=%s: the default backend is docker here (%s), but under CI=true it must be crun: run the tests as root on Linux with crun installed", Env, Default, refusal)
	}
	return name
}

// resolve is the backend Env names and, for a default that is docker,
// why crun cannot serve.
func resolve() (name, refusal string) {
	name = os.Getenv(Env)
	if name != Default {
		return name, ""
	}
	if why := crun.Refusal(config.Default(), runtime.GOOS, os.Geteuid(), os.Getenv("DOCKER_HOST")); why != "" {
		return config.BackendDocker, why
	}
	return config.BackendCrun, ""
}

// Crun returns a crun backend in a state directory of the test's own,
// removed after it; it fails the test where crun cannot serve.
func Crun(t testing.TB) (*crun.Backend, string) {
	t.Helper()
	return crunWith(t, "")
}

// crunWith is Crun with the checkpoint tools of tools (config
// sessions.checkpoint_tools).
func crunWith(t testing.TB, tools string) (*crun.Backend, string) {
	t.Helper()
	state := testutil.CrunStateDir(t)
	agent := testutil.AgentBinary(t)
	opts := crun.Options{AgentPath: agent, StateDir: state, CheckpointTools: tools}
	if filepath.Base(agent) == testutil.AgentName { // as serve: the standalone agent is CRIU's tar
		opts.CRIUTar = agent
	}
	if OnGVisor() {
		opts.Runsc = testutil.Runsc(t)
	}
	b, err := crun.New(testutil.RequireDocker(t), opts)
	if err == nil {
		err = b.Check(context.Background())
	}
	if err != nil {
		t.Fatalf("%s=crun: the crun backend is unavailable: %v", Env, err)
	}
	t.Cleanup(func() {
		_ = b.Close()
		_ = os.RemoveAll(state)
	})
	return b, state
}

// Sandboxes returns the real backend Env names.
func Sandboxes(t testing.TB) sandbox.Backend {
	t.Helper()
	switch name := RequireName(t); name {
	case "", config.BackendDocker:
		return testutil.Backend(t)
	case config.BackendCrun:
		b, _ := Crun(t)
		return b
	default:
		t.Fatalf("%s=%q: want docker, crun or default", Env, name)
		return nil
	}
}

// CrunEngine is Engine on the crun backend whatever Env names, for the
// tests of what that backend alone does (checkpoints): where crun cannot
// serve it skips the test, and fails it under CI=true.
func CrunEngine(t testing.TB, cfg *config.Config, opts ...engine.Option) (*engine.Engine, *docker.Backend) {
	t.Helper()
	if why := crun.Refusal(config.Default(), runtime.GOOS, os.Geteuid(), os.Getenv("DOCKER_HOST")); why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: the crun backend must serve here: %s", why)
		}
		t.Skipf("the crun backend cannot serve here: %s", why)
	}
	t.Setenv(Env, config.BackendCrun)
	return Engine(t, cfg, opts...)
}

// Engine returns an engine with cfg (Default() when nil) and the built-in
// registry on the backend Env names, and the Docker backend, which holds
// the images whichever backend runs the sandboxes.
func Engine(t testing.TB, cfg *config.Config, opts ...engine.Option) (*engine.Engine, *docker.Backend) {
	t.Helper()
	c := config.Default()
	if cfg != nil {
		c = *cfg
	}
	c.Isolation = Isolation()
	db := testutil.Backend(t)
	var sb sandbox.Backend = db
	if RequireName(t) == config.BackendCrun {
		sb, _ = crunWith(t, c.Sessions.CheckpointTools)
	}
	reg := languages.Builtin()
	opts = append([]engine.Option{engine.WithRuntimeVersions(images.NewLocalVersions(db.Client(), reg))}, opts...)
	return engine.New(c, reg, sb, nil, opts...), db
}

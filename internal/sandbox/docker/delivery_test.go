//go:build !fast

package docker_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// hiddenDirEnv tells a re-executed test binary that it runs in a mount
// namespace of its own, with a tmpfs over this directory holding the agent
// (and the temporary directory, where agent sockets go).
const hiddenDirEnv = "MCR_TEST_HIDDEN_DIR"

// TestAgentArrivesWhenTheDaemonCannotSeeTheServersFiles runs the backend
// in a mount namespace of its own (unshare --mount) with a tmpfs over the
// directory that holds its agent binary and its temporary directory. The
// daemon, outside, sees a decoy file at the agent's path and no temporary
// directory at all. Under auto delivery the agent must arrive through a
// volume, the agent must serve on the attached streams, the run must
// succeed, and nothing may be left behind: no container, and no volume or
// image but the test's own agent volume and image, which it removes.
func TestAgentArrivesWhenTheDaemonCannotSeeTheServersFiles(t *testing.T) {
	b := testutil.Backend(t)
	cli := b.Client()
	reg := languages.Builtin()
	testutil.RequireImage(t, b, reg, "bash")
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("unshare (util-linux) is required: %v", err)
	}
	if os.Geteuid() != 0 {
		testutil.SkipUnlessCI(t, "mounting a tmpfs in a mount namespace needs root")
	}

	// An agent of its own content (bytes appended to a static ELF do not
	// change how it runs), so that the volume is filled by this test and
	// no other server shares it.
	agent, err := os.ReadFile(testutil.AgentBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	salt := make([]byte, 16)
	_, _ = rand.Read(salt)
	agent = append(agent, salt...)
	sum := sha256.Sum256(agent)
	hash := hex.EncodeToString(sum[:])
	dir := t.TempDir()
	unique := filepath.Join(dir, "agent-unique")
	if err := os.WriteFile(unique, agent, 0o755); err != nil {
		t.Fatal(err)
	}
	hidden := filepath.Join(dir, "server")
	if err := os.Mkdir(hidden, 0o755); err != nil {
		t.Fatal(err)
	}
	// What the daemon sees at the agent's path: not the agent.
	if err := os.WriteFile(filepath.Join(hidden, "agent"), []byte("#!/bin/sh\necho decoy\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	volumesBefore := volumeNames(t, cli)
	t.Cleanup(func() {
		_, _ = cli.VolumeRemove(ctx, "mcr-agent-"+hash[:16], client.VolumeRemoveOptions{})
		_, _ = cli.ImageRemove(ctx, "mcp-code-runner/agent:"+hash[:16], client.ImageRemoveOptions{})
	})

	cmd := exec.Command(unshare, "--mount", "--propagation", "private", "--", "sh", "-c",
		`mount -t tmpfs -o size=256m,mode=0755 tmpfs "$1" && mkdir -m 1777 "$1/tmp" && cp "$2" "$1/agent" && exec "$3" -test.run='^TestHiddenFilesChild$' -test.count=1 -test.v`,
		"sh", hidden, unique, os.Args[0])
	cmd.Env = append(os.Environ(), hiddenDirEnv+"="+hidden, "TMPDIR="+filepath.Join(hidden, "tmp"), "MCR_TEST_AGENT_SHA256="+hash)
	out, err := cmd.CombinedOutput()
	t.Logf("the server in its own mount namespace:\n%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS: TestHiddenFilesChild") {
		t.Fatalf("the run in the mount namespace failed: %v", err)
	}

	// Nothing of the child's is left: no container labelled with its PID.
	list, err := dockerengine.ListContainers(ctx, cli, client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", docker.LabelOwnerPID+"="+strconv.Itoa(cmd.Process.Pid))})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("%d container(s) of the server in the namespace left behind", len(list.Items))
	}
	for _, v := range volumeNames(t, cli) {
		if !slices.Contains(volumesBefore, v) && !strings.HasPrefix(v, "mcr-agent-") {
			t.Errorf("volume %s left behind", v)
		}
	}
	if _, err := cli.VolumeInspect(ctx, "mcr-agent-"+hash[:16], client.VolumeInspectOptions{}); err != nil {
		t.Errorf("the agent volume should have been made: %v", err)
	}
}

// TestHiddenFilesChild is the server's side of the test above, in the
// mount namespace; it runs only when re-executed by it.
func TestHiddenFilesChild(t *testing.T) {
	hidden := os.Getenv(hiddenDirEnv)
	if hidden == "" {
		t.Skip("run by TestAgentArrivesWhenTheDaemonCannotSeeTheServersFiles in a mount namespace")
	}
	cli := testutil.RequireDocker(t)
	b, err := docker.New(cli, docker.Options{AgentPath: filepath.Join(hidden, "agent"), Runtime: os.Getenv(testutil.RuntimeEnv)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := b.Delivery(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hash := os.Getenv("MCR_TEST_AGENT_SHA256")
	if d.Mode != docker.DeliveryVolume || d.Volume != "mcr-agent-"+hash[:16] {
		t.Errorf("delivery %+v, want the volume mcr-agent-%s", d, hash[:16])
	}
	if !strings.Contains(d.Reason, "the daemon sees another file at") {
		t.Errorf("the reason should say the daemon sees another file: %q", d.Reason)
	}
	if d.Sockets || b.SocketsDir() != "" {
		t.Errorf("the daemon cannot see %s, so no sockets; got %+v", os.TempDir(), d)
	}

	// Configured to bind, the backend refuses, and says what to do.
	forced, err := docker.New(cli, docker.Options{AgentPath: filepath.Join(hidden, "agent"), AgentDelivery: docker.DeliveryBind})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := forced.Delivery(ctx); err == nil || !strings.Contains(err.Error(), "set agent_delivery (MCR_AGENT_DELIVERY) to auto or volume") {
		t.Errorf("bind where the daemon sees another file: want an error that says to use auto or volume, got %v", err)
	}

	reg := languages.Builtin()
	eng := engine.New(config.Default(), reg, b, nil)
	tmpl := eng.Template(mustLang(t, reg, "bash"))
	job := sandbox.Job{Deadline: time.Minute, Request: wire.Request{Workdir: wire.WorkspacePath, OutputLimit: 4096,
		Files:  []wire.File{{Path: "main.sh", Data: []byte("echo hi from $(ls " + docker.AgentDir + ")\n")}},
		Stages: []wire.Stage{{Name: "run", Argv: []string{"bash", "main.sh"}, TimeoutMs: 120_000}}}}
	sb, err := b.Create(ctx, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sb.Exec(ctx, job, nil)
	channel := docker.Channel(sb)
	sb.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stages) != 1 || res.Stages[0].ExitCode != 0 || string(res.Stages[0].Stdout) != "hi from agent\n" {
		t.Fatalf("want hi from agent, got %+v (diagnostics %q)", res, res.Diagnostics)
	}
	if channel != "streams" {
		t.Errorf("served on %s, want streams", channel)
	}
	testutil.NoLeftovers(t, cli)
	ectx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := eng.Close(ectx); err != nil {
		t.Error(err)
	}
	_ = b.Close()
}

func volumeNames(t *testing.T, cli *client.Client) []string {
	t.Helper()
	res, err := cli.VolumeList(context.Background(), client.VolumeListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range res.Items {
		names = append(names, v.Name)
	}
	return names
}

// TestAgentForADaemonOfAnotherArchitecture checks that an agent built for
// another architecture than the daemon's is refused with the command that
// builds the right one, and that the backend can build that one itself
// from the module's source (a daemon on arm64, say, for a server on amd64).
func TestAgentForADaemonOfAnotherArchitecture(t *testing.T) {
	host := testutil.AgentBinary(t)
	err := docker.CheckPlatform(host, "linux", "aarch64")
	if !errors.Is(err, docker.ErrAgentPlatform) || !strings.Contains(err.Error(), "GOARCH=arm64 go build") {
		t.Fatalf("an amd64 agent for an arm64 daemon: want ErrAgentPlatform with the build command, got %v", err)
	}
	if err := docker.CheckPlatform(host, "linux", "x86_64"); err != nil {
		t.Fatalf("an amd64 agent for an amd64 daemon: %v", err)
	}
	// The binary goes to a cache of the test's own; the go command keeps
	// its build cache (the first build for arm64 compiles the standard
	// library, minutes on a loaded machine; later ones take seconds).
	goCache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOCACHE: %v", err)
	}
	t.Setenv("GOCACHE", strings.TrimSpace(string(goCache)))
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	built, err := docker.CrossBuildAgent(context.Background(), "arm64")
	if err != nil {
		t.Fatal(err)
	}
	if err := docker.CheckPlatform(built, "linux", "aarch64"); err != nil {
		t.Errorf("the agent built for arm64: %v", err)
	}
}

// TestVolumeDeliveryOnALocalDaemon configures the volume on a daemon that
// sees this process's files: the sandbox mounts the agent volume read-only
// and without copying, and the agent still connects over its socket.
func TestVolumeDeliveryOnALocalDaemon(t *testing.T) {
	cli := testutil.RequireDocker(t)
	b, err := docker.New(cli, docker.Options{AgentPath: testutil.AgentBinary(t), AgentDelivery: docker.DeliveryVolume, Runtime: os.Getenv(testutil.RuntimeEnv)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	reg := languages.Builtin()
	testutil.RequireImage(t, b, reg, "bash")
	ctx := context.Background()
	d, err := b.Delivery(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.Mode != docker.DeliveryVolume || !strings.HasPrefix(d.Volume, "mcr-agent-") || !d.Sockets {
		t.Fatalf("delivery %+v: want the agent volume, and sockets", d)
	}
	eng := engine.New(config.Default(), reg, b, nil)
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = eng.Close(cctx)
	})
	tmpl := eng.Template(mustLang(t, reg, "bash"))
	_, host := b.ContainerConfig(tmpl)
	m := host.Mounts[0]
	if m.Type != "volume" || m.Source != d.Volume || m.Target != docker.AgentDir || !m.ReadOnly || m.VolumeOptions == nil || !m.VolumeOptions.NoCopy {
		t.Errorf("agent mount %+v: want the volume %s read-only, nocopy, at %s", m, d.Volume, docker.AgentDir)
	}
	sb, err := b.Create(ctx, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sb.Exec(ctx, sandbox.Job{Deadline: time.Minute, Request: wire.Request{Workdir: wire.WorkspacePath, OutputLimit: 4096,
		Files:  []wire.File{{Path: "main.sh", Data: []byte("echo hi\n")}},
		Stages: []wire.Stage{{Name: "run", Argv: []string{"bash", "main.sh"}, TimeoutMs: 120_000}}}}, nil)
	channel := docker.Channel(sb)
	sb.Close()
	if err != nil || len(res.Stages) != 1 || string(res.Stages[0].Stdout) != "hi\n" {
		t.Fatalf("want hi, got %+v, %v", res, err)
	}
	if channel != "socket" {
		t.Errorf("served on %s, want socket", channel)
	}
	testutil.NoLeftovers(t, cli)
}

// A daemon in the server's own mount namespace (the usual rootful dockerd
// on Linux) is recognised from the socket's peer, so auto binds the agent
// without asking the daemon through probe containers.
func TestAutoDeliveryOnALocalDaemonIsDecidedWithoutProbes(t *testing.T) {
	cli := testutil.RequireDocker(t)
	if runtime.GOOS != "linux" || !strings.HasPrefix(cli.DaemonHost(), "unix://") {
		testutil.SkipUnlessCI(t, "the socket's peer is known only for a Unix socket on Linux, and the daemon is at %s", cli.DaemonHost())
	}
	b, err := docker.New(cli, docker.Options{AgentPath: testutil.AgentBinary(t), Runtime: os.Getenv(testutil.RuntimeEnv)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	ctx := context.Background()
	d, err := b.Delivery(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.Mode != docker.DeliveryBind || !strings.Contains(d.Reason, "shares this process's mount namespace") {
		t.Fatalf("delivery %+v: want a bind mount decided from the socket's peer", d)
	}
	if !d.Sockets && !strings.Contains(os.Getenv(testutil.RuntimeEnv), "runsc") {
		t.Errorf("delivery %+v: want sockets on a local daemon", d)
	}
}

// A server made by `go install ...@version` on a Mac or a Windows machine
// builds the Linux agent from its own source in the module cache.
func TestAgentSourceIsFoundInTheModuleCacheOfAnInstalledServer(t *testing.T) {
	cache := t.TempDir()
	src := filepath.Join(cache, "github.com", "mcp-code-runner", "mcp-code-runner@v1.4.0")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module github.com/mcp-code-runner/mcp-code-runner\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path, version, want string
	}{
		{"a released version installed by the go command", "github.com/mcp-code-runner/mcp-code-runner", "v1.4.0", src},
		{"a version not in the cache", "github.com/mcp-code-runner/mcp-code-runner", "v1.5.0", ""},
		{"a build from a checkout", "github.com/mcp-code-runner/mcp-code-runner", "(devel)", ""},
		{"another main module", "example.com/other", "v1.4.0", ""},
		{"a version that would leave the cache", "github.com/mcp-code-runner/mcp-code-runner", "v1.4.0/../../..", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := docker.ModuleCacheSource(cache, c.path, c.version); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

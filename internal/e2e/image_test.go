//go:build !fast

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// repoRoot is the repository's root: go test runs a package's tests in the
// package's directory, internal/e2e. (Not runtime.Caller's file name, which
// -trimpath makes a module path.)
func repoRoot(t *testing.T) string {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("cannot locate the repository from %s: %v", root, err)
	}
	return root
}

// requireCompose returns the command that runs compose files: docker-compose
// (Debian's package), else the docker compose plugin.
func requireCompose(t *testing.T) []string {
	t.Helper()
	if p, err := exec.LookPath("docker-compose"); err == nil {
		return []string{p}
	}
	if exec.Command("docker", "compose", "version").Run() == nil {
		return []string{"docker", "compose"}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("docker-compose is required under CI=true (scripts/ensure-test-tools.sh installs it)")
	}
	t.Skip("neither docker-compose nor the docker compose plugin is installed (apt-get install -y docker-compose; set CI=true to make this fail)")
	return nil
}

// TestContainerImageRunsPython: the image built by scripts/build-image.sh
// (make image) runs with docker-compose.yml next to the host's daemon, as
// a non-root user; Python runs through it over MCP HTTP; its sandboxes are
// told apart from the host's servers'; `down` leaves none of them behind.
func TestContainerImageRunsPython(t *testing.T) {
	cli := testutil.RequireDocker(t)
	testutil.RequireImage(t, testutil.Backend(t), languages.Builtin(), "python")
	compose := requireCompose(t)
	root := repoRoot(t)
	tag := fmt.Sprintf("mcp-code-runner-test:%d", os.Getpid())
	if out, err := exec.Command("bash", filepath.Join(root, "scripts", "build-image.sh"), testutil.ServerBinary(t), tag).CombinedOutput(); err != nil {
		t.Fatalf("building the image: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = cli.ImageRemove(context.Background(), tag, client.ImageRemoveOptions{}) })

	// The shared directory is at the same path for the daemon and the
	// server, owned by the image's user.
	shared := t.TempDir()
	if err := os.Chown(shared, 65532, 65532); err != nil {
		t.Fatalf("the test makes the shared directory the image user's (run it as root): %v", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	override := filepath.Join(t.TempDir(), "override.yml")
	// Only the python pool, so that readiness does not wait on images this
	// test does not need.
	if err := os.WriteFile(override, []byte("services:\n  mcp-code-runner:\n    environment:\n      MCR_POOL_SIZES: python=1\n      MCR_POOL_SIZE: \"0\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	project := fmt.Sprintf("mcrimage%d", os.Getpid())
	env := append(os.Environ(), "MCR_IMAGE="+tag, "MCR_SHARED_DIR="+shared, "MCR_ADDR="+addr,
		fmt.Sprintf("MCR_METRICS_ADDR=127.0.0.1:%d", freePort(t)), fmt.Sprintf("DOCKER_GID=%d", socketGroup(t)))
	composeCmd := func(args ...string) *exec.Cmd {
		all := append(append(compose[1:], "-p", project, "-f", filepath.Join(root, "docker-compose.yml"), "-f", override), args...)
		cmd := exec.Command(compose[0], all...)
		cmd.Env = env
		return cmd
	}
	if out, err := composeCmd("up", "-d").CombinedOutput(); err != nil {
		t.Fatalf("compose up: %v\n%s", err, out)
	}
	down := func() {
		if out, err := composeCmd("down", "--timeout", "60").CombinedOutput(); err != nil {
			t.Errorf("compose down: %v\n%s", err, out)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := composeCmd("logs", "--no-color", "--tail", "50").CombinedOutput()
			t.Logf("server logs:\n%s", out)
		}
		down()
	})
	waitFor(t, "the server in its container is ready", 90*time.Second, func() bool {
		code, _ := httpGet(t, "http://"+addr+"/readyz")
		return code == 200
	})

	c := mcp.NewClient(&mcp.Implementation{Name: "e2e-image", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{
		"language": "python", "code": "import os, sys\nprint('hello from', sys.version_info[0], os.getuid())"}})
	cs.Close()
	if err != nil || res.IsError {
		t.Fatalf("run_code: %v %+v", err, res)
	}
	if text := res.Content[len(res.Content)-1].(*mcp.TextContent).Text; !strings.Contains(text, `hello from 3 10001`) {
		t.Fatalf("run_code through the container: %s", text)
	}

	// The server's own user is not root, and its sandboxes are labelled
	// with a host identity of their own (its PID namespace), so that
	// servers on the host never take it for dead, nor it them.
	ids, err := composeCmd("ps", "-q").Output()
	if err != nil || len(strings.TrimSpace(string(ids))) == 0 {
		t.Fatalf("compose ps: %v %s", err, ids)
	}
	serverID := strings.TrimSpace(string(ids))
	inspect, err := cli.ContainerInspect(context.Background(), serverID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := inspect.Container.Config.User; u != "65532:65532" {
		t.Errorf("server container user %q, want 65532:65532", u)
	}
	hostname, _ := os.Hostname()
	var ownerHost string
	waitFor(t, "the refilled python pool's sandbox", 60*time.Second, func() bool {
		ownerHost = sandboxOwnerHost(t, cli, "pidns")
		return ownerHost != ""
	})
	if !strings.HasPrefix(ownerHost, hostname+"+pidns") {
		t.Errorf("sandbox owner host %q, want %s+pidns...", ownerHost, hostname)
	}
	down()
	waitFor(t, "the container's sandboxes removed by its shutdown", 30*time.Second, func() bool {
		return sandboxOwnerHost(t, cli, ownerHost) == ""
	})
}

// sandboxOwnerHost returns the owner-host label of a managed container
// whose label contains part, or "".
func sandboxOwnerHost(t *testing.T, cli *client.Client, part string) string {
	t.Helper()
	list, err := dockerengine.ListContainers(context.Background(), cli, client.ContainerListOptions{
		All: true, Filters: make(client.Filters).Add("label", docker.LabelManaged+"=true"),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Items {
		if h := c.Labels[docker.LabelOwnerHost]; strings.Contains(h, part) {
			return h
		}
	}
	return ""
}

// socketGroup is the group of the Docker socket, which the image's user
// joins to reach it.
func socketGroup(t *testing.T) uint32 {
	t.Helper()
	fi, err := os.Stat("/var/run/docker.sock")
	if err != nil {
		t.Fatalf("the Docker socket: %v", err)
	}
	return fi.Sys().(*syscall.Stat_t).Gid
}

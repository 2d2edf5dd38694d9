package docker

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
)

// checkPlatform refuses an agent binary that cannot run on the daemon's
// OS and architecture, and says how to build one that can.
func checkPlatform(path, daemonOS, daemonArch string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("agent binary %s: %w (build it with `make build`)", path, err)
	}
	defer f.Close()
	var agentArch string
	switch f.Machine {
	case elf.EM_X86_64:
		agentArch = "amd64"
	case elf.EM_AARCH64:
		agentArch = "arm64"
	default:
		agentArch = strings.ToLower(strings.TrimPrefix(f.Machine.String(), "EM_"))
	}
	want := dockerengine.GoArch(daemonArch)
	if daemonOS == "linux" && agentArch == want {
		return nil
	}
	return fmt.Errorf("%w: %s is linux/%s, the daemon runs %s/%s; build the agent for the daemon with `CGO_ENABLED=0 GOOS=linux GOARCH=%s go build -o bin/mcp-code-runner-agent-linux-%s ./cmd/mcp-code-runner-agent` in the source tree and set agent_path (MCR_AGENT_PATH) to it",
		ErrAgentPlatform, path, agentArch, daemonOS, want, want, want)
}

// modulePath is this project's Go module, whose source crossBuildAgent
// looks for.
const modulePath = "github.com/mcp-code-runner/mcp-code-runner"

// crossBuildAgent builds the agent for linux/arch (static, CGO_ENABLED=0)
// into the user's cache directory, from the module's source tree found
// above the working directory or this executable, with the go command.
func crossBuildAgent(ctx context.Context, arch string) (string, error) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", errors.New("no go command on PATH")
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	root := ""
	for _, start := range starts {
		if root = moduleRoot(start); root != "" {
			break
		}
	}
	if root == "" {
		// A server made by `go install module@version` has its source in
		// the module cache, where the go command put it.
		if bi, ok := debug.ReadBuildInfo(); ok {
			if gomodcache, err := exec.CommandContext(ctx, goCmd, "env", "GOMODCACHE").Output(); err == nil {
				root = moduleCacheSource(strings.TrimSpace(string(gomodcache)), bi.Main.Path, bi.Main.Version)
			}
		}
	}
	if root == "" {
		return "", fmt.Errorf("the source of %s is neither above the working directory or this executable nor in the module cache", modulePath)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(cache, "mcp-code-runner", "mcp-code-runner-agent-linux-"+arch)
	cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-ldflags", "-s -w", "-o", out, "./cmd/mcp-code-runner-agent")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build for linux/%s in %s: %v: %s", arch, root, err, strings.TrimSpace(string(msg)))
	}
	return out, checkStatic(out)
}

// moduleCacheSource returns the directory of this module's source in the
// module cache gomodcache for the build's main module path and version
// (what debug.ReadBuildInfo reports), or "" when the binary was not built
// from a released version of this module. The module path is all lower
// case, so its cache directory needs no escaping.
func moduleCacheSource(gomodcache, mainPath, version string) string {
	if gomodcache == "" || mainPath != modulePath || version == "" || version == "(devel)" || strings.ContainsAny(version, `/\`) {
		return ""
	}
	dir := filepath.Join(gomodcache, filepath.FromSlash(modulePath)+"@"+version)
	if moduleRoot(dir) != dir {
		return ""
	}
	return dir
}

// moduleRoot returns the directory at or above dir whose go.mod declares
// modulePath, or "".
func moduleRoot(dir string) string {
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			first, _, _ := strings.Cut(string(data), "\n")
			if strings.TrimSpace(first) == "module "+modulePath {
				return dir
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

//go:build linux

package crun

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// gVisor: a template of sandbox.IsolationGVisor runs under runsc, gVisor's
// OCI runtime, in place of crun. The bundle, the configuration and the
// agent's streams are the same; runsc starts gVisor's kernel (the Sentry)
// in the sandbox's namespaces and cgroup, and the agent and its programs
// run on it. What differs is in runsc's flags (runscFlags) and in what a
// gVisor sandbox does without (a user namespace of its own and CRIU's
// checkpoints, which are the host kernel's).

// runscFlags are the flags every gVisor sandbox's runsc gets beside the
// operator's (Options.RunscFlags, which come after and so win):
//   - no network stack: a sandbox's network namespace holds loopback alone,
//     and its egress, where it has one, is a Unix socket;
//   - --host-uds=open: the agent may connect to the host's Unix sockets
//     the sandbox is shown (its egress proxy's and a session's agent
//     socket), and to no other, since no other is mounted; it may not
//     create one on the host;
//   - --overlay2=none: the root is read-only and the writable places are
//     tmpfs in gVisor's own memory, so no overlay is needed;
//   - --oci-seccomp: Docker's seccomp profile of the configuration holds
//     inside gVisor too, so that a program meets the same refusals as in
//     a container.
var runscFlags = []string{"--network=none", "--host-uds=open", "--overlay2=none", "--oci-seccomp"}

// DefaultRunscPlatform is gVisor's platform here: systrap needs no KVM and
// works in virtual machines.
const DefaultRunscPlatform = "systrap"

// ociRuntime is the runtime a sandbox's container is run with: its binary,
// its state directory and its flags before the command.
type ociRuntime struct {
	isolation sandbox.Isolation
	bin       string
	// exec, when set, is what runs bin: its sealed copy (sealed.go).
	exec  string
	root  string
	flags []string
}

// command is the runtime's command line for args, with its log at
// logFile ("" for none).
func (r ociRuntime) command(ctx context.Context, logFile string, args ...string) *exec.Cmd {
	full := append([]string{"--root", r.root}, r.flags...)
	if logFile != "" {
		full = append(full, "--log", logFile)
	}
	cmd := exec.CommandContext(ctx, r.bin, append(full, args...)...) // our own runtime binary
	if r.exec != "" {
		// argv[0] stays the binary's name, which crun reads.
		cmd.Path, cmd.Err = r.exec, nil
	}
	return cmd
}

// name is the runtime's name in messages.
func (r ociRuntime) name() string {
	if r.isolation == sandbox.IsolationGVisor {
		return "runsc"
	}
	return "crun"
}

func (b *Backend) runscRoot() string { return filepath.Join(b.opts.StateDir, "runsc") }

// runtimeFor is the runtime of sandboxes of isolation i.
func (b *Backend) runtimeFor(i sandbox.Isolation) ociRuntime {
	if i.Or() == sandbox.IsolationGVisor {
		flags := append([]string{"--platform=" + b.runscPlatform()}, runscFlags...)
		return ociRuntime{isolation: sandbox.IsolationGVisor, bin: b.opts.Runsc, root: b.runscRoot(),
			flags: append(flags, b.opts.RunscFlags...)}
	}
	rt := ociRuntime{isolation: sandbox.IsolationContainer, bin: b.crun, root: b.crunRoot()}
	if b.sealedCrun != nil {
		rt.exec = b.sealedCrun.path
	}
	return rt
}

func (b *Backend) runscPlatform() string {
	if b.opts.RunscPlatform != "" {
		return b.opts.RunscPlatform
	}
	return DefaultRunscPlatform
}

// isolationFile, in a sandbox's bundle, names its isolation, so that
// whoever removes or re-attaches to it (this server or the next) asks the
// runtime that runs it.
const isolationFile = "isolation"

// runtimeOf is the runtime of sandbox id, as its bundle records it.
func (b *Backend) runtimeOf(id string) ociRuntime {
	data, err := os.ReadFile(filepath.Join(b.bundlesDir(), id, isolationFile)) // in our bundle
	if err == nil && sandbox.Isolation(strings.TrimSpace(string(data))) == sandbox.IsolationGVisor {
		return b.runtimeFor(sandbox.IsolationGVisor)
	}
	return b.runtimeFor(sandbox.IsolationContainer)
}

// nullNetNS is the network namespace runsc binds in its root for the
// gofers of sandboxes without a network stack (runsc's null-netns), which
// runsc leaves mounted.
const nullNetNS = "null-netns"

// unmountNullNetNS unmounts runsc's null network namespaces under the
// backend's runsc root, every one stacked there (concurrent runsc
// processes may each have bound one), so that the state directory can go.
func (b *Backend) unmountNullNetNS() {
	path := filepath.Join(b.runscRoot(), nullNetNS)
	for unmounted := true; unmounted; {
		unmounted = unix.Unmount(path, unix.MNT_DETACH) == nil
	}
}

// runscCheck remembers whether runsc answers, once per backend.
type runscCheck struct {
	once    sync.Once
	version string
	err     error
}

// IsolationSupport says whether sandboxes of i can be made here: gVisor's
// need runsc (Options.Runsc) to answer.
func (b *Backend) IsolationSupport(i sandbox.Isolation) error {
	if i.Or() != sandbox.IsolationGVisor {
		return nil
	}
	_, err := b.RunscVersion()
	return err
}

// RunscVersion is the version runsc reports ("runsc version release-...")
// or why gVisor's sandboxes cannot be made here.
func (b *Backend) RunscVersion() (string, error) {
	b.runsc.once.Do(func() {
		if b.opts.Runsc == "" {
			b.runsc.err = fmt.Errorf("%w: isolation gvisor: no runsc is configured (gvisor.runsc); install it with `make gvisor` (scripts/ensure-gvisor.sh)", sandbox.ErrUnsupported)
			return
		}
		out, err := exec.Command(b.opts.Runsc, "--version").CombinedOutput() // the operator's runsc
		if err != nil {
			b.runsc.err = fmt.Errorf("%w: isolation gvisor: %s --version: %v: %s (install it with `make gvisor`)", sandbox.ErrUnsupported, b.opts.Runsc, err, strings.TrimSpace(string(out)))
			return
		}
		first, _, _ := strings.Cut(string(out), "\n")
		b.runsc.version = strings.TrimSpace(first)
	})
	return b.runsc.version, b.runsc.err
}

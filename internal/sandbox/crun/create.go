//go:build linux

package crun

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/agentconn"
)

// Create starts a new container from t with crun; its agent then waits on
// its standard input for the job. The agent's standard streams are pipes
// to this process, handed to crun, which passes them to the container: no
// daemon or shim stands between the server and the agent.
func (b *Backend) Create(ctx context.Context, t sandbox.Template) (sandbox.Sandbox, error) {
	if t.Egress != nil {
		return nil, fmt.Errorf("%w: the crun backend runs sandboxes without network; network access needs the docker backend", sandbox.ErrUnsupported)
	}
	hosts, err := b.prepared()
	if err != nil {
		return nil, err
	}
	root, err := b.inspect(ctx, t.Image)
	if err != nil {
		return nil, err
	}
	id, hostname := b.newID(t.MaxLife)
	bundle := filepath.Join(b.bundlesDir(), id)
	hostnameFile := filepath.Join(bundle, "hostname")
	spec, err := Spec(t, sandboxSpec{ID: id, Hostname: hostname, Rootfs: root.dir, ImageEnv: root.env, Agent: b.opts.AgentPath,
		Hosts: hosts, HostnameFile: hostnameFile})
	if err != nil {
		return nil, err
	}
	compiled := b.compiledSeccomp()
	if compiled != "" {
		spec.Annotations = map[string]string{seccompBPFAnnotation: compiled}
	}
	// The bundle is 0711: the sandbox's user reaches its hostname file
	// through it, and lists nothing.
	if err := os.Mkdir(bundle, 0o711); err != nil { //nolint:gosec // see above
		return nil, fmt.Errorf("crun sandbox bundle: %w", err)
	}
	data, err := json.Marshal(spec)
	if err == nil {
		err = os.WriteFile(hostnameFile, []byte(hostname+"\n"), 0o644) //nolint:gosec // the sandbox reads it
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(bundle, "config.json"), data, 0o600)
	}
	if err != nil {
		_ = os.RemoveAll(bundle)
		return nil, fmt.Errorf("crun sandbox configuration: %w", err)
	}
	l, err := b.start(id, bundle)
	if err != nil {
		b.destroy(id)
		return nil, err
	}
	if compiled == "" {
		b.keepSeccomp(id)
	}
	sb := agentconn.New(id, l, b.log)
	if err := ctx.Err(); err != nil {
		sb.Close()
		return nil, fmt.Errorf("creating crun sandbox: %w", err)
	}
	return sb, nil
}

// seccompBPFAnnotation gives crun a seccomp filter already compiled, in
// place of the configuration's rules: compiling Docker's profile with
// libseccomp costs crun about 20 ms of CPU per sandbox, on the path of
// every cold run.
const seccompBPFAnnotation = "run.oci.seccomp_bpf_data"

// compiledSeccomp returns the compiled filter, or "" before one is kept.
func (b *Backend) compiledSeccomp() string {
	b.seccompMu.Lock()
	defer b.seccompMu.Unlock()
	return b.seccompBPF
}

// keepSeccomp keeps the filter crun compiled for sandbox id from the
// configuration's rules (it writes it to the container's state, for its
// exec): every sandbox's profile is the same (Docker's default, for a
// process without capabilities), so the later ones load it as it is.
func (b *Backend) keepSeccomp(id string) {
	data, err := os.ReadFile(filepath.Join(b.crunRoot(), id, "seccomp.bpf")) //nolint:gosec // crun's state of our sandbox
	// A filter is a whole number of 8-byte instructions.
	if err != nil || len(data) == 0 || len(data)%8 != 0 {
		b.log.Debug("crun left no compiled seccomp filter; each sandbox compiles its own", "err", err, "bytes", len(data))
		return
	}
	b.seccompMu.Lock()
	defer b.seccompMu.Unlock()
	if b.seccompBPF == "" {
		b.seccompBPF = base64.StdEncoding.EncodeToString(data)
	}
}

// startTimeout bounds one `crun run --detach`, which takes tens of
// milliseconds.
const startTimeout = 2 * time.Minute

// start runs the container of bundle detached, its standard streams pipes
// to this process, and returns its link.
func (b *Backend) start(id, bundle string) (*link, error) {
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("crun sandbox pipes: %w", err)
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("crun sandbox pipes: %w", err)
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("crun sandbox pipes: %w", err)
	}
	pidFile := filepath.Join(bundle, "pid")
	logFile := filepath.Join(bundle, "crun.log")
	// Not the caller's context: crun cut short could leave a container
	// half made. A crun that hangs is killed, and the caller removes what
	// it made.
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.crun, "--root", b.crunRoot(), "--log", logFile, //nolint:gosec // our own binary, bundle and sandbox name
		"run", "--detach", "--bundle", bundle, "--pid-file", pidFile, id)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	// The container's processes get a session of their own: a signal to
	// the server's process group (a terminal's ^C) does not reach them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	runErr := cmd.Run()
	// The container holds its own ends now.
	_ = inR.Close()
	_ = outW.Close()
	_ = errW.Close()
	if runErr != nil {
		_ = inW.Close()
		_ = outR.Close()
		_ = errR.Close()
		msg, _ := os.ReadFile(logFile) //nolint:gosec // in our bundle
		return nil, fmt.Errorf("starting crun sandbox: %v: %s", runErr, crunMessage(msg))
	}
	proc, err := processOf(pidFile)
	if err != nil {
		_ = inW.Close()
		_ = outR.Close()
		_ = errR.Close()
		return nil, err
	}
	frames, demuxed := io.Pipe()
	l := &link{b: b, id: id, proc: proc, stdin: inW, frames: frames, ended: make(chan struct{})}
	go func() {
		_, _ = io.Copy(&l.diag, errR)
		_ = errR.Close()
	}()
	go func() {
		_, err := io.Copy(demuxed, outR)
		_ = outR.Close()
		demuxed.CloseWithError(err)
		close(l.ended)
	}()
	return l, nil
}

// crunMessage is the gist of crun's log: its JSON lines' messages, or the
// text as it is.
func crunMessage(log []byte) string {
	var msgs []string
	for _, line := range bytes.Split(bytes.TrimSpace(log), []byte("\n")) {
		var entry struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal(line, &entry) == nil && entry.Msg != "" {
			msgs = append(msgs, entry.Msg)
		} else if len(line) > 0 {
			msgs = append(msgs, string(line))
		}
	}
	if len(msgs) == 0 {
		return "crun printed nothing"
	}
	return strings.Join(msgs, "; ")
}

// processOf returns the process whose PID crun wrote to path: the
// container's first process, held by a pidfd, so that a signal can never
// reach another process that got its PID later.
func processOf(path string) (*os.Process, error) {
	data, err := os.ReadFile(path) //nolint:gosec // in our bundle
	if err != nil {
		return nil, fmt.Errorf("crun sandbox PID: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return nil, fmt.Errorf("crun sandbox PID: %q", data)
	}
	return os.FindProcess(pid)
}

// link is one started crun container and its agent's pipes: the sandbox's
// agentconn.Link.
type link struct {
	b      *Backend
	id     string
	proc   *os.Process
	stdin  *os.File
	frames *io.PipeReader
	diag   agentconn.Diagnostics
	ended  chan struct{} // closed when the agent's standard output ends
}

func (l *link) Ended() <-chan struct{} { return l.ended }

func (l *link) Diagnostics() string { return l.diag.String() }

// Stream returns the agent's pipes; a container that has ended (before its
// first job: a pool sandbox that died while idle) has none.
func (l *link) Stream(context.Context) (agentconn.Stream, error) {
	select {
	case <-l.ended:
		return agentconn.Stream{}, errors.New("the sandbox ended before its agent was reached")
	default:
	}
	return agentconn.Stream{Reader: l.frames, Writer: l.stdin, CloseWrite: l.stdin.Close}, nil
}

// Kill ends the container's first process, which ends every process in
// its PID namespace, and ends the agent's stream.
func (l *link) Kill(context.Context) {
	_ = l.proc.Signal(syscall.SIGKILL)
	_ = l.frames.CloseWithError(errors.New("the sandbox was killed"))
}

// OOMKilled reports whether the sandbox's cgroup counted an OOM kill.
func (l *link) OOMKilled(context.Context) bool {
	path := filepath.Join("/sys/fs/cgroup/memory", cgroupParent, l.id, "memory.oom_control")
	if l.b.cgroupV2 {
		path = filepath.Join("/sys/fs/cgroup", cgroupParent, l.id, "memory.events")
	}
	return oomKills(path) > 0
}

// oomKills reads the "oom_kill N" line of a cgroup memory file.
func oomKills(path string) int {
	data, err := os.ReadFile(path) //nolint:gosec // a cgroup file of our sandbox
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if n, ok := strings.CutPrefix(line, "oom_kill "); ok {
			v, _ := strconv.Atoi(strings.TrimSpace(n))
			return v
		}
	}
	return 0
}

// endGrace bounds how long Close waits for a killed container's processes
// to be gone before crun removes it.
const endGrace = 2 * time.Second

// Close kills the container, waits briefly for its processes to end, and
// removes it, its cgroup and its bundle.
func (l *link) Close() {
	_ = l.proc.Signal(syscall.SIGKILL)
	_ = l.stdin.Close()
	t := time.NewTimer(endGrace)
	select {
	case <-l.ended:
	case <-t.C:
	}
	t.Stop()
	_ = l.frames.Close()
	_ = l.proc.Release()
	l.b.destroy(l.id)
}

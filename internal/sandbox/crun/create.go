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
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/agentconn"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// Create starts a new container from t with crun; its agent then waits on
// its standard input for the job. The agent's standard streams are pipes
// to this process, handed to crun, which passes them to the container: no
// daemon or shim stands between the server and the agent. A template with
// a ReattachGrace (a session's) gets a sandbox that outlives this server,
// whose agent serves a socket instead (reattach.go).
func (b *Backend) Create(ctx context.Context, t sandbox.Template) (sandbox.Sandbox, error) {
	hosts, err := b.prepared()
	if err != nil {
		return nil, err
	}
	if err := b.IsolationSupport(t.Isolation); err != nil {
		return nil, err
	}
	rt := b.runtimeFor(t.Isolation)
	gvisor := rt.isolation == sandbox.IsolationGVisor
	root, err := b.inspect(ctx, t.Image)
	if err != nil {
		return nil, err
	}
	id, hostname := b.newID(t.MaxLife)
	bundle := filepath.Join(b.bundlesDir(), id)
	hostnameFile := filepath.Join(bundle, "hostname")
	s := sandboxSpec{ID: id, Hostname: hostname, Rootfs: root.dir, ImageEnv: root.env, Agent: b.opts.AgentPath,
		Hosts: hosts, HostnameFile: hostnameFile, GVisor: gvisor}
	// The bundle is 0711: the sandbox's user reaches its hostname file
	// (and its egress socket) through it, and lists nothing.
	if err := os.Mkdir(bundle, 0o711); err != nil {
		return nil, fmt.Errorf("crun sandbox bundle: %w", err)
	}
	if err := os.WriteFile(filepath.Join(bundle, isolationFile), []byte(rt.isolation), 0o600); err != nil {
		b.destroy(id)
		return nil, fmt.Errorf("crun sandbox bundle: %w", err)
	}
	if err := b.recordServer(bundle, t); err != nil {
		b.destroy(id)
		return nil, err
	}
	// A sandbox with network access keeps its network namespace of loopback
	// alone; its agent relays wire.EgressListen to the socket of its own
	// proxy, which every removal of the sandbox removes too.
	var egress *sandbox.EgressSocket
	if t.Egress != nil {
		if egress, err = b.serveEgress(id, t.Egress); err != nil {
			b.destroy(id)
			return nil, err
		}
		s.EgressDir, s.EgressEnv = egress.Dir, egress.Env()
	}
	// A session's sandbox outlives its server: its agent serves a socket
	// that the next server listens on (reattach.go), not pipes to this
	// process, which end with it.
	// Not under gVisor: there every connection from the sandbox to a host
	// socket is made by gVisor's gofer, so the host cannot tell its agent's
	// from another program's (reattach.go checks the peer's PID). A
	// session's gVisor sandbox ends with its server, and the next server
	// replays the session into a new one.
	var agent *net.UnixListener
	if t.ReattachGrace > 0 && !gvisor {
		if agent, err = listenForAgent(id); err != nil {
			egress.Close()
			b.destroy(id)
			return nil, err
		}
		s.AgentSocketDir, s.AgentLogDir = agentDir(id), agentLogDir(id)
		// A session's sandbox without network access can be checkpointed
		// where the tools work (checkpoint.go).
		// (gVisor's sandboxes cannot: CRIU checkpoints the host kernel's
		// processes, and gVisor keeps a sandbox's in its own.)
		s.UserNamespace = t.Egress == nil && !gvisor && b.CheckpointSupport() == nil
		if s.UserNamespace && !b.cgroupV2 {
			s.CgroupControllers = cgroupControllers()
		}
		if s.UserNamespace {
			s.Masks = b.masks()
		}
		s.AgentSocketEnv = []string{wire.SocketEnv + "=" + agentSocketMount + "/" + agentSocketName,
			wire.LogEnv + "=" + agentLogMount + "/" + agentLog,
			fmt.Sprintf("%s=%d", wire.ReattachEnv, t.ReattachGrace.Milliseconds())}
	}
	fail := func(err error) (sandbox.Sandbox, error) {
		if agent != nil {
			_ = agent.Close()
		}
		egress.Close()
		b.destroy(id)
		return nil, err
	}
	spec, err := Spec(t, s)
	if err != nil {
		return fail(err)
	}
	// crun's own annotation, of a filter crun compiled; runsc compiles
	// the configuration's rules itself.
	compiled := b.compiledSeccomp()
	if compiled != "" && !gvisor {
		spec.Annotations = map[string]string{seccompBPFAnnotation: compiled}
	}
	data, err := json.Marshal(spec)
	if err == nil {
		err = os.WriteFile(hostnameFile, []byte(hostname+"\n"), 0o644) // the sandbox reads it
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(bundle, "config.json"), data, 0o600)
	}
	if err != nil {
		return fail(fmt.Errorf("crun sandbox configuration: %w", err))
	}
	var l *link
	if agent != nil {
		l, err = b.startReattachable(ctx, rt, id, bundle, agent)
	} else {
		l, err = b.start(rt, id, bundle)
	}
	if err != nil {
		return fail(err)
	}
	l.egress, l.image, l.userns, l.isolation = egress, t.Image, s.UserNamespace, rt.isolation
	if compiled == "" && !gvisor {
		b.keepSeccomp(id)
	}
	sb := agentconn.New(id, l, b.log)
	if err := ctx.Err(); err != nil {
		sb.Close()
		return nil, fmt.Errorf("creating crun sandbox: %w", err)
	}
	return sb, nil
}

// egressBase holds the directories of the sandboxes' egress sockets, one
// per sandbox named after its host name (the random part of its ID): a
// socket's path must fit in 108 bytes, which one in the sandbox's bundle,
// under a state directory and the sandbox's long ID, does not.
const egressBase = "/run/mcr-crun-egress"

// egressDir is the directory of sandbox id's egress socket.
func egressDir(id string) string {
	return filepath.Join(egressBase, id[strings.LastIndexByte(id, '-')+1:])
}

// serveEgress serves e on a socket that sandbox id's user may connect to.
func (b *Backend) serveEgress(id string, e sandbox.Egress) (*sandbox.EgressSocket, error) {
	dir := egressDir(id)
	if err := os.MkdirAll(dir, 0o711); err != nil { // the sandbox's user searches it, and lists nothing
		return nil, fmt.Errorf("crun sandbox egress directory: %w", err)
	}
	return sandbox.ServeEgress(dir, e)
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
	data, err := os.ReadFile(filepath.Join(b.crunRoot(), id, "seccomp.bpf")) // crun's state of our sandbox
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
func (b *Backend) start(rt ociRuntime, id, bundle string) (*link, error) {
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
	cmd := rt.command(ctx, logFile, "run", "--detach", "--bundle", bundle, "--pid-file", pidFile, id)
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
		msg, _ := os.ReadFile(logFile) // in our bundle
		return nil, fmt.Errorf("starting crun sandbox (%s): %v: %s", rt.name(), runErr, crunMessage(msg))
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
	for line := range bytes.SplitSeq(bytes.TrimSpace(log), []byte("\n")) {
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
	data, err := os.ReadFile(path) // in our bundle
	if err != nil {
		return nil, fmt.Errorf("crun sandbox PID: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return nil, fmt.Errorf("crun sandbox PID: %q", data)
	}
	return os.FindProcess(pid)
}

// link is one started crun container and its agent's stream: its pipes,
// or for a sandbox that outlives its server its socket connection. It is
// the sandbox's agentconn.Link.
type link struct {
	b      *Backend
	id     string
	proc   *os.Process
	stdin  *os.File       // nil when the agent serves conn
	frames *io.PipeReader // nil when the agent serves conn
	// conn is the agent's socket connection, for a sandbox that outlives
	// its server; its standard streams then go to logPath.
	conn    *net.UnixConn
	logPath string
	diag    agentconn.Diagnostics
	ended   chan struct{}         // closed when the agent's standard output ends, or (conn) its process
	egress  *sandbox.EgressSocket // nil without network access
	image   string                // the image it runs, which a restore needs
	userns  bool                  // it has a user namespace: it can be checkpointed
	// isolation is the sandbox's: under gVisor its first process is
	// gVisor's kernel, and the agent runs on it.
	isolation sandbox.Isolation
}

func (l *link) Ended() <-chan struct{} { return l.ended }

func (l *link) Diagnostics() string {
	if l.logPath != "" {
		return logTail(l.logPath)
	}
	return l.diag.String()
}

// Stream returns the agent's pipes or connection; a container that has
// ended (before its first job: a pool sandbox that died while idle) has
// none.
func (l *link) Stream(context.Context) (agentconn.Stream, error) {
	select {
	case <-l.ended:
		return agentconn.Stream{}, errors.New("the sandbox ended before its agent was reached")
	default:
	}
	if l.conn != nil {
		return agentconn.Stream{Reader: l.conn, Writer: l.conn, CloseWrite: l.conn.CloseWrite}, nil
	}
	return agentconn.Stream{Reader: l.frames, Writer: l.stdin, CloseWrite: l.stdin.Close}, nil
}

// Kill ends the container's first process, which ends every process in
// its PID namespace, and ends the agent's stream.
func (l *link) Kill(context.Context) {
	_ = l.proc.Signal(syscall.SIGKILL)
	if l.conn != nil {
		_ = l.conn.Close()
		return
	}
	_ = l.frames.CloseWithError(errors.New("the sandbox was killed"))
}

// OOMKilled reports whether the sandbox's cgroup counted an OOM kill.
func (l *link) OOMKilled(context.Context) bool {
	n, _ := sandbox.CgroupOOMKills(l.oomFile())
	return n > 0
}

// OOMKills counts a gVisor sandbox's OOM kills from outside
// (agentconn.OOMCounter): its agent reads gVisor's cgroup files, which
// count none, while the host's OOM killer ends the host process that
// carries a program's memory (the platform's stub of its address space),
// and gVisor ends the program with SIGKILL. A container's agent counts
// them itself (-1).
func (l *link) OOMKills() int {
	if l.isolation != sandbox.IsolationGVisor {
		return -1
	}
	if n, ok := sandbox.CgroupOOMKills(l.oomFile()); ok {
		return n
	}
	return -1
}

// MemoryUsage reads the sandbox's memory use in its host cgroup
// ([sandbox.MemoryReader]); a gVisor sandbox's holds gVisor's kernel too.
func (l *link) MemoryUsage() (bytes uint64, ok bool) {
	if l.b.cgroupV2 {
		return sandbox.CgroupMemoryUsage(filepath.Join("/sys/fs/cgroup", cgroupParent, l.id, "memory.current"))
	}
	return sandbox.CgroupMemoryUsage(filepath.Join("/sys/fs/cgroup/memory", cgroupParent, l.id, "memory.usage_in_bytes"))
}

// oomFile is the host cgroup file that counts the sandbox's OOM kills.
func (l *link) oomFile() string {
	if l.b.cgroupV2 {
		return filepath.Join("/sys/fs/cgroup", cgroupParent, l.id, "memory.events")
	}
	return filepath.Join("/sys/fs/cgroup/memory", cgroupParent, l.id, "memory.oom_control")
}

// endGrace bounds how long Close waits for a killed container's processes
// to be gone before crun removes it.
const endGrace = 2 * time.Second

// Close kills the container, waits briefly for its processes to end, and
// removes it, its cgroup and its bundle.
func (l *link) Close() {
	_ = l.proc.Signal(syscall.SIGKILL)
	if l.conn != nil {
		_ = l.conn.Close()
	} else {
		_ = l.stdin.Close()
	}
	t := time.NewTimer(endGrace)
	select {
	case <-l.ended:
	case <-t.C:
	}
	t.Stop()
	if l.frames != nil {
		_ = l.frames.Close()
	}
	_ = l.proc.Release()
	l.egress.Close()
	l.b.destroy(l.id)
	l.b.disown(l.id)
}

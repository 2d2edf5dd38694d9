//go:build linux

package crun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/mcp-code-runner/mcp-code-runner/internal/criutar"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/agentconn"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// Checkpoints of session sandboxes with CRIU.
//
// A checkpoint writes a session's sandbox, the memory of every process in
// it and its tmpfs file systems (the workspace), to a directory, and ends
// the sandbox; a restore brings it back as a new container with the same
// processes in the same state. crun does both through CRIU. The host's own
// crun and criu may not be able to (Debian bookworm's crun is built
// without CRIU, and its criu does not know this kernel's vdso), so the
// backend runs a crun and a criu of their own, the checkpoint tools:
// Debian trixie's, installed with their libraries in one directory
// (scripts/checkpoint-tools.sh). Sandboxes are still created by the
// backend's crun; only checkpoint and restore use the tools'.
//
// What a sandbox needs to be checkpointed, and why:
//   - A user namespace of its own, IDs mapped to themselves. CRIU reads
//     each process's resource limits with prlimit(2), which a root without
//     CAP_SYS_RESOURCE (as in many containers, and on these machines) may
//     do only for processes in a user namespace it owns. Inside, the
//     sandbox's user has no capability, as before; crun then binds the
//     devices instead of making them, so they are in the configuration's
//     mounts, which crun gives CRIU as external.
//   - Its agent's log opened through a path in the sandbox (wire.LogEnv):
//     CRIU reopens every open file by its path in the sandbox.
//   - No connection to the server during the dump: CRIU cannot keep half
//     of a stream socket. The server closes its end and waits for the
//     agent to close its own (the agent says so in its log) before the
//     dump; the restored agent dials again, as it does for a re-attach.
// A session with network access has its egress socket and proxy outside
// the sandbox: it is not checkpointed (the sessions package replays it).

// DefaultCheckpointTools is where scripts/checkpoint-tools.sh installs the
// checkpoint tools.
const DefaultCheckpointTools = "/var/lib/mcp-code-runner/checkpoint-tools"

// CheckpointToolsOff, as Options.CheckpointTools, turns checkpoints off.
const CheckpointToolsOff = "off"

// checkpointTimeout bounds one crun checkpoint or restore: CRIU writes or
// reads the sandbox's memory, tens of megabytes for an interpreter.
const checkpointTimeout = 2 * time.Minute

// disconnectWait bounds how long a checkpoint waits for the agent to
// answer and close its end of the connection: milliseconds, but a loaded
// host may hold the agent back, and a checkpoint given up is a replay.
const disconnectWait = 30 * time.Second

// checkpointTools is the crun and criu that checkpoints use.
type checkpointTools struct {
	once sync.Once
	dir  string
	err  error // why checkpoints are unavailable; nil when they work
	// kdatKept says the backend keeps CRIU's kernel facts cache
	// (keepKernelFacts) and links it before each checkpoint and restore.
	kdatKept bool
	// netConf is CRIU's configuration file of each crun operation
	// ("checkpoint", "restore"), which leaves the sandbox's network
	// namespace out of its images (criunet.go); nil where it cannot.
	netConf map[string]string
	// tarDir holds the link named tar to Options.CRIUTar, first on CRIU's
	// PATH; "" where CRIU runs the system's tar.
	tarDir string
	// sealedCrun is the tools' crun as a sealed copy (sealed.go); nil
	// where it could not be made, and crun copies itself each time.
	sealedCrun *sealedBinary
}

func (t *checkpointTools) crun() string { return filepath.Join(t.dir, "bin", "crun") }

// env is the environment crun runs in: crun has libcriu start criu, which
// it looks up on PATH, as CRIU looks up tar.
func (t *checkpointTools) env() []string {
	path := filepath.Join(t.dir, "bin") + ":" + os.Getenv("PATH")
	if t.tarDir != "" {
		path = t.tarDir + ":" + path
	}
	return append(os.Environ(), "PATH="+path)
}

// criuTarDir is where the backend links the agent binary as tar for CRIU,
// under its state directory.
const criuTarDir = "criu-tar"

// linkCRIUTar makes dir hold a link named tar to the agent binary agent,
// and returns dir.
func linkCRIUTar(dir, agent string) (string, error) {
	agent, err := filepath.Abs(agent)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	link := filepath.Join(dir, criutar.Name)
	if target, err := os.Readlink(link); err == nil && target == agent {
		return dir, nil
	}
	// Another server's link (of another agent), replaced whole: CRIU runs
	// either this one or that one, never a half-made link.
	tmp := link + ".new"
	_ = os.Remove(tmp)
	if err := os.Symlink(agent, tmp); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, link); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return dir, nil
}

// CheckpointSupport says whether this backend can checkpoint a session's
// sandbox, or why not; it checks once.
func (b *Backend) CheckpointSupport() error {
	t := &b.tools
	t.once.Do(func() {
		if t.err = CheckCheckpointTools(t.dir); t.err != nil {
			return
		}
		if err := t.keepKernelFacts(); err != nil {
			b.log.Warn("CRIU probes the kernel at every checkpoint and restore: its cache is not kept", "err", err)
		}
		var extra string
		if yard, err := makeCgroupYard(cgroupYardBase); err != nil {
			b.log.Warn("CRIU mounts the host's cgroup hierarchies anew at every checkpoint and restore", "err", err)
		} else {
			extra = "cgroup-yard " + yard + "\n"
		}
		conf, err := prepareCRIUNet(filepath.Join(b.opts.StateDir, criuNetDir), extra)
		if err != nil {
			b.log.Warn("CRIU saves and restores each sandbox's network namespace with ip and iptables", "err", err)
		}
		t.netConf = conf
		if t.sealedCrun, err = sealAndTry(t.crun()); err != nil {
			b.log.Warn("the checkpoint tools' crun copies itself at every checkpoint and restore", "err", err)
		}
		if b.opts.CRIUTar != "" {
			if t.tarDir, err = linkCRIUTar(filepath.Join(b.opts.StateDir, criuTarDir), b.opts.CRIUTar); err != nil {
				t.tarDir = ""
				b.log.Warn("CRIU saves and restores each sandbox's tmpfs mounts with the system's tar and gzip", "err", err)
			}
		}
	})
	return t.err
}

// CheckCheckpointTools says whether the checkpoint tools in dir ("" is
// DefaultCheckpointTools) can checkpoint sandboxes on this host, or why
// not: installed, crun built +CRIU, and `criu check` passing.
func CheckCheckpointTools(dir string) error {
	t := checkpointTools{dir: dir}
	if t.dir == "" {
		t.dir = DefaultCheckpointTools
	}
	if t.dir == CheckpointToolsOff {
		return errors.New("checkpoints are turned off (sessions.checkpoint_tools is \"off\")")
	}
	if _, err := os.Stat(t.crun()); err != nil {
		return fmt.Errorf("the checkpoint tools are not installed in %s (`make checkpoint-tools`, or scripts/checkpoint-tools.sh, installs them)", t.dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, t.crun(), "--version").Output() // the tools' own binary
	if err != nil || !bytes.Contains(out, []byte("+CRIU")) {
		return fmt.Errorf("the checkpoint tools' crun in %s lacks +CRIU (%v)", t.dir, err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(t.dir, "bin", "criu"), "check") // the tools' own binary
	cmd.Env = t.env()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("`criu check` of the checkpoint tools fails on this host: %s", lastLine(out, err))
	}
	if os.Geteuid() != 0 {
		return errors.New("checkpoints need root")
	}
	return nil
}

// lastLine is the last line of a command's output, or its error.
func lastLine(out []byte, err error) string {
	msg := strings.TrimSpace(string(out))
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		msg = msg[i+1:]
	}
	if msg == "" && err != nil {
		return err.Error()
	}
	return msg
}

// checkpointMeta is what a checkpoint directory says of its sandbox.
type checkpointMeta struct {
	// ID is the sandbox's name when it was checkpointed; the restored one
	// keeps its host name.
	ID string `json:"id"`
	// Image is the image the sandbox ran, whose root the restore mounts.
	Image string `json:"image"`
	// LoopbackLater says the sandbox held no internet socket at its dump,
	// whose network namespace CRIU did not save: its restore brings the
	// new namespace's loopback up after CRIU (criunet.go).
	LoopbackLater bool `json:"loopback_later,omitempty"`
}

// Files in a checkpoint directory.
const (
	checkpointMetaFile   = "checkpoint.json"
	checkpointConfigFile = "config.json"
	checkpointImages     = "images"
	checkpointLog        = "agent.log"
)

var _ sandbox.Checkpointer = (*Backend)(nil)

// Checkpoint writes the session sandbox sb to dir (which it makes, 0700)
// and removes it. On failure sb is left running, its agent without a
// connection: the caller closes it.
func (b *Backend) Checkpoint(ctx context.Context, sb sandbox.Sandbox, dir string) error {
	if err := b.CheckpointSupport(); err != nil {
		return err
	}
	s, ok := sb.(*agentconn.Sandbox)
	if !ok {
		return fmt.Errorf("%T is not a crun sandbox", sb)
	}
	l, ok := s.Link().(*link)
	if !ok || l.conn == nil || !l.userns {
		return errors.New("only a session's sandbox made for checkpoints can be checkpointed")
	}
	if l.egress != nil {
		return errors.New("a sandbox with network access is not checkpointed: its proxy is outside it")
	}
	if err := os.MkdirAll(filepath.Join(dir, checkpointImages), 0o700); err != nil {
		return fmt.Errorf("checkpoint directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("checkpoint directory: %w", err)
	}
	// The agent lets go of its connection: CRIU cannot keep half of one.
	r, err := sb.Call(ctx, sandbox.Job{Request: wire.Request{Op: wire.OpCheckpoint, Session: true}, Deadline: disconnectWait, RunID: "checkpoint"}, nil)
	if err == nil && r.AgentError != "" {
		err = errors.New(r.AgentError)
	}
	if err != nil {
		return fmt.Errorf("readying the sandbox for its checkpoint: %w", err)
	}
	if err := agentLetGo(l.conn, disconnectWait); err != nil {
		return err
	}
	work := filepath.Join(b.bundlesDir(), l.id, "checkpoint-work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return fmt.Errorf("checkpoint work directory: %w", err)
	}
	frozen := b.freeze(l.id)
	// Read while the sandbox is frozen: nothing in it opens a socket
	// before the dump.
	loopbackLater := b.tools.netConf != nil && frozen && !holdsInetSockets(l.proc.Pid)
	if err := b.criu(ctx, "checkpoint", l.id, work, "--image-path", filepath.Join(dir, checkpointImages), "--work-path", work, l.id); err != nil {
		if frozen {
			b.thaw(l.id) // the caller closes it
		}
		return err
	}
	bundle := filepath.Join(b.bundlesDir(), l.id)
	meta, err := json.Marshal(checkpointMeta{ID: l.id, Image: l.image, LoopbackLater: loopbackLater})
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, checkpointMetaFile), meta, 0o600)
	}
	if err == nil {
		err = copyFile(filepath.Join(bundle, "config.json"), filepath.Join(dir, checkpointConfigFile))
	}
	if err == nil {
		// CRIU reopens the log and checks its size: the restore puts this
		// copy back.
		err = copyFile(l.logPath, filepath.Join(dir, checkpointLog))
	}
	if err == nil {
		err = privateTree(dir)
	}
	// The container has ended; Close removes what is left of it.
	sb.Close()
	if err != nil {
		return fmt.Errorf("keeping the checkpoint: %w", err)
	}
	return nil
}

// Restore brings back the sandbox checkpointed to dir as a new sandbox of
// t (its image, mounts and life), with the same host name, processes and
// files, and waits for its agent. verify (the checkpoint's hash, which
// reads it whole) runs beside the preparation and CRIU's restore, on the
// other core: the sandbox is returned only once it has said yes, and
// removed when it says no. The checkpoint is the server's own files
// (sandbox.Checkpointer), so what CRIU reads before the answer is what
// the sandbox itself wrote before its pause, as at any restore.
func (b *Backend) Restore(ctx context.Context, t sandbox.Template, dir string, verify func() error) (sandbox.Sandbox, error) {
	if err := b.CheckpointSupport(); err != nil {
		return nil, err
	}
	verified := make(chan error, 1)
	if verify == nil {
		verified <- nil
	} else {
		go func() { verified <- verify() }()
	}
	// Every return waits for verify: it reads the checkpoint, which the
	// caller removes once Restore returns.
	sb, err := b.restore(ctx, t, dir, verified)
	if verr := <-verified; verr != nil && err == nil {
		sb.Close()
		return nil, verr
	}
	return sb, err
}

// restore is Restore; it looks at verify's answer in verified, if there
// is one yet, before CRIU runs, and leaves it there for Restore.
func (b *Backend) restore(ctx context.Context, t sandbox.Template, dir string, verified chan error) (sandbox.Sandbox, error) {
	var meta checkpointMeta
	data, err := os.ReadFile(filepath.Join(dir, checkpointMetaFile)) // the server's own checkpoint
	if err == nil {
		err = json.Unmarshal(data, &meta)
	}
	if err != nil {
		return nil, fmt.Errorf("the checkpoint's description: %w", err)
	}
	old, ok := parseID(meta.ID)
	if !ok || strings.ContainsAny(meta.ID, "/.") || meta.Image != t.Image {
		return nil, fmt.Errorf("the checkpoint names sandbox %q of image %q, not a sandbox of %s", meta.ID, meta.Image, t.Image)
	}
	if time.Now().After(old.expires) {
		return nil, fmt.Errorf("the checkpoint outlived its sandbox's life (it ended at %s)", old.expires.Format(time.RFC3339))
	}
	var spec specs.Spec
	if data, err = os.ReadFile(filepath.Join(dir, checkpointConfigFile)); err == nil { // the server's own checkpoint
		err = json.Unmarshal(data, &spec)
	}
	if err != nil || spec.Linux == nil || spec.Process == nil {
		return nil, fmt.Errorf("the checkpoint's configuration: %v", err)
	}
	hosts, err := b.prepared()
	if err != nil {
		return nil, err
	}
	root, err := b.inspect(ctx, t.Image)
	if err != nil {
		return nil, err
	}
	// The sandbox keeps its name, and with it its cgroup's path, which
	// CRIU gives its processes' own view of their cgroups (the agent
	// reads its OOM kills there): what its name says of its life holds
	// still, and a server that did not make it adopts it, as a re-attach
	// does.
	id := meta.ID
	hostname := id[strings.LastIndexByte(id, '-')+1:]
	// What a crash left of it. crun has no state of it almost always (the
	// dump's end deletes the sandbox), and then `crun delete`, a process
	// on the resume's path (4-5 ms), is not run.
	if _, err := os.Lstat(filepath.Join(b.crunRoot(), id)); errors.Is(err, os.ErrNotExist) {
		b.removeDirs(id)
	} else {
		b.destroy(id)
	}
	bundle := filepath.Join(b.bundlesDir(), id)
	if err := os.Mkdir(bundle, 0o711); err != nil {
		return nil, fmt.Errorf("crun sandbox bundle: %w", err)
	}
	if err := b.recordServer(bundle, t); err != nil {
		b.destroy(id)
		return nil, err
	}
	ln, err := listenForAgent(id)
	if err != nil {
		b.destroy(id)
		return nil, err
	}
	fail := func(err error) (sandbox.Sandbox, error) {
		_ = ln.Close()
		b.destroy(id)
		b.removeCgroups(id)
		return nil, err
	}
	hostnameFile := filepath.Join(bundle, "hostname")
	if err := os.WriteFile(hostnameFile, []byte(hostname+"\n"), 0o644); err != nil { // the sandbox reads it
		return fail(fmt.Errorf("crun sandbox configuration: %w", err))
	}
	logPath := agentLogPath(id)
	if err := copyFile(filepath.Join(dir, checkpointLog), logPath); err != nil {
		return fail(fmt.Errorf("the agent's log: %w", err))
	}
	if err := os.Chown(logPath, wire.SandboxUID, wire.SandboxGID); err != nil {
		return fail(fmt.Errorf("the agent's log: %w", err))
	}
	// The same sandbox, on this server's paths: its image's root, its
	// bind mounts' sources and its cgroup.
	spec.Root.Path = root.readOnly
	spec.Linux.CgroupsPath = cgroupParent + "/" + id
	sources := map[string]string{
		AgentPath: b.opts.AgentPath, "/etc/hosts": hosts, "/etc/hostname": hostnameFile,
		agentSocketMount: agentDir(id), agentLogMount: agentLogDir(id),
	}
	maps.Copy(sources, b.masks().sources())
	for _, m := range t.Mounts {
		sources[m.Target] = m.Source
	}
	for i, m := range spec.Mounts {
		if src, ok := sources[m.Destination]; ok && m.Type == "bind" {
			spec.Mounts[i].Source = src
		}
	}
	if err := mountpoints(root.dir, spec.Mounts); err != nil {
		return fail(err)
	}
	if data, err = json.Marshal(&spec); err == nil {
		err = os.WriteFile(filepath.Join(bundle, "config.json"), data, 0o600)
	}
	if err != nil {
		return fail(fmt.Errorf("crun sandbox configuration: %w", err))
	}
	work := filepath.Join(bundle, "checkpoint-work")
	if err := os.Mkdir(work, 0o700); err != nil {
		return fail(fmt.Errorf("checkpoint work directory: %w", err))
	}
	pidFile := filepath.Join(bundle, "pid")
	// A checkpoint refused while it is prepared is not restored.
	select {
	case verr := <-verified:
		verified <- verr
		if verr != nil {
			return fail(verr)
		}
	default:
	}
	op := "restore"
	if meta.LoopbackLater && b.tools.netConf[restoreLoopbackLater] != "" {
		op = restoreLoopbackLater
	}
	if err := b.criu(ctx, op, id, work, "--detach", "--bundle", bundle, "--image-path", filepath.Join(dir, checkpointImages),
		"--work-path", work, "--pid-file", pidFile, id); err != nil {
		return fail(err)
	}
	proc, err := processOf(pidFile)
	if err != nil {
		return fail(err)
	}
	if op == restoreLoopbackLater {
		if err := loopbackUp(proc.Pid); err != nil {
			_ = proc.Release()
			return fail(fmt.Errorf("the restored sandbox's loopback: %w", err))
		}
	}
	l, err := b.connect(ctx, id, proc, ln, bootConnectWait)
	if err != nil {
		_ = proc.Release()
		b.destroy(id)
		return nil, err
	}
	l.logPath, l.image, l.userns = logPath, t.Image, true
	if old.pid+"-"+old.start+"-"+old.hostTag != b.owner.NameFields() {
		if err := b.adopt(id); err != nil {
			l.Close()
			return nil, err
		}
	}
	return agentconn.New(id, l, b.log), nil
}

// cgroupControllers lists the cgroup v1 controllers' directories under
// /sys/fs/cgroup (not their links, nor the v2 hierarchy beside them).
func cgroupControllers() []string {
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return nil
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "unified" {
			dirs = append(dirs, e.Name())
		}
	}
	return dirs
}

// removeCgroups removes sandbox id's cgroup directories, empty, which a
// restore that failed leaves (crun has no container of that name to
// delete), with the ones it made inside them (".proxy-crun").
func (b *Backend) removeCgroups(id string) {
	dirs := []string{filepath.Join("/sys/fs/cgroup", cgroupParent, id)}
	if !b.cgroupV2 {
		dirs = dirs[:0]
		for _, c := range cgroupControllers() {
			dirs = append(dirs, filepath.Join("/sys/fs/cgroup", c, cgroupParent, id))
		}
	}
	for _, d := range dirs {
		removeCgroup(d)
	}
}

// removeCgroup removes the empty cgroup dir, its children first.
func removeCgroup(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			removeCgroup(filepath.Join(dir, e.Name()))
		}
	}
	_ = os.Remove(dir)
}

// mountpoints makes, through the image's writable root at dir, every bind
// mount's mount point that the image lacks, and the directory of every
// other mount but a cgroup's: crun makes them in the root before a
// restore, which it then finds read-only (its mounts above it are not
// there yet), even those that CRIU then mounts in a file system it
// restores or binds (/dev, /sys/fs/cgroup): they stay hidden under those.
func mountpoints(dir string, mounts []specs.Mount) error {
	for _, m := range mounts {
		if !filepath.IsAbs(m.Destination) || strings.Contains(m.Destination, "..") || m.Type == "cgroup" || m.Type == "cgroup2" {
			continue
		}
		path := filepath.Join(dir, m.Destination)
		if _, err := os.Lstat(path); err == nil {
			continue
		}
		if m.Type != "bind" {
			if err := os.MkdirAll(path, 0o755); err != nil {
				return fmt.Errorf("the sandbox's mount point %s: %w", m.Destination, err)
			}
			continue
		}
		// A source not there yet is a cgroup's directory, which the
		// restore makes.
		fi, err := os.Stat(m.Source)
		isDir := err != nil || fi.IsDir()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("the sandbox's mount point %s: %w", m.Destination, err)
		}
		if isDir {
			err = os.Mkdir(path, 0o755)
		} else {
			var f *os.File
			if f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644); err == nil { // in the image root's upper layer
				err = f.Close()
			}
		}
		if err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("the sandbox's mount point %s: %w", m.Destination, err)
		}
	}
	return nil
}

// criu runs the tools' crun op (checkpoint or restore; restoreLoopbackLater
// is a restore with that configuration) on sandbox id, and says what CRIU
// reported when it fails.
func (b *Backend) criu(ctx context.Context, op, id, work string, args ...string) error {
	conf := b.tools.netConf[op]
	if op == restoreLoopbackLater {
		op = "restore"
	}
	// Not the caller's context, as for start: crun cut short could leave
	// a container half made or half dumped.
	cctx, cancel := context.WithTimeout(context.Background(), checkpointTimeout)
	defer cancel()
	if err := b.tools.linkKernelFacts(); err != nil {
		b.log.Warn("CRIU probes the kernel again: its cache is not linked", "err", err)
	}
	logFile := filepath.Join(work, "crun.log")
	full := append([]string{"--root", b.crunRoot(), "--log", logFile, op}, args...)
	cmd := exec.CommandContext(cctx, b.tools.crun(), full...) // the tools' own binary, our bundle and sandbox
	if s := b.tools.sealedCrun; s != nil {
		cmd.Path, cmd.Err = s.path, nil
	}
	cmd.Env = b.tools.env()
	if conf != "" {
		cmd.Env = append(cmd.Env, "CRIU_CONFIG_FILE="+conf)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// A file, not a pipe: a restored sandbox would hold a pipe open, and
	// nothing would read its end.
	outPath := filepath.Join(work, "crun.out")
	out, err := os.OpenFile(outPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("crun %s output: %w", op, err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Run()
	_ = out.Close()
	if err == nil {
		return ctx.Err()
	}
	printed, _ := os.ReadFile(outPath) // in our bundle
	msg, _ := os.ReadFile(logFile)     // in our bundle
	detail := criuError(filepath.Join(work, map[string]string{"checkpoint": "dump.log", "restore": "restore.log"}[op]))
	return fmt.Errorf("crun %s of sandbox %s: %v: %s%s%s", op, id, err, crunMessage(msg), strings.TrimSpace(" "+string(printed)), detail)
}

// criuError is the first error line of a CRIU log, if any.
func criuError(path string) string {
	data, err := os.ReadFile(path) // CRIU's log in our bundle
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		// CRIU complains of its own limits first; those do not stop it.
		if _, msg, ok := strings.Cut(line, "Error ("); ok && !strings.Contains(line, "RLIMIT_NOFILE for self") {
			return "; CRIU: Error (" + strings.TrimSpace(msg)
		}
	}
	return ""
}

// agentLetGo waits within wait for the agent to close its end of conn,
// and closes this one: the agent sends nothing more after its answer to
// wire.OpCheckpoint.
func agentLetGo(conn *net.UnixConn, wait time.Duration) error {
	defer conn.Close()
	if err := conn.SetReadDeadline(time.Now().Add(wait)); err != nil {
		return err
	}
	var buf [512]byte
	for {
		if _, err := conn.Read(buf[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("the agent did not let go of its connection: %w", err)
		}
	}
}

// copyFile copies src to dst (0600), keeping its size exactly.
func copyFile(src, dst string) error {
	in, err := os.Open(src) // the server's own files
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// privateTree makes every file under dir the server's alone: a checkpoint
// is the sandbox's memory.
func privateTree(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o600)
		if d.IsDir() {
			mode = 0o700
		}
		return os.Chmod(path, mode)
	})
}

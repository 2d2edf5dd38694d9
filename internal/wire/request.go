package wire

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// File is one file to write into the workspace before the first stage.
type File struct {
	// Path is relative to the workspace; the agent checks it again.
	Path string `json:"path"`
	// Data is the file's content (base64 in JSON).
	Data []byte `json:"data"`
	// Mode is the permission bits; 0 means 0644.
	Mode uint32 `json:"mode,omitempty"`
}

// Stage is one command to run, in order; a stage that fails stops the rest
// when StopOnFailure is set (a compile error skips the run).
type Stage struct {
	Name string   `json:"name"`
	Argv []string `json:"argv"`
	Env  []string `json:"env,omitempty"`
	// Stdin is the stage's standard input; empty means /dev/null.
	Stdin []byte `json:"stdin,omitempty"`
	// TimeoutMs is the stage's wall-clock limit.
	TimeoutMs int64 `json:"timeout_ms"`
	// StopOnFailure skips later stages when this one does not exit 0.
	StopOnFailure bool `json:"stop_on_failure,omitempty"`
}

// Operations a Request may ask for; the empty Op runs the stages.
const (
	OpRun       = ""
	OpWriteFile = "write_file"
	OpReadFile  = "read_file"
	OpListFiles = "list_files"
	OpKernel    = "kernel"
	// OpKernelFork makes a copy of the running interpreter of Kernel
	// (Name, Instance) by fork(): Fork.Instance names the copy, Workdir is
	// its workspace, filled with a copy of the original's files.
	OpKernelFork = "kernel_fork"
	// OpKernelClose ends the interpreter of Kernel (Name, Instance) and
	// removes Workdir when it is a fork's (under ForksDir).
	OpKernelClose = "kernel_close"
	// OpCheckpoint readies the sandbox for a checkpoint by the server
	// (CRIU): the agent stops every other process in it, answers, and
	// ends the connection, which CRIU could not keep; it dials the server
	// again as after a restart, and on its next connection, in the
	// restored sandbox or in this one, lets the processes go on.
	OpCheckpoint = "checkpoint"
)

// ErrNoKernel is a kernel_fork's error when the interpreter to fork does
// not run.
const ErrNoKernel = "no interpreter runs in the session to fork (it ran no code yet, or it ended)"

// ForksDir is the directory, in a session's workspace, under which the
// workspaces of its interpreter's forks live (one per fork instance).
const ForksDir = ".mcr-forks"

// KernelFork names the copy a kernel_fork request makes.
type KernelFork struct {
	Instance string `json:"instance"`
}

// Request is one job. A one-shot sandbox gets exactly one; a session's
// sandbox gets many, one after another.
type Request struct {
	// Op is what to do; see the Op constants.
	Op      string  `json:"op,omitempty"`
	Workdir string  `json:"workdir"`
	Files   []File  `json:"files,omitempty"`
	Stages  []Stage `json:"stages"`
	// OutputLimit caps the bytes of stdout and of stderr, each, that the agent
	// forwards per stage; the rest is read and counted but dropped.
	OutputLimit int64 `json:"output_limit"`
	// Artifacts, if set, asks for the files the stages created or changed in
	// the workspace to be sent back after the last stage.
	Artifacts *ArtifactLimits `json:"artifacts,omitempty"`
	// Session keeps processes a stage leaves behind (a session's state);
	// one-shot requests kill them.
	Session bool `json:"session,omitempty"`
	// Path names the file of a read_file request, or the directory of a
	// list_files request ("" is the workspace).
	Path string `json:"path,omitempty"`
	// MaxReadBytes bounds a read_file answer.
	MaxReadBytes int64 `json:"max_read_bytes,omitempty"`
	// Kernel is the interpreter call of a kernel request.
	Kernel *KernelCall `json:"kernel,omitempty"`
	// Fork is what a kernel_fork request makes.
	Fork *KernelFork `json:"fork,omitempty"`
	// Entry names the language's entry-point convention (package entry):
	// before the first stage the agent reads the code, Files[0], saves it
	// under the name the convention gives, and puts what it found for
	// {file}, {main} and {form} in the stages' commands. Code without an entry
	// point the convention can run fails the first stage, with a message
	// on its stderr that says what was expected.
	Entry string `json:"entry,omitempty"`
	// Architectures, if set, are the only machine architectures (Go's
	// names: "amd64", "arm64") the language runs on. In a sandbox of
	// another, the first stage fails at once with exit code 2 and
	// ArchitectureRefusal on its stderr, followed by the sandbox's own
	// architecture, and no stage runs: the runtime is not there, or its
	// programs are another machine's code.
	Architectures       []string `json:"architectures,omitempty"`
	ArchitectureRefusal string   `json:"architecture_refusal,omitempty"`
	// Tools, if set, lets the stages (or the kernel call) call the tools
	// of these MCP servers through the agent (code mode; see Tools).
	Tools *Tools `json:"tools,omitempty"`
}

// KernelCall runs code in a session's long-lived interpreter, whose
// variables and imports persist from call to call.
type KernelCall struct {
	// Name picks the kernel program built in (Program), as the language
	// registry names it.
	Name string `json:"name"`
	// Argv starts the interpreter; "{kernel}" is replaced by the path of
	// the kernel program.
	Argv []string `json:"argv"`
	Env  []string `json:"env,omitempty"`
	// Code is the cell to run. Empty, the call starts the interpreter
	// (when none runs) and waits until it answers: a session's, ahead of
	// its first call.
	Code string `json:"code"`
	// TimeoutMs bounds the call; past it the interpreter is killed and the
	// next call starts a fresh one.
	TimeoutMs int64 `json:"timeout_ms"`
	// Instance tells apart the interpreters of one language in a sandbox:
	// "" is the session's own, others are its forks (OpKernelFork).
	Instance string `json:"instance,omitempty"`
}

// ArtifactLimits bound the files sent back.
type ArtifactLimits struct {
	// MaxFiles is the most files sent with content.
	MaxFiles int `json:"max_files"`
	// MaxFileBytes is the largest file sent with content.
	MaxFileBytes int64 `json:"max_file_bytes"`
	// MaxTotalBytes bounds the content of all files together.
	MaxTotalBytes int64 `json:"max_total_bytes"`
	// MaxScan bounds the directory entries examined, so that a workspace of a
	// million files cannot stall the agent.
	MaxScan int `json:"max_scan"`
}

// Artifact is one file the run created or changed. Only regular files are
// reported; symlinks and other special files are never followed or read.
type Artifact struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	// Type is set in list_files answers: file, dir, symlink or other.
	Type string `json:"type,omitempty"`
	// Data is the content, absent when Skipped says why.
	Data    []byte `json:"data,omitempty"`
	Skipped string `json:"skipped,omitempty"`
}

// StageResult reports how one stage ended.
type StageResult struct {
	Name       string `json:"name"`
	ExitCode   int    `json:"exit_code"`
	Signal     string `json:"signal,omitempty"`
	TimedOut   bool   `json:"timed_out,omitempty"`
	OOMKilled  bool   `json:"oom_killed,omitempty"`
	DurationMs int64  `json:"duration_ms"`
	CPUTimeMs  int64  `json:"cpu_time_ms"`
	// MaxRSSKB is the largest resident set of any process the stage waited for.
	MaxRSSKB    int64 `json:"max_rss_kb"`
	StdoutBytes int64 `json:"stdout_bytes"`
	StderrBytes int64 `json:"stderr_bytes"`
	// StdoutDropped and StderrDropped count bytes past OutputLimit.
	StdoutDropped int64 `json:"stdout_dropped,omitempty"`
	StderrDropped int64 `json:"stderr_dropped,omitempty"`
	// Error says why the stage could not start (command missing, say).
	Error string `json:"error,omitempty"`
	// Cancelled is set when the engine stopped the stage.
	Cancelled bool `json:"cancelled,omitempty"`
	// Value is the repr of a kernel cell's last expression, if any.
	Value string `json:"value,omitempty"`
	// KernelRestarted is set when the call started a fresh interpreter
	// (its first call, or after a timeout or crash lost the old one).
	KernelRestarted bool `json:"kernel_restarted,omitempty"`
}

// Done ends the stream.
type Done struct {
	// Error is set when the request itself was refused (a bad file path).
	Error string `json:"error,omitempty"`
}

// ValidPath reports whether p is a clean path inside the workspace: relative,
// not climbing out, no empty or dot elements, no NUL bytes.
func ValidPath(p string) error {
	switch {
	case p == "":
		return errors.New("path is empty")
	case len(p) > 4096:
		return errors.New("path is longer than 4096 bytes")
	case strings.ContainsRune(p, 0):
		return errors.New("path contains a NUL byte")
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("path %q is absolute; give a path relative to the workspace", p)
	}
	for el := range strings.SplitSeq(p, "/") {
		switch el {
		case "..":
			return fmt.Errorf("path %q climbs out of the workspace", p)
		case "", ".":
			return fmt.Errorf("path %q is not clean (empty or '.' element); write it like dir/file.txt", p)
		}
	}
	if path.Clean(p) != p {
		return fmt.Errorf("path %q is not clean", p)
	}
	return nil
}

// Prestart is a command a warm sandbox starts before its job arrives, such
// as a compiler server that loads and warms up ahead of the program.
type Prestart struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env,omitempty"`
}

// Warm describes an interpreter that a warm sandbox starts before its job
// and hands the job's run stage to, so the run does not wait for the
// interpreter to start. The interpreter runs a program built into the agent
// that reads the run command on fd 3 and then behaves as that command would
// have: NUL-terminated fields, the first the index in the command of the
// script (the last word of Replaces), then the command's words. A program
// given as a file ("{program_file}") starts in that file's directory, with
// the script's path made absolute, and gets the working directory as a
// first field before those.
type Warm struct {
	// Name picks the program built in (Program), as the language registry
	// names it, or is ScriptWarm.
	Name string `json:"name"`
	// Argv starts the interpreter; "{program}" is replaced by the program's
	// source, and an argument "{program_file}" by the path of a file that
	// holds it (in a directory of its own under /tmp, which the program
	// removes once loaded).
	Argv []string `json:"argv"`
	// Env is the language's environment. The warm interpreter serves only a
	// stage whose environment is exactly this: the interpreter read its
	// environment when it started.
	Env []string `json:"env,omitempty"`
	// Replaces is the run command the interpreter stands for
	// (["python3", "main.py"]); a stage's command must start with it.
	Replaces []string `json:"replaces"`
	// Script, when set, makes this a script-reading interpreter (Name
	// "script"): Argv is the run command itself (["bash", "main.sh"]) and
	// Script its script file, relative to the working directory. The agent
	// puts a FIFO there and starts the command, which opens it and waits;
	// the job's script is written into the FIFO when its run comes, so the
	// interpreter runs it as the file it was started with. Only a stage
	// that is exactly the command (no arguments) fits.
	Script string `json:"script,omitempty"`
}

// ScriptWarm is the Warm.Name of script-reading interpreters.
const ScriptWarm = "script"

// HasWarmProgram reports whether a Warm may name name: ScriptWarm or a
// program built in.
func HasWarmProgram(name string) bool {
	return name == ScriptWarm || HasProgram(name)
}

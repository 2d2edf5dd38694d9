// Package engine carries one execution from request to result.
// [Engine.Prepare] resolves a [Request] once into a [Plan] (its language,
// stages, limits, network and packages), checked against the operator's
// limits; [Engine.RunPlan] takes a sandbox for the plan, runs its job on a
// [sandbox.Backend] and shapes the [Result], keeping full output that does
// not fit inline. [Engine.Run] does both.
package engine

import (
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress"

	"github.com/mcp-code-runner/mcp-code-runner/internal/packages"
)

// InputFile is a file placed in the workspace before the program runs.
type InputFile struct {
	Path     string `json:"path" jsonschema:"path relative to the workspace, like data/input.csv"`
	Content  string `json:"content" jsonschema:"the file's content: text, or base64 when encoding is base64"`
	Encoding string `json:"encoding,omitempty" jsonschema:"text (default) or base64"`
}

// Request is one run_code call.
type Request struct {
	Language       string      `json:"language" jsonschema:"language name or alias, e.g. python, javascript, typescript, bash; list_languages gives them all"`
	Code           string      `json:"code" jsonschema:"the program's source code"`
	Stdin          string      `json:"stdin,omitempty" jsonschema:"text given to the program on standard input"`
	Args           []string    `json:"args,omitempty" jsonschema:"command-line arguments passed to the program"`
	Env            Env         `json:"env,omitempty" jsonschema:"environment variables for the program, as name/value pairs; names are letters, digits and underscores"`
	Files          []InputFile `json:"files,omitempty" jsonschema:"extra files written into the workspace (the program's working directory) before it runs"`
	TimeoutSeconds int         `json:"timeout_seconds,omitempty" jsonschema:"wall-clock limit of the run in seconds; at most the operator's maximum"`
	SessionID      string      `json:"session_id,omitempty" jsonschema:"run in this session (from create_session): its files persist and, for Python and JavaScript, so do variables and imports; the value of a last bare expression is returned"`
	Network        string      `json:"network,omitempty" jsonschema:"network access of the run: none (the default), packages (the language's package registries only) or allowlist (the operator's list of hosts); at most the operator's maximum. Programs reach it through the HTTP(S)_PROXY the sandbox sets; there is no DNS and no other route. In a session the session's own network applies"`
	Packages       []string    `json:"packages,omitempty" jsonschema:"packages to install before the run, with the language's package manager, e.g. requests==2.32.3 (Python, pip) or lodash@4 (JavaScript, npm); installed once per set and cached, read-only to the program. Needs the operator's maximum network tier to be at least packages; the program itself keeps the network it asked for"`
	Isolation      string      `json:"isolation,omitempty" jsonschema:"what stands between the program and the host's kernel: container (a hardened container) or gvisor (under gVisor's kernel too, a second wall); at least the operator's, which a call may tighten but not loosen. In a session the session's own applies"`
	Tools          []string    `json:"tools,omitempty" jsonschema:"names of the operator's MCP servers (code mode) whose tools the program may call: Python imports mcr_tools (mcr_tools.call(server, tool, args), or mcr_tools.<server>.<tool>(**args)), JavaScript and TypeScript mcr-tools (await call(server, tool, args), or import { tool } from 'mcr-tools/<server>'); each call returns the tool's result (content, structuredContent, isError). The resources mcr://apis/<server> give the servers' tool signatures. The calls go through the server: the sandbox's network stays as it is. In a session the session's tools (create_session's) apply"`
	Secrets        []string    `json:"secrets,omitempty" jsonschema:"names of the operator's secrets the run may use: the program sees only a placeholder, in MCR_SECRET_<NAME>, and the egress proxy writes the secret into the header the operator bound it to on HTTPS requests to its hosts (in place of the placeholder where the header's value holds it, e.g. Bearer $MCR_SECRET_<NAME>). Needs a network tier that reaches those hosts (usually allowlist). In a session the session's secrets (create_session's) apply to every call: name only those, or leave this out"`
}

// InstalledPackage is a package an install put in place.
type InstalledPackage = packages.InstalledPackage

// Stage is the outcome of one stage (compile or run).
type Stage struct {
	ExitCode        int    `json:"exit_code" jsonschema:"the process's exit code; 128+N when killed by signal N"`
	Signal          string `json:"signal,omitempty" jsonschema:"the signal that killed the process, e.g. SIGKILL"`
	TimedOut        bool   `json:"timed_out" jsonschema:"the stage hit its time limit and was killed"`
	OOMKilled       bool   `json:"oom_killed" jsonschema:"the stage hit the memory limit: the out-of-memory killer ended its program or some of its processes"`
	Stdout          string `json:"stdout" jsonschema:"standard output, capped inline"`
	Stderr          string `json:"stderr" jsonschema:"standard error, capped inline"`
	StdoutTruncated bool   `json:"stdout_truncated" jsonschema:"stdout was cut to fit inline"`
	StderrTruncated bool   `json:"stderr_truncated" jsonschema:"stderr was cut to fit inline"`
	StdoutBytes     int64  `json:"stdout_bytes" jsonschema:"total bytes the program wrote to stdout"`
	StderrBytes     int64  `json:"stderr_bytes" jsonschema:"total bytes the program wrote to stderr"`
	StdoutURI       string `json:"stdout_uri,omitempty" jsonschema:"resource URI of the full stdout (up to the operator's limit) when truncated"`
	StderrURI       string `json:"stderr_uri,omitempty" jsonschema:"resource URI of the full stderr (up to the operator's limit) when truncated"`
	DurationMs      int64  `json:"duration_ms" jsonschema:"wall-clock time of the stage in milliseconds"`
	CPUTimeMs       int64  `json:"cpu_time_ms" jsonschema:"CPU time (user+system) of the stage in milliseconds"`
	MaxMemoryKB     int64  `json:"max_memory_kb" jsonschema:"peak resident memory of the largest process, in KiB"`
}

// Result is the outcome of a run_code call. The run stage's fields are at
// the top level; a compiled language adds a separate compile stage.
type Result struct {
	RunID          string `json:"run_id" jsonschema:"identifier of this run"`
	Language       string `json:"language" jsonschema:"canonical language name"`
	RuntimeVersion string `json:"runtime_version,omitempty" jsonschema:"version of the runtime or compiler, read from it when its image was built"`
	Status         string `json:"status" jsonschema:"ok, error (non-zero exit), compile_error, timeout, oom_killed or killed"`
	Isolation      string `json:"isolation,omitempty" jsonschema:"what stood between the program and the host's kernel: container or gvisor (gVisor's kernel)"`
	Stage
	Compile         *Stage             `json:"compile,omitempty" jsonschema:"the compile stage, for compiled languages"`
	TypeErrors      int                `json:"type_errors,omitempty" jsonschema:"how many type errors the compiler reported in compile.stderr; TypeScript runs the emitted program despite them unless the operator makes them fatal"`
	Value           string             `json:"value,omitempty" jsonschema:"in a Python or JavaScript session: the value of the cell's last bare expression"`
	KernelRestarted bool               `json:"interpreter_restarted,omitempty" jsonschema:"in a session: this call started a fresh interpreter (first call, or the previous one was lost to a timeout or crash)"`
	Resumed         *Resumed           `json:"resumed,omitempty" jsonschema:"in a session: the session had no sandbox (it was paused, or its sandbox did not survive a restart of the server), and this call rebuilt it first"`
	Artifacts       []Artifact         `json:"artifacts,omitempty" jsonschema:"files the run created or changed in the workspace; images also come as image content, others as resource links"`
	Packages        []InstalledPackage `json:"packages,omitempty" jsonschema:"packages installed for the run (those asked for, with the versions resolved)"`
	PackagesCached  bool               `json:"packages_cached,omitempty" jsonschema:"the packages came from the server's cache, with no download"`
	Network         *egress.Report     `json:"network,omitempty" jsonschema:"what the run did through the egress proxy, when it had network access: hosts reached and hosts denied, with the reason"`
	TotalMs         int64              `json:"total_ms" jsonschema:"wall-clock time of the whole call, sandbox start included (a sandbox is removed after the answer)"`
	ExitReason      string             `json:"message,omitempty" jsonschema:"a note on how the run ended when it did not end normally"`
	// SandboxID names the sandbox the run used, for the audit log; clients
	// do not see it.
	SandboxID string `json:"-"`
}

// Resumed says how a session without a sandbox (paused, or whose sandbox
// did not survive its server's restart) was brought back before a call.
type Resumed struct {
	Mode  string `json:"mode" jsonschema:"how the interpreter state came back: restored (the sandbox's checkpoint, its processes' memory and files exactly, brought back with CRIU) or replayed (the session's cells run again in order in a new sandbox)"`
	Cause string `json:"cause" jsonschema:"why the session had no sandbox: paused (pause_session, or idle), or restart (its sandbox did not survive a restart of the server)"`
	Lost  string `json:"lost,omitempty" jsonschema:"after a restart: what the replay could not bring back (workspace files that no cell wrote, and why the sandbox was not kept)"`
	// CheckpointRefused says why a paused session's checkpoint was not
	// restored: its state was replayed instead.
	CheckpointRefused string `json:"checkpoint_refused,omitempty" jsonschema:"why the session's checkpoint was not restored (corrupted, not this session's, or not restorable on this server); its state was replayed instead"`
	CellsReplayed     int    `json:"cells_replayed" jsonschema:"cells run again"`
	FilesRestored     int    `json:"files_restored" jsonschema:"workspace files restored"`
	DurationMs        int64  `json:"duration_ms" jsonschema:"how long resuming took, before the call itself ran"`
}

// Resumed.Cause values.
const (
	ResumedPaused  = "paused"
	ResumedRestart = "restart"
)

// Status values.
const (
	StatusOK           = "ok"
	StatusError        = "error"
	StatusCompileError = "compile_error"
	StatusTimeout      = "timeout"
	StatusOOM          = "oom_killed"
	StatusKilled       = "killed"
)

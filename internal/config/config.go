// Package config holds the operator's settings: defaults and maxima for every
// limit, where Docker is, and how the server listens. Settings come from an
// optional JSON file, then environment variables (MCR_*), then flags; each
// later source overrides the earlier. Tool arguments never change a Config:
// they can only ask for tighter limits within it (engine.Validate refuses
// anything above the operator's maxima).
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Limits bound one execution. Every field is enforced inside the sandbox or by
// the engine; zero is never "unlimited".
type Limits struct {
	// TimeoutSeconds is the default wall-clock limit of the run stage.
	TimeoutSeconds int `json:"timeout_seconds"`
	// MaxTimeoutSeconds is the most a tool call may ask for.
	MaxTimeoutSeconds int `json:"max_timeout_seconds"`
	// CompileTimeoutSeconds is the wall-clock limit of a compile stage.
	CompileTimeoutSeconds int `json:"compile_timeout_seconds"`
	// MemoryMB is the container's memory limit; swap is not allowed.
	MemoryMB int `json:"memory_mb"`
	// CPUs is the container's CPU quota, in cores.
	CPUs float64 `json:"cpus"`
	// PidsLimit caps processes and threads in the container.
	PidsLimit int `json:"pids_limit"`
	// WorkspaceMB is the size of the /workspace tmpfs.
	WorkspaceMB int `json:"workspace_mb"`
	// TmpMB is the size of the /tmp tmpfs.
	TmpMB int `json:"tmp_mb"`
	// NoFile is the open-files ulimit.
	NoFile int `json:"nofile"`
	// FileSizeMB is the largest file a program may write (fsize ulimit).
	FileSizeMB int `json:"file_size_mb"`
	// InlineOutputBytes caps stdout and stderr each in a tool result.
	InlineOutputBytes int `json:"inline_output_bytes"`
	// MaxOutputBytes caps stdout and stderr each as kept in full; output past
	// it is read and discarded, so the program is not killed for printing.
	MaxOutputBytes int `json:"max_output_bytes"`
	// MaxCodeBytes caps the source code.
	MaxCodeBytes int `json:"max_code_bytes"`
	// MaxStdinBytes caps the standard input.
	MaxStdinBytes int `json:"max_stdin_bytes"`
	// MaxFiles caps the number of input files.
	MaxFiles int `json:"max_files"`
	// MaxFileBytes caps each input file.
	MaxFileBytes int `json:"max_file_bytes"`
	// MaxTotalFileBytes caps all input files together.
	MaxTotalFileBytes int `json:"max_total_file_bytes"`
	// MaxArgs caps the number of command-line arguments.
	MaxArgs int `json:"max_args"`
	// MaxEnv caps the number of environment variables.
	MaxEnv int `json:"max_env"`
}

// Config is the whole operator configuration.
type Config struct {
	Limits Limits `json:"limits"`
	// Backend is where sandboxes run: "auto" (the default: crun where it
	// can serve, else docker), "docker", "kubernetes" (one Pod per
	// sandbox; see Kubernetes) or "crun" (one container per sandbox that
	// the server starts with crun itself, from the local Docker daemon's
	// images; root only).
	Backend string `json:"backend"`
	// Kubernetes configures the kubernetes backend.
	Kubernetes Kubernetes `json:"kubernetes"`
	// DockerHost overrides DOCKER_HOST when set.
	DockerHost string `json:"docker_host"`
	// RootImage is the image "images build" and "setup" have the daemon
	// pull for the Debian trixie base; empty means debian:trixie-slim. A
	// registry mirror's copy serves a daemon that cannot reach Docker Hub.
	RootImage string `json:"root_image"`
	// Runtime is the OCI runtime for sandboxes: "" or "auto" (crun when the
	// daemon has it, else the daemon's default), or one the daemon has
	// registered ("runc", "crun", "runsc").
	Runtime string `json:"runtime"`
	// Isolation is what stands between sandboxes' programs and the host's
	// kernel: "container" (the default: a hardened container on the host's
	// kernel) or "gvisor" (every sandbox under gVisor's kernel, runsc, a
	// second wall; see GVisor). A call or session may ask for gvisor where
	// this is container, never the other way.
	Isolation string `json:"isolation"`
	// GVisor configures the sandboxes of isolation gvisor.
	GVisor GVisor `json:"gvisor"`
	// AgentPath is the static binary mounted into each sandbox as its first
	// process; empty means mcp-code-runner-agent beside this executable,
	// else this executable (its hidden agent subcommand).
	AgentPath string `json:"agent_path"`
	// AgentDelivery is how the agent gets into Docker sandboxes: "auto"
	// (a bind mount when the daemon sees this server's agent file, else a
	// volume), "bind", or "volume" (a named volume filled through the
	// Docker API, for a daemon in a VM, on another machine or in another
	// mount namespace).
	AgentDelivery string `json:"agent_delivery"`
	// AllowUnenforcedLimits runs sandboxes on an engine that cannot set
	// their memory, pids or CPU limits (rootless Docker or Podman on a
	// cgroup v1 host), which is otherwise refused at start. Only for code
	// the operator trusts: one run could then exhaust the host.
	AllowUnenforcedLimits bool `json:"allow_unenforced_limits"`
	// FavorCgroupChanges has the crun backend turn on cgroup v2's
	// favordynmods for the host (until its next boot) before its first
	// sandbox: moving a sandbox's process into its cgroup, at every start
	// and restore, then waits for no RCU grace period (5-20 ms here), for
	// a little more work at each fork and exit.
	FavorCgroupChanges bool `json:"favor_cgroup_changes"`
	// SharedDir, when set, is a directory that this server and the Docker
	// daemon both see at the same path: when the server runs in a
	// container, a bind mount of that host path at the same path. The agent
	// binary is copied there (the daemon mounts it into sandboxes from its
	// own file system) and the agents' sockets are made there.
	SharedDir string `json:"shared_dir"`
	// LanguagesFile adds or overrides language registry entries.
	LanguagesFile string `json:"languages_file"`
	// TypeErrorsFatal makes type errors stop the run in languages whose
	// compiler emits a runnable program despite them (TypeScript): the
	// compile stage fails instead of reporting them and running the program.
	TypeErrorsFatal bool `json:"type_errors_fatal"`
	// MaxConcurrentRuns caps executions in flight.
	MaxConcurrentRuns int `json:"max_concurrent_runs"`
	// QueueTimeoutSeconds is how long a run waits for a free slot before it
	// is answered with a busy error.
	QueueTimeoutSeconds int `json:"queue_timeout_seconds"`
	// OutputRetentionSeconds is how long full outputs stay readable.
	OutputRetentionSeconds int `json:"output_retention_seconds"`
	// OutputStoreMB caps the memory all kept outputs use; oldest go first.
	OutputStoreMB int `json:"output_store_mb"`
	// SweepIntervalSeconds is how often left-behind containers are removed.
	SweepIntervalSeconds int `json:"sweep_interval_seconds"`
	// ShutdownGraceSeconds is how long runs in flight may go on after a
	// shutdown signal before they are killed.
	ShutdownGraceSeconds int `json:"shutdown_grace_seconds"`
	// HTTP holds the Streamable HTTP listener's settings.
	HTTP HTTP `json:"http"`
	// Pool holds the warm pool's settings.
	Pool Pool `json:"pool"`
	// Executions holds the settings of runs that outlive a request.
	Executions Executions `json:"executions"`
	// Artifacts holds the settings of files returned from runs.
	Artifacts Artifacts `json:"artifacts"`
	// Sessions holds the settings of stateful sessions.
	Sessions Sessions `json:"sessions"`
	// Metrics holds where Prometheus metrics are served.
	Metrics Metrics `json:"metrics"`
	// Audit holds where the audit log goes.
	Audit Audit `json:"audit"`
	// Quotas bound what each principal (token, OAuth subject) may hold at
	// once, within the server-wide limits above.
	Quotas Quotas `json:"quotas"`
	// Network holds the most network access a run may ask for.
	Network Network `json:"network"`
	// Packages holds where packages are installed from and cached.
	Packages Packages `json:"packages"`
	// DataDir holds the embedded state store (state.db): sessions,
	// executions, tasks, outputs and artifacts that outlive the process.
	// One server per directory. Empty means the user's state directory:
	// $XDG_STATE_HOME/mcp-code-runner, else
	// ~/.local/state/mcp-code-runner (/var/lib/mcp-code-runner for root).
	DataDir string `json:"data_dir"`
	// Store chooses where that state lives.
	Store Store `json:"store"`
	// Images holds what serve does about runtime images that are missing.
	Images Images `json:"images"`
	// CodeMode names the MCP servers whose tools sandbox code may call.
	CodeMode CodeMode `json:"code_mode"`
}

// Images configures serve's background image builder: the default set's
// images that are missing or out of date, built one at a time while the
// server serves, so that a fresh machine serves its first languages
// without waiting for every image.
type Images struct {
	// BuildOnStart builds, at start, the default set's images that are
	// missing or out of date, one at a time, at a low CPU priority.
	// list_languages shows each missing image's languages as building,
	// queued or failed, and a run in one of them waits for its image.
	// Only for the backends that run the local Docker daemon's images
	// (docker, crun).
	BuildOnStart bool `json:"build_on_start"`
	// BuildLog is the file the background builds' output is appended to;
	// empty keeps only the milestones, in the server's log.
	BuildLog string `json:"build_log"`
	// WaitSeconds bounds how long a run waits for its image to be built
	// in the background, before its own timeout starts; a build that
	// takes longer answers the run with a busy error that says so.
	WaitSeconds int `json:"wait_seconds"`
}

// The state stores.
const (
	StoreEmbedded = "embedded"
	StoreEtcd     = "etcd"
)

// Store chooses the state store: the embedded file under data_dir (one
// server), or etcd (several replicas behind one address share it).
type Store struct {
	// Backend is "embedded" (the default) or "etcd".
	Backend string `json:"backend"`
	// Etcd configures the etcd store.
	Etcd Etcd `json:"etcd"`
	// AdvertiseURL is where the other replicas sharing the etcd store
	// reach this one (http://10.0.0.5:8080, on Kubernetes the pod's IP),
	// to forward calls for the sessions it holds. Empty: the --http
	// address when it names one host; a server listening on every
	// address must be given it, or its sessions answer only through it.
	AdvertiseURL string `json:"advertise_url"`
}

// Etcd configures the etcd v3 store. Its password is never in the
// configuration itself: it comes from a file or an environment variable.
type Etcd struct {
	// Endpoints are the etcd members' client URLs
	// (https://etcd-0.etcd:2379); required with the etcd store.
	Endpoints []string `json:"endpoints"`
	// Prefix is put before every key, so that several deployments (or
	// other programs) can share one etcd.
	Prefix string `json:"prefix"`
	// DialTimeoutSeconds bounds connecting, and each request.
	DialTimeoutSeconds int `json:"dial_timeout_seconds"`
	// CAFile is the PEM bundle that verifies the members' certificates;
	// setting it, or CertFile, makes the connection TLS.
	CAFile string `json:"ca_file"`
	// CertFile and KeyFile are this server's client certificate and key.
	CertFile string `json:"cert_file"`
	KeyFile  string `json:"key_file"`
	// ServerName is the name the members' certificates are checked
	// against, when it is not the endpoints' host.
	ServerName string `json:"server_name"`
	// Username authenticates with etcd's own users.
	Username string `json:"username"`
	// PasswordFile is a file holding Username's password (a mounted Secret).
	PasswordFile string `json:"password_file"`
	// PasswordEnv names an environment variable holding Username's password.
	PasswordEnv string `json:"password_env"`
}

// The network tiers a run may ask for, from the most closed: "none" (no
// network), "packages" (the language's package registries) and
// "allowlist" (network.allowlist). They are egress.Tiers.
const (
	TierNone      = "none"
	TierPackages  = "packages"
	TierAllowlist = "allowlist"
)

// Network bounds the network access of sandboxes. A sandbox with access
// still has no network interface but loopback; its one way out is the
// server's egress proxy for it (internal/egress).
type Network struct {
	// MaxTier is the most a run or session may ask for: none (the
	// default), packages or allowlist.
	MaxTier string `json:"max_tier"`
	// Allowlist are the hosts of the allowlist tier: names, or
	// "*.example.com" for the names under example.com.
	Allowlist []string `json:"allowlist"`
	// PrivateHosts are hosts ("host" or "host:port") that may be reached
	// although they are (or resolve to) loopback, link-local or private
	// addresses: a private package mirror. Nothing else at such an address
	// is ever dialled.
	PrivateHosts []string `json:"private_hosts"`
	// MaxMB bounds the megabytes one sandbox sends and receives through
	// the proxy.
	MaxMB int `json:"max_mb"`
	// MaxConnections bounds the connections one sandbox opens through the
	// proxy.
	MaxConnections int `json:"max_connections"`
	// Secrets are credentials the proxy writes into requests to their
	// hosts; a run names the ones it needs and holds only placeholders.
	// Set in the configuration file only (no environment variable or flag).
	Secrets []Secret `json:"secrets"`
	// ApprovableHosts are hosts a run's user may approve when the proxy
	// denies them: names, "*.example.com" for the names under it, or
	// "host:port" for a host on a private address reached on that port
	// (as network.private_hosts once approved). A run denied such a host
	// asks the user through the MCP client; an approval holds for the
	// principal for ApprovalTTLSeconds.
	ApprovableHosts []string `json:"approvable_hosts"`
	// ApprovalTTLSeconds is how long a user's approval of a host lasts.
	ApprovalTTLSeconds int `json:"approval_ttl_seconds"`
}

// RegistryURL returns the registry URL held by the packages setting named
// setting ("pypi_index_url"), the one a package manager of the language
// registry installs from.
func (p Packages) RegistryURL(setting string) (string, bool) {
	u, ok := p.registries()[setting]
	return u, ok
}

// RegistrySettings are the names of the packages settings that hold a
// registry URL, sorted.
func (p Packages) RegistrySettings() []string { return slices.Sorted(maps.Keys(p.registries())) }

// registries are the packages settings that hold a registry URL, by name.
func (p Packages) registries() map[string]string {
	return map[string]string{"pypi_index_url": p.PypiIndexURL, "npm_registry_url": p.NpmRegistryURL}
}

// Packages configures package installs (run_code's and create_session's
// packages, install_packages).
type Packages struct {
	// PypiIndexURL is the PEP 503 simple index pip installs from.
	PypiIndexURL string `json:"pypi_index_url"`
	// NpmRegistryURL is the registry npm installs from.
	NpmRegistryURL string `json:"npm_registry_url"`
	// ExtraHosts are more hosts the packages tier allows (where a mirror
	// serves its files from another host than its index).
	ExtraHosts []string `json:"extra_hosts"`
	// ExtraCACert is a PEM file of certificates pip and npm trust besides
	// the usual ones (a mirror with a private CA).
	ExtraCACert string `json:"extra_ca_cert"`
	// CacheDir holds installed packages, one directory per set of packages
	// and registry; sandboxes see it read-only. Empty means
	// mcp-code-runner/packages in the user's cache directory.
	CacheDir string `json:"cache_dir"`
	// TimeoutSeconds bounds one install.
	TimeoutSeconds int `json:"timeout_seconds"`
	// MaxPackages bounds the packages of one request.
	MaxPackages int `json:"max_packages"`
	// MaxMB bounds the size of one install (the installer's workspace).
	MaxMB int `json:"max_mb"`
}

// Metrics configures the Prometheus endpoint. It is off unless Addr is set
// or OnHTTPListener is true.
type Metrics struct {
	// Addr is a separate listener serving only /metrics, without
	// authentication (keep it on loopback or a private network), e.g.
	// 127.0.0.1:9464.
	Addr string `json:"addr"`
	// OnHTTPListener also serves /metrics on the MCP HTTP listener, behind
	// the same authentication as /mcp and to operator tokens only (the
	// series name every principal).
	OnHTTPListener bool `json:"on_http_listener"`
	// MaxPrincipals caps the distinct principal label values; later
	// principals are counted as "other".
	MaxPrincipals int `json:"max_principals"`
}

// Enabled reports whether metrics are served anywhere.
func (m Metrics) Enabled() bool { return m.Addr != "" || m.OnHTTPListener }

// Audit configures the audit log: one JSON line per tool call that runs
// code or touches a session's files.
type Audit struct {
	// Path is the file the lines are appended to, "-" for standard output
	// (HTTP serving only), or "" for no audit log.
	Path string `json:"path"`
}

// Quotas bound each principal's share of the server, so that one client
// cannot starve the others. 0 means no quota of that kind: the server-wide
// limit alone applies.
type Quotas struct {
	// ConcurrentRuns caps one principal's runs in flight (run_code,
	// executions, session runs); the server-wide cap is max_concurrent_runs.
	ConcurrentRuns int `json:"concurrent_runs"`
	// Sessions caps one principal's live sessions; the server-wide cap is
	// sessions.max_sessions.
	Sessions int `json:"sessions"`
	// PausedSessions caps one principal's paused sessions (0: no cap
	// besides sessions.max_sessions); they do not count against Sessions.
	PausedSessions int `json:"paused_sessions"`
	// ExecutionsKept caps one principal's executions, running or kept after
	// the end; its oldest ended ones are forgotten first. The server-wide
	// cap is executions.max_kept.
	ExecutionsKept int `json:"executions_kept"`
	// OutputStoreMB caps one principal's kept full outputs; its oldest go
	// first, never another principal's. The server-wide cap is
	// output_store_mb.
	OutputStoreMB int `json:"output_store_mb"`
	// ArtifactStoreMB caps one principal's kept artifacts, likewise; the
	// server-wide cap is artifacts.store_mb.
	ArtifactStoreMB int `json:"artifact_store_mb"`
}

// The sandbox backends.
const (
	// BackendAuto is crun where the server runs as root on Linux beside a
	// local Docker daemon with overlay2 storage and crun, not under gVisor;
	// docker elsewhere. The server logs which, and why.
	BackendAuto       = "auto"
	BackendDocker     = "docker"
	BackendKubernetes = "kubernetes"
	BackendCrun       = "crun"
)

// Kubernetes configures the kubernetes backend: each sandbox is a Pod in
// Namespace, reached through the API server.
// GVisor configures the sandboxes of isolation gvisor.
type GVisor struct {
	// Runsc is gVisor's runtime on the crun backend; `make gvisor`
	// (scripts/ensure-gvisor.sh) builds the pinned version into
	// DefaultRunsc.
	Runsc string `json:"runsc"`
	// Platform is how gVisor's kernel intercepts its programs' system
	// calls: systrap (the default; needs no KVM), ptrace or kvm.
	Platform string `json:"platform"`
	// DockerRuntime is the name the docker backend's daemon has runsc
	// registered under (scripts/ensure-gvisor.sh registers "runsc").
	DockerRuntime string `json:"docker_runtime"`
	// RuntimeClassName is the RuntimeClass of the kubernetes backend's
	// gVisor pods, whose handler is runsc in the nodes' container runtime.
	RuntimeClassName string `json:"runtime_class_name"`
	// RequiredFor are the principals (token names) whose every sandbox
	// runs under gVisor, whatever isolation is.
	RequiredFor []string `json:"required_for"`
}

// DefaultRunsc is where scripts/ensure-gvisor.sh installs runsc.
const DefaultRunsc = "/var/lib/mcp-code-runner/gvisor/runsc"

// The isolations (Config.Isolation).
const (
	IsolationContainer = "container"
	IsolationGVisor    = "gvisor"
)

// IsolationFor is the isolation of principal's sandboxes at the least:
// Isolation, or gvisor for the principals of GVisor.RequiredFor.
func (c Config) IsolationFor(principal string) string {
	if slices.Contains(c.GVisor.RequiredFor, principal) {
		return IsolationGVisor
	}
	if c.Isolation == "" {
		return IsolationContainer
	}
	return c.Isolation
}

type Kubernetes struct {
	// Kubeconfig is the kubeconfig file; empty means the in-cluster
	// configuration when the server runs in a Pod, else $KUBECONFIG or
	// ~/.kube/config.
	Kubeconfig string `json:"kubeconfig"`
	// Context picks a kubeconfig context other than the current one.
	Context string `json:"context"`
	// Namespace holds the sandbox pods; it should carry the Pod Security
	// labels of the "restricted" level (deploy/kubernetes does that).
	Namespace string `json:"namespace"`
	// AgentImage holds the static agent at /agent (deploy/kubernetes/agent.Dockerfile;
	// `make k8s-images` makes one for the test cluster).
	AgentImage string `json:"agent_image"`
	// ImagePullPolicy of the runtime and agent images: Always,
	// IfNotPresent or Never; empty means the cluster's default.
	ImagePullPolicy string `json:"image_pull_policy"`
	// RuntimeClassName runs sandbox pods under a RuntimeClass (gVisor, Kata).
	RuntimeClassName string `json:"runtime_class_name"`
	// NodeSelector entries are KEY=VALUE.
	NodeSelector []string `json:"node_selector"`
	// Tolerations entries are KEY[=VALUE]:EFFECT (EFFECT NoSchedule,
	// PreferNoSchedule or NoExecute; without a value the key only must
	// match).
	Tolerations []string `json:"tolerations"`
	// ImagePullSecrets name Secrets in Namespace for private registries.
	ImagePullSecrets []string `json:"image_pull_secrets"`
	// EphemeralStorageMB is each pod's disk (the agent and the container
	// log; the workspace and /tmp are memory).
	EphemeralStorageMB int `json:"ephemeral_storage_mb"`
	// StartTimeoutSeconds bounds the wait for a pod to run (scheduling,
	// image pull, start); past it the pod is deleted and the error says
	// what it was waiting for.
	StartTimeoutSeconds int `json:"start_timeout_seconds"`
}

// Sessions configures stateful sessions: long-lived sandboxes whose files
// (and, for Python and JavaScript, interpreter state) persist across calls.
type Sessions struct {
	// MaxSessions caps live sessions on this server.
	MaxSessions int `json:"max_sessions"`
	// IdleTimeoutSeconds closes a session unused this long (default).
	IdleTimeoutSeconds int `json:"idle_timeout_seconds"`
	// MaxIdleTimeoutSeconds is the most a create_session may ask for.
	MaxIdleTimeoutSeconds int `json:"max_idle_timeout_seconds"`
	// MaxLifeSeconds closes a session this old, however busy.
	MaxLifeSeconds int `json:"max_life_seconds"`
	// ReplayMaxCells and ReplayMaxBytes bound a session's replay log: the
	// cells (code run in its interpreter) that fork_session replays in a
	// new sandbox to rebuild the interpreter's state. A session past
	// either bound keeps running, but cannot be forked.
	ReplayMaxCells int `json:"replay_max_cells"`
	ReplayMaxBytes int `json:"replay_max_bytes"`
	// IdlePauseSeconds pauses a session unused this long (0: never): its
	// workspace is kept on disk and its sandbox removed; the next call
	// resumes it by replaying its cells, or, where its sandbox was
	// checkpointed (CheckpointTools), by restoring it.
	IdlePauseSeconds int `json:"idle_pause_seconds"`
	// CheckpointTools is the directory of the crun and criu (Debian
	// trixie's, scripts/checkpoint-tools.sh) with which the crun backend
	// checkpoints a paused session's sandbox, its processes' memory and
	// its files, and restores it on its next call; "" is
	// /var/lib/mcp-code-runner/checkpoint-tools, "off" never checkpoints.
	// Without working tools a pause keeps the files and replays the cells.
	CheckpointTools string `json:"checkpoint_tools"`
	// Spares keeps, per session language ("python=1" entries; languages
	// with a kernel), sandboxes made ahead with the interpreter started,
	// for sessions without network, packages or secrets: create_session,
	// fork_session and a resume take one instead of starting a sandbox.
	Spares []string `json:"spares"`
}

// SparesFor returns how many spare session sandboxes of language to keep.
func (s Sessions) SparesFor(language string) int {
	return entryFor(s.Spares, language, 0)
}

// Artifacts configures the files that runs create or change, returned with
// their results.
type Artifacts struct {
	// MaxFiles is the most files returned with content per run.
	MaxFiles int `json:"max_files"`
	// MaxFileBytes is the largest file returned.
	MaxFileBytes int `json:"max_file_bytes"`
	// MaxTotalBytes bounds all files of one run.
	MaxTotalBytes int `json:"max_total_bytes"`
	// InlineImageBytes is the largest image returned as an image content
	// block; larger images come as resource links.
	InlineImageBytes int `json:"inline_image_bytes"`
	// RetentionSeconds is how long artifacts stay readable as resources.
	RetentionSeconds int `json:"retention_seconds"`
	// StoreMB bounds the memory of all kept artifacts; oldest go first.
	StoreMB int `json:"store_mb"`
}

// Executions configures start_execution: runs that outlive a request.
type Executions struct {
	// MaxDurationSeconds is the longest an execution may run, and its
	// default time limit.
	MaxDurationSeconds int `json:"max_duration_seconds"`
	// RetentionSeconds is how long a finished execution stays readable.
	RetentionSeconds int `json:"retention_seconds"`
	// MaxWaitSeconds is the longest get_execution may wait for completion.
	MaxWaitSeconds int `json:"max_wait_seconds"`
	// MaxKept caps the executions remembered; the oldest finished go first.
	MaxKept int `json:"max_kept"`
	// TaskMaxTTLSeconds is how long an MCP task (a task-augmented run_code)
	// is kept from its creation: the TTL a task gets when its client asks
	// for none, and the most a client may ask for. A task still running at
	// its TTL is cancelled and forgotten.
	TaskMaxTTLSeconds int `json:"task_max_ttl_seconds"`
}

// Pool configures the warm pool: sandboxes started ahead of need, each used
// for exactly one run.
type Pool struct {
	// Size is the number of idle sandboxes kept per language; 0 means every
	// run takes the cold path (create, run, remove).
	Size int `json:"size"`
	// Sizes overrides Size per language, as "python=4" entries.
	Sizes []string `json:"sizes"`
	// MaxSize is how many idle sandboxes a language's pool may grow to
	// while runs wait for it; it shrinks back to its size once the load is
	// gone. Not above the size, the pool does not grow.
	MaxSize int `json:"max_size"`
	// MaxSizes overrides MaxSize per language, as "python=50" entries.
	MaxSizes []string `json:"max_sizes"`
	// ShrinkAfterSeconds is how long a grown pool must go without running
	// dry before it shrinks, one sandbox every two seconds.
	ShrinkAfterSeconds int `json:"shrink_after_seconds"`
	// ReserveMemoryMB is the host memory a pool must leave available when
	// it grows, counting the new sandbox at its memory limit.
	ReserveMemoryMB int `json:"reserve_memory_mb"`
	// ReservePids is the number of tasks a pool must leave to the host's
	// kernel ceiling when it grows, counting the new sandbox at its pids
	// limit.
	ReservePids int `json:"reserve_pids"`
	// MaxWaiters bounds the runs waiting for one language's empty pool.
	MaxWaiters int `json:"max_waiters"`
	// MaxIdleSeconds is how long a sandbox may wait idle before it is replaced.
	MaxIdleSeconds int `json:"max_idle_seconds"`
	// CreateConcurrency bounds sandbox creations in flight.
	CreateConcurrency int `json:"create_concurrency"`
	// RefillDelayMs is how long the replacement of a sandbox handed out
	// may wait for its run to end while others of its language are idle
	// (creating a container competes with the run for CPU); 0 replaces at
	// once.
	RefillDelayMs int `json:"refill_delay_ms"`
	// ReleaseGraceMs is how long, after a warm run ends, its sandbox's
	// removal and (while others of its language are idle) its
	// replacement's creation wait, so that they do not compete for CPU
	// with the run's answer on its way to the client; 0 starts both at
	// once.
	ReleaseGraceMs int `json:"release_grace_ms"`
}

// SizeFor returns the pool size of a language.
func (p Pool) SizeFor(language string) int {
	return entryFor(p.Sizes, language, p.Size)
}

// MaxSizeFor returns how far a language's pool may grow: never below its
// size.
func (p Pool) MaxSizeFor(language string) int {
	return max(p.SizeFor(language), entryFor(p.MaxSizes, language, p.MaxSize))
}

// entryFor returns the value of language's "language=N" entry, else def.
func entryFor(entries []string, language string, def int) int {
	for _, e := range entries {
		name, n, ok := strings.Cut(e, "=")
		if ok && strings.TrimSpace(name) == language {
			v, _ := strconv.Atoi(strings.TrimSpace(n))
			return v
		}
	}
	return def
}

// HTTP configures the Streamable HTTP transport.
type HTTP struct {
	// AllowedOrigins are extra Origin values accepted besides same-host ones.
	AllowedOrigins []string `json:"allowed_origins"`
	// AllowedHosts are extra Host header values accepted besides loopback.
	AllowedHosts []string `json:"allowed_hosts"`
	// MaxBodyBytes caps a request body.
	MaxBodyBytes int64 `json:"max_body_bytes"`
	// AuthTokens are bearer tokens accepted on every request, each
	// "NAME=TOKEN" (NAME owns the work made with it) or a bare TOKEN (named
	// token-<first 8 hex digits of its SHA-256>); a listener on a
	// non-loopback address requires at least one (or OAuth).
	AuthTokens []string `json:"auth_tokens"`
	// Operators names the tokens (by NAME) with the operator role: they may
	// list and cancel every principal's sessions and executions.
	Operators []string `json:"operators"`
	// RatePerMinute limits requests per client (token or address) on a
	// listener with tokens or OAuth, or beyond loopback; a loopback listener
	// without them has one client and no limit.
	RatePerMinute int `json:"rate_per_minute"`
	// ReusePort lets several servers on one host listen on the same port
	// (SO_REUSEPORT): the kernel spreads new connections among them, and
	// a server leaves the group as its shutdown begins, so replicas on one
	// machine share an address without a load balancer in front.
	ReusePort bool `json:"reuse_port"`
	// HealthSocket, when set, is a Unix socket on which /healthz and
	// /readyz are served without authentication: a probe there reaches
	// this process and no other, even when several share the port
	// (`mcp-code-runner healthcheck --socket PATH`).
	HealthSocket string `json:"health_socket"`
	// PublicURL is the server's /mcp URL as clients reach it: the OAuth
	// resource identifier.
	PublicURL string `json:"public_url"`
	// OAuthIssuer, when set, makes the server an OAuth 2.1 resource server
	// of that authorization server (RFC 9728 metadata is served).
	OAuthIssuer string `json:"oauth_issuer"`
	// OAuthIntrospectionURL is the issuer's RFC 7662 introspection endpoint.
	OAuthIntrospectionURL string `json:"oauth_introspection_url"`
	// OAuthClientID and OAuthClientSecret authenticate introspection calls.
	OAuthClientID     string `json:"oauth_client_id"`
	OAuthClientSecret string `json:"oauth_client_secret"`
	// OAuthScopes are required of every token.
	OAuthScopes []string `json:"oauth_scopes"`
	// OAuthOperatorScope, when set, gives the operator role to OAuth tokens
	// that carry this scope.
	OAuthOperatorScope string `json:"oauth_operator_scope"`
}

// Default returns the built-in configuration.
func Default() Config {
	return Config{
		CodeMode: CodeMode{CallTimeoutSeconds: 60, MaxResultBytes: 4 << 20, MaxCallsPerRun: 1000, CallsPerMinute: 600,
			MaxConcurrentCalls: 8},
		Isolation: IsolationContainer,
		GVisor:    GVisor{Runsc: DefaultRunsc, Platform: "systrap", DockerRuntime: "runsc", RuntimeClassName: "gvisor"},
		Limits:    defaultLimits(),
		Backend:   BackendAuto,
		Kubernetes: Kubernetes{
			Namespace:           "mcp-code-runner-sandboxes",
			EphemeralStorageMB:  256,
			StartTimeoutSeconds: 60,
		},
		FavorCgroupChanges:     true,
		MaxConcurrentRuns:      8,
		QueueTimeoutSeconds:    30,
		OutputRetentionSeconds: 3600,
		OutputStoreMB:          64,
		SweepIntervalSeconds:   60,
		ShutdownGraceSeconds:   10,
		HTTP: HTTP{
			MaxBodyBytes:  16 << 20,
			RatePerMinute: 600,
		},
		Executions: Executions{
			MaxDurationSeconds: 1800,
			RetentionSeconds:   3600,
			MaxWaitSeconds:     60,
			MaxKept:            1000,
			TaskMaxTTLSeconds:  3600,
		},
		Artifacts: Artifacts{
			MaxFiles:         20,
			MaxFileBytes:     8 << 20,
			MaxTotalBytes:    16 << 20,
			InlineImageBytes: 2 << 20,
			RetentionSeconds: 3600,
			StoreMB:          256,
		},
		Sessions: Sessions{
			MaxSessions:           16,
			IdleTimeoutSeconds:    600,
			MaxIdleTimeoutSeconds: 3600,
			MaxLifeSeconds:        4 * 3600,
			ReplayMaxCells:        1000,
			ReplayMaxBytes:        1 << 20,
		},
		Metrics: Metrics{MaxPrincipals: 20},
		Store: Store{
			Backend: StoreEmbedded,
			Etcd:    Etcd{Prefix: "/mcp-code-runner/", DialTimeoutSeconds: 5},
		},
		Network: Network{MaxTier: TierNone, MaxMB: 256, MaxConnections: 256, ApprovalTTLSeconds: 3600},
		Images:  Images{WaitSeconds: 900},
		Packages: Packages{
			PypiIndexURL:   "https://pypi.org/simple",
			NpmRegistryURL: "https://registry.npmjs.org/",
			ExtraHosts:     []string{"files.pythonhosted.org"},
			TimeoutSeconds: 300,
			MaxPackages:    32,
			MaxMB:          512,
		},
		// Warm sandboxes for the languages assistants use most; the others
		// take the cold path unless the operator sizes their pools.
		Pool: Pool{
			Size:               0,
			Sizes:              []string{"python=2", "javascript=2", "bash=2", "typescript=1"},
			MaxSize:            16,
			ShrinkAfterSeconds: 60,
			ReserveMemoryMB:    1024,
			ReservePids:        1024,
			MaxWaiters:         64,
			MaxIdleSeconds:     1800,
			CreateConcurrency:  2,
			RefillDelayMs:      2000,
		},
	}
}

// defaultLimits are the limits of a run that asks for none.
func defaultLimits() Limits {
	return Limits{
		TimeoutSeconds:        10,
		MaxTimeoutSeconds:     60,
		CompileTimeoutSeconds: 30,
		MemoryMB:              256,
		CPUs:                  1,
		PidsLimit:             128,
		WorkspaceMB:           64,
		TmpMB:                 64,
		NoFile:                1024,
		FileSizeMB:            32,
		InlineOutputBytes:     16 << 10,
		MaxOutputBytes:        1 << 20,
		MaxCodeBytes:          1 << 20,
		MaxStdinBytes:         1 << 20,
		MaxFiles:              32,
		MaxFileBytes:          1 << 20,
		MaxTotalFileBytes:     8 << 20,
		MaxArgs:               64,
		MaxEnv:                64,
	}
}

// Load reads the optional JSON file at path over the defaults, then applies
// MCR_* environment variables (see EnvNames).
func Load(path string, getenv func(string) string) (Config, error) {
	c := Default()
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return c, fmt.Errorf("reading config file: %w", err)
		}
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return c, fmt.Errorf("config file %s: %w (see docs/OPERATORS.md#configuration for the fields)", path, err)
		}
	}
	if err := applyEnv(&c, getenv); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// EnvNames lists every environment variable Load reads, with the field it sets.
func EnvNames() map[string]string {
	out := map[string]string{}
	walkFields(reflect.ValueOf(&Config{}).Elem(), "", func(name string, _ reflect.Value) {
		out[envName(name)] = name
	})
	return out
}

func envName(field string) string {
	return "MCR_" + strings.ToUpper(strings.ReplaceAll(field, ".", "_"))
}

// walkFields calls fn for every scalar field with its dotted JSON name
// ("limits.timeout_seconds").
func walkFields(v reflect.Value, prefix string, fn func(name string, f reflect.Value)) {
	t := v.Type()
	for i := range t.NumField() {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		name := tag
		if prefix != "" {
			name = prefix + "." + tag
		}
		f := v.Field(i)
		if f.Kind() == reflect.Struct {
			walkFields(f, name, fn)
			continue
		}
		if f.Kind() == reflect.Slice && f.Type().Elem().Kind() != reflect.String || f.Kind() == reflect.Map {
			continue // a list of records (network.secrets) or a map is the file's alone
		}
		fn(name, f)
	}
}

func applyEnv(c *Config, getenv func(string) string) error {
	var errs []error
	walkFields(reflect.ValueOf(c).Elem(), "", func(name string, f reflect.Value) {
		raw := getenv(envName(name))
		if raw == "" {
			return
		}
		if err := setField(f, raw); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", envName(name), raw, err))
		}
	})
	return errors.Join(errs...)
}

func setField(f reflect.Value, raw string) error {
	switch f.Kind() {
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return fmt.Errorf("want a whole number")
		}
		f.SetInt(n)
	case reflect.Float64:
		x, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return fmt.Errorf("want a number")
		}
		f.SetFloat(x)
	case reflect.String:
		f.SetString(raw)
	case reflect.Bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return fmt.Errorf("want true or false")
		}
		f.SetBool(b)
	case reflect.Slice:
		var parts []string
		for p := range strings.SplitSeq(raw, ",") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		f.Set(reflect.ValueOf(parts))
	default:
		return fmt.Errorf("unsupported setting type %s", f.Kind())
	}
	return nil
}

// QueueTimeout returns QueueTimeoutSeconds as a duration.
func (c Config) QueueTimeout() time.Duration {
	return time.Duration(c.QueueTimeoutSeconds) * time.Second
}

// OutputRetention returns OutputRetentionSeconds as a duration.
func (c Config) OutputRetention() time.Duration {
	return time.Duration(c.OutputRetentionSeconds) * time.Second
}

// NodeSelectorMap returns NodeSelector as a map.
func (k Kubernetes) NodeSelectorMap() (map[string]string, error) {
	if len(k.NodeSelector) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, e := range k.NodeSelector {
		key, value, ok := strings.Cut(e, "=")
		if !ok || strings.TrimSpace(key) == "" {
			return nil, fmt.Errorf("kubernetes.node_selector entry %q: want KEY=VALUE, like pool=sandboxes", e)
		}
		out[strings.TrimSpace(key)] = strings.TrimSpace(value)
	}
	return out, nil
}

// Toleration is one parsed kubernetes.tolerations entry.
type Toleration struct {
	Key, Value, Effect string
	// Exists is set when the entry gives no value: any value of Key matches.
	Exists bool
}

// ParsedTolerations returns Tolerations parsed.
func (k Kubernetes) ParsedTolerations() ([]Toleration, error) {
	var out []Toleration
	for _, e := range k.Tolerations {
		kv, effect, ok := strings.Cut(e, ":")
		switch effect {
		case "NoSchedule", "PreferNoSchedule", "NoExecute":
		default:
			ok = false
		}
		key, value, hasValue := strings.Cut(kv, "=")
		if !ok || key == "" {
			return nil, fmt.Errorf("kubernetes.tolerations entry %q: want KEY[=VALUE]:EFFECT with EFFECT NoSchedule, PreferNoSchedule or NoExecute, like sandbox=true:NoSchedule", e)
		}
		out = append(out, Toleration{Key: key, Value: value, Effect: effect, Exists: !hasValue})
	}
	return out, nil
}

package wire

// Paths and identities inside every sandbox, whatever the backend.
const (
	// WorkspacePath is the sandbox's working directory, where requests'
	// files are written and stages run.
	WorkspacePath = "/workspace"
	// SandboxUID and SandboxGID are the unprivileged user and group that
	// the agent and every stage run as (the images' "sandbox" user).
	SandboxUID = 10001
	SandboxGID = 10001
	// SandboxUser is SandboxUID:SandboxGID, as container runtimes take it.
	SandboxUser = "10001:10001"
)

// The agent's environment: what a backend sets when it starts the agent.
// Every MCR_ variable is the sandbox's and is not passed on to the stages.

// SandboxEnv marks the environment of a sandbox the server created; the
// agent refuses to run without it, so nobody starts it on a host by mistake
// (it would kill the user's processes after each stage).
const SandboxEnv = "MCR_SANDBOX"

// SocketEnv is the agent's environment variable naming a Unix socket the
// server listens on. The agent connects to it at boot, before anything else
// runs in the sandbox, and serves requests over it: one hop from the server,
// where the attached standard streams pass through the daemon and its
// container shim. If it cannot connect (a daemon in a VM, where a socket
// does not cross the file sharing), it says so with a Hello frame on
// standard output and serves there.
const SocketEnv = "MCR_SOCKET"

// ReattachEnv is the agent's environment variable, set for a session's
// sandbox, that keeps the sandbox when the server goes away: the most
// milliseconds the agent waits, keeping its interpreters and workspace,
// for a server to connect again through SocketEnv's socket (the server
// restarted and re-attaches to the session). Unset, or for an agent that
// serves its standard streams, the end of the connection ends the sandbox.
const ReattachEnv = "MCR_REATTACH_MS"

// LogEnv is the agent's environment variable naming a file, in the
// sandbox, that takes its standard output and error: the agent opens it
// itself and puts it in their place before anything else, so that a
// checkpoint of the sandbox finds the log open by a path the sandbox has
// (the server's crun backend, for a session's sandbox).
const LogEnv = "MCR_AGENT_LOG"

// PrestartEnv is the agent's environment variable that carries a Prestart as
// JSON. Like every MCR_ variable it is not passed on to the stages.
const PrestartEnv = "MCR_PRESTART"

// WarmEnv is the agent's environment variable that carries a Warm as JSON.
// Like every MCR_ variable it is not passed on to the stages.
const WarmEnv = "MCR_WARM"

// LimitsEnv is the agent's environment variable that carries Limits as
// JSON.
const LimitsEnv = "MCR_LIMITS"

// Limits are the process limits the agent applies to itself at boot, before
// anything else runs in the sandbox, so that every process there inherits
// them whatever the backend (one that cannot set them from outside still
// gets them). Zero leaves a limit as the sandbox started with it.
type Limits struct {
	// NoFile is the most files a process may have open (RLIMIT_NOFILE).
	NoFile int `json:"nofile,omitempty"`
	// FileSizeBytes is the largest file a process may write (RLIMIT_FSIZE).
	FileSizeBytes int64 `json:"fsize_bytes,omitempty"`
}

// EgressEnv is the agent's environment variable that carries an Egress as
// JSON, in a sandbox given network access.
const EgressEnv = "MCR_EGRESS"

// Egress is how a sandbox with network access reaches the server's egress
// proxy. The sandbox has no network interface but loopback: the agent
// listens on Listen (on loopback) before anything else runs there and
// relays each connection to the proxy's Unix socket at Socket, which the
// backend bind-mounts into the sandbox.
type Egress struct {
	Listen string `json:"listen"`
	Socket string `json:"socket"`
}

// EgressListen is where a sandbox's programs find the egress proxy (their
// HTTP_PROXY and HTTPS_PROXY).
const EgressListen = "127.0.0.1:3128"

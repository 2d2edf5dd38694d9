package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/outputs"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
)

// CreateSessionInput is create_session's input.
type CreateSessionInput struct {
	Language           string   `json:"language" jsonschema:"the session's language (name or alias)"`
	IdleTimeoutSeconds int      `json:"idle_timeout_seconds,omitempty" jsonschema:"close the session after this long unused; default and maximum are the operator's"`
	Network            string   `json:"network,omitempty" jsonschema:"network access of every call in the session: none (the default), packages (the language's package registries) or allowlist (the operator's hosts); at most the operator's maximum"`
	Packages           []string `json:"packages,omitempty" jsonschema:"packages to install before the session starts, e.g. requests==2.32.3 (Python) or lodash@4 (JavaScript); install_packages adds more later"`
	Secrets            []string `json:"secrets,omitempty" jsonschema:"names of the operator's secrets every call in the session may use, for the session's life: its programs see only a placeholder, in MCR_SECRET_<NAME>, and the egress proxy writes the secret into the header the operator bound it to on HTTPS requests to its hosts. Needs a network that reaches those hosts (usually allowlist); a session's run_code cannot add more"`
	Isolation          string   `json:"isolation,omitempty" jsonschema:"what stands between the session's programs and the host's kernel: container (a hardened container) or gvisor (under gVisor's kernel too, a second wall), for all its calls; at least the operator's, which a session may tighten but not loosen"`
	Tools              []string `json:"tools,omitempty" jsonschema:"names of the operator's MCP servers (code mode) whose tools every call in the session may call, through mcr_tools (Python) or mcr-tools (JavaScript, TypeScript); see run_code's tools and the resources mcr://apis/<server>"`
}

// InstallPackagesInput is install_packages' input.
type InstallPackagesInput struct {
	SessionID string   `json:"session_id" jsonschema:"the session (Python or JavaScript)"`
	Packages  []string `json:"packages" jsonschema:"packages to add, e.g. requests==2.32.3 (pip) or lodash@4 (npm); they are resolved together with the session's earlier packages"`
}

// SessionRef names a session.
type SessionRef struct {
	SessionID string `json:"session_id" jsonschema:"the id create_session returned"`
}

// SessionList is list_sessions' result.
type SessionList struct {
	Sessions []sessions.Info `json:"sessions" jsonschema:"live sessions, newest first"`
}

// WriteFileInput is write_file's input.
type WriteFileInput struct {
	SessionID string `json:"session_id" jsonschema:"the session"`
	Path      string `json:"path" jsonschema:"path relative to the workspace; parent directories are created"`
	Content   string `json:"content" jsonschema:"the content: text, or base64 when encoding is base64"`
	Encoding  string `json:"encoding,omitempty" jsonschema:"text (default) or base64"`
}

// WriteFileOutput is write_file's result.
type WriteFileOutput struct {
	Path   string `json:"path" jsonschema:"the file written"`
	Size   int    `json:"size" jsonschema:"bytes written"`
	SHA256 string `json:"sha256" jsonschema:"hex SHA-256 of the content"`
}

// ReadFileInput is read_file's input.
type ReadFileInput struct {
	SessionID string `json:"session_id" jsonschema:"the session"`
	Path      string `json:"path" jsonschema:"path relative to the workspace"`
}

// ListFilesInput is list_files' input.
type ListFilesInput struct {
	SessionID string `json:"session_id" jsonschema:"the session"`
	Path      string `json:"path,omitempty" jsonschema:"directory to list, relative to the workspace (default: all of it)"`
}

// FileList is list_files' result.
type FileList struct {
	Files []sessions.File `json:"files" jsonschema:"entries under the directory, recursively; symlinks are listed, not followed"`
}

// addSessionTools adds the tools of sessions: create, close, install
// into, list, fork and pause them, and those of their files.
func addSessionTools(s *mcp.Server, h *handlers) {
	closed := new(false)
	addTool(s, h, &mcp.Tool{
		Name:  "create_session",
		Title: "Create a session",
		Description: `Start a session: a long-lived sandbox of one language, as isolated as any
run. Pass its session_id to run_code: files written in one call are there in
the next, and in Python and JavaScript variables, functions and imports
persist too, like a notebook (the value of a last bare expression comes back
as value). Close it with close_session; it also closes itself when idle.`,
		Annotations: &mcp.ToolAnnotations{Title: "Create a session", DestructiveHint: closed, OpenWorldHint: closed},
	}, h.createSession)
	addTool(s, h, &mcp.Tool{
		Name:        "close_session",
		Title:       "Close a session",
		Description: "Close a session: its sandbox, files and interpreter state are destroyed.",
		Annotations: &mcp.ToolAnnotations{Title: "Close a session", DestructiveHint: new(true), IdempotentHint: true, OpenWorldHint: closed},
	}, h.closeSession)
	addTool(s, h, &mcp.Tool{
		Name:  "install_packages",
		Title: "Install packages in a session",
		Description: `Install packages in a live Python (pip) or JavaScript (npm) session: they
are downloaded by the server's installer through the package registry
(cached per set of packages) and appear read-only in the session, importable
by the next run_code at once. Needs the operator to allow the packages
network tier; the session's own code keeps the network it was created with.
A package that does not exist or versions that conflict come back with the
package manager's own message.`,
		Annotations: &mcp.ToolAnnotations{Title: "Install packages", DestructiveHint: new(false), IdempotentHint: true, OpenWorldHint: new(true)},
	}, h.installPackages)
	addTool(s, h, &mcp.Tool{
		Name:        "list_sessions",
		Title:       "List sessions",
		Description: "List your live sessions with their language, age, last use and expiry (an operator sees everyone's, with their owners).",
		Annotations: &mcp.ToolAnnotations{Title: "List sessions", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: closed},
	}, h.listSessions)
	addTool(s, h, &mcp.Tool{
		Name:  "fork_session",
		Title: "Fork a session",
		Description: `Fork one of your sessions: a new session of the same language, idle timeout,
network and packages, with a copy of the workspace's files and of the
interpreter's state. A Python session whose interpreter runs is forked in
place (mode "forked"): its interpreter copies itself, its live state exactly,
in the original's sandbox, whose memory and process limits the two then share
(shares_sandbox says so), and the fork works in its own copy of the files.
Otherwise (JavaScript, or no code run yet) the fork gets a sandbox of its own
and the state is rebuilt by running the original's successful cells again in
order (mode "replayed"): cells that depend on time, randomness or the network
may rebuild a different state, and a session past the operator's replay bound
(sessions.replay_max_cells, replay_max_bytes) cannot be forked that way. The
original is unchanged; each then goes its own way.`,
		Annotations: &mcp.ToolAnnotations{Title: "Fork a session", DestructiveHint: closed, OpenWorldHint: closed},
	}, h.forkSession)
	addTool(s, h, &mcp.Tool{
		Name:  "pause_session",
		Title: "Pause a session",
		Description: `Pause one of your sessions (an operator may pause anyone's): its
workspace's files are kept on the server's disk and its sandbox is removed (no
process, no memory). The next call to the session (run_code, the file tools,
install_packages, fork_session) resumes it transparently: a new sandbox, the
files restored, the interpreter state restored from a checkpoint where the
server can take one (mode "restored"), otherwise rebuilt by running its
successful cells again in order (mode "replayed"); that run's result says it
was resumed, how, and how long it took. Paused sessions count against their
own quota, not the live sessions'.`,
		Annotations: &mcp.ToolAnnotations{Title: "Pause a session", DestructiveHint: closed, IdempotentHint: true, OpenWorldHint: closed},
	}, h.pauseSession)
	addSessionFileTools(s, h)
}

// addSessionFileTools adds the tools of a session's workspace: write_file,
// read_file and list_files.
func addSessionFileTools(s *mcp.Server, h *handlers) {
	closed := new(false)
	addTool(s, h, &mcp.Tool{
		Name:        "write_file",
		Title:       "Write a file into a session",
		Description: "Write a file (text or base64 for binary) into a session's workspace, creating parent directories.",
		Annotations: &mcp.ToolAnnotations{Title: "Write a file", DestructiveHint: new(true), IdempotentHint: true, OpenWorldHint: closed},
	}, h.writeFile)
	addTool(s, h, &mcp.Tool{
		Name:        "read_file",
		Title:       "Read a file from a session",
		Description: "Read a file from a session's workspace: text comes back as text, anything else as base64. Images also come back as an image block.",
		Annotations: &mcp.ToolAnnotations{Title: "Read a file", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: closed},
	}, h.readFile)
	addTool(s, h, &mcp.Tool{
		Name:        "list_files",
		Title:       "List a session's files",
		Description: "List the files and directories in a session's workspace (or a directory in it), with types and sizes.",
		Annotations: &mcp.ToolAnnotations{Title: "List files", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: closed},
	}, h.listFiles)
}

func (h *handlers) createSession(ctx context.Context, _ *mcp.CallToolRequest, in CreateSessionInput) (*mcp.CallToolResult, sessions.Info, error) {
	info, err := h.sessions.Create(ctx, in.Language, in.IdleTimeoutSeconds, sessions.Options{Network: in.Network, Packages: in.Packages, Secrets: in.Secrets, Isolation: in.Isolation, Tools: in.Tools})
	if err != nil {
		return nil, info, err
	}
	return withSummary(resultContent(info), "session "+info.SessionID+" ("+info.Language+") is ready; pass session_id to run_code"), info, nil
}

func (h *handlers) forkSession(ctx context.Context, _ *mcp.CallToolRequest, in SessionRef) (*mcp.CallToolResult, sessions.ForkResult, error) {
	out, err := h.sessions.Fork(ctx, in.SessionID)
	if err != nil {
		return nil, out, err
	}
	return withSummary(resultContent(out), fmt.Sprintf("session %s forked into %s (%s: %d cells, %d files, %d ms)",
		out.ForkedFrom, out.Session.SessionID, out.Mode, out.CellsReplayed, out.FilesCopied, out.DurationMs)), out, nil
}

func (h *handlers) pauseSession(ctx context.Context, _ *mcp.CallToolRequest, in SessionRef) (*mcp.CallToolResult, sessions.PauseResult, error) {
	out, err := h.sessions.Pause(ctx, in.SessionID)
	if err != nil {
		return nil, out, err
	}
	return withSummary(resultContent(out), fmt.Sprintf("session %s paused (%d files kept, %d cells to replay on its next call)", out.SessionID, out.FilesKept, out.CellsToRun)), out, nil
}

func (h *handlers) installPackages(ctx context.Context, _ *mcp.CallToolRequest, in InstallPackagesInput) (*mcp.CallToolResult, sessions.InstallResult, error) {
	out, err := h.sessions.InstallPackages(ctx, in.SessionID, in.Packages)
	if err != nil {
		return nil, out, err
	}
	how := "installed"
	if out.Cached {
		how = "installed from the cache"
	}
	return withSummary(resultContent(out), fmt.Sprintf("%d packages %s in session %s; import them in run_code", len(out.Packages), how, out.SessionID)), out, nil
}

func (h *handlers) closeSession(ctx context.Context, _ *mcp.CallToolRequest, in SessionRef) (*mcp.CallToolResult, sessions.Info, error) {
	info, err := h.sessions.Close(ctx, in.SessionID)
	if err != nil {
		return nil, info, err
	}
	return withSummary(resultContent(info), "session "+info.SessionID+" closed"), info, nil
}

func (h *handlers) listSessions(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, SessionList, error) {
	out := SessionList{Sessions: h.sessions.List(ctx)}
	return resultContent(out), out, nil
}

func (h *handlers) writeFile(ctx context.Context, _ *mcp.CallToolRequest, in WriteFileInput) (*mcp.CallToolResult, WriteFileOutput, error) {
	f := engine.InputFile{Path: in.Path, Content: in.Content, Encoding: in.Encoding}
	if err := h.sessions.WriteFiles(ctx, in.SessionID, []engine.InputFile{f}); err != nil {
		return nil, WriteFileOutput{}, err
	}
	data, _ := engine.DecodeFile(f, h.eng.Config().Limits)
	sum := sha256.Sum256(data)
	out := WriteFileOutput{Path: in.Path, Size: len(data), SHA256: hex.EncodeToString(sum[:])}
	return resultContent(out), out, nil
}

func (h *handlers) readFile(ctx context.Context, _ *mcp.CallToolRequest, in ReadFileInput) (*mcp.CallToolResult, sessions.File, error) {
	a, err := h.sessions.ReadFile(ctx, in.SessionID, in.Path)
	if err != nil {
		return nil, sessions.File{}, err
	}
	sum := sha256.Sum256(a.Data)
	out := sessions.File{Path: a.Path, Type: "file", Size: a.Size, SHA256: hex.EncodeToString(sum[:])}
	mt := outputs.MIMEType(a.Path, a.Data)
	if utf8.Valid(a.Data) && !outputs.IsImage(mt) || mt == "image/svg+xml" && utf8.Valid(a.Data) {
		out.Encoding, out.Content = "text", string(a.Data)
	} else {
		out.Encoding, out.Content = "base64", base64.StdEncoding.EncodeToString(a.Data)
	}
	res := resultContent(out)
	if outputs.IsImage(mt) && len(a.Data) <= h.eng.Config().Artifacts.InlineImageBytes {
		res.Content = append(res.Content, &mcp.ImageContent{Data: a.Data, MIMEType: mt})
	}
	return res, out, nil
}

func (h *handlers) listFiles(ctx context.Context, _ *mcp.CallToolRequest, in ListFilesInput) (*mcp.CallToolResult, FileList, error) {
	files, err := h.sessions.ListFiles(ctx, in.SessionID, in.Path)
	if err != nil {
		return nil, FileList{}, err
	}
	out := FileList{Files: files}
	return resultContent(out), out, nil
}

func withSummary(res *mcp.CallToolResult, summary string) *mcp.CallToolResult {
	res.Content = append([]mcp.Content{&mcp.TextContent{Text: summary}}, res.Content...)
	return res
}

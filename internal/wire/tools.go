package wire

import "encoding/json"

// Frames of code mode: a program in the sandbox calls a tool of an MCP
// server the run was granted; the agent forwards the call to the server,
// which brokers it and answers with the result. Both carry JSON and stage 0.
const (
	// KindToolCall (agent to engine) carries a ToolCall.
	KindToolCall byte = 'T'
	// KindToolResult (engine to agent) carries a ToolResult.
	KindToolResult byte = 'U'
)

// ToolsEnv is the stage environment variable, set by the agent in a run
// given tools, that names the Unix socket the sandbox's programs send their
// calls to (the mcr_tools and mcr-tools libraries read it).
const ToolsEnv = "MCR_TOOLS_SOCKET"

// ToolsTypesEnv is the stage environment variable, set with ToolsEnv, that
// names the TypeScript declarations of the run's tools (the compile stage
// gives them to tsc).
const ToolsTypesEnv = "MCR_TOOLS_TYPES"

// Tools is what a run given tools needs in its sandbox: the servers it was
// granted and the libraries that call them (files relative to the
// directory the agent makes for them; see the agent's tools.go).
type Tools struct {
	Servers []string `json:"servers"`
	Files   []File   `json:"files,omitempty"`
}

// ToolCall is one call a program made: ID is the agent's, unique among its
// calls in flight; Arguments is a JSON object.
type ToolCall struct {
	ID        uint64          `json:"id"`
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// ToolResult answers the ToolCall of the same ID: Result is the tool's
// CallToolResult as JSON, or Error says why there is none (the call was
// refused, the server failed, it timed out).
type ToolResult struct {
	ID     uint64          `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

package docker

import (
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/agentconn"
)

// Channel names the channel sb's agent serves on: "socket", "streams", or
// "unknown" while it boots.
func Channel(sb sandbox.Sandbox) string {
	s := sb.(*agentconn.Sandbox).Link().(*link).stdout
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.channel {
	case channelSocket:
		return "socket"
	case channelStdio:
		return "streams"
	}
	return "unknown"
}

// BreakSockets makes the sockets of the sandboxes created next unreachable
// (removed before the container starts), or stops doing so.
func BreakSockets(on bool) {
	testHookListening = nil
	if on {
		// Closing the listener removes the socket, not its directory,
		// which the sandbox still mounts.
		testHookListening = func(l *agentListener) { _ = l.ln.Close() }
	}
}

// SocketsUsable exposes socketsUsable.
var SocketsUsable = socketsUsable

// CrossBuildAgent and CheckPlatform expose the agent's platform handling.
var (
	CrossBuildAgent = crossBuildAgent
	CheckPlatform   = checkPlatform
)

// ModuleCacheSource exposes moduleCacheSource.
var ModuleCacheSource = moduleCacheSource

// Disconnect ends the server's side of sb's agent connection and its
// attached streams without removing it, as a server killed with -9 does.
func Disconnect(sb sandbox.Sandbox) {
	l := sb.(*agentconn.Sandbox).Link().(*link)
	if c := l.stdout.socket(); c != nil {
		c.Close()
	}
	if l.att.Conn != nil {
		l.att.Close()
	}
}

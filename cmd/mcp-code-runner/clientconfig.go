package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
)

func init() { subcommands = append(subcommands, newClientConfigCmd) }

// mcpServerName is the name clients list this server under.
const mcpServerName = "code-runner"

// inspectorCommand runs the MCP Inspector with the Node.js it needs from npm
// (the version e2e/tests/inspector.test.mjs tests against).
const inspectorCommand = "npx -y -p node@22 -p @modelcontextprotocol/inspector@2.12.0 -- mcp-inspector"

// defaultHTTPAddr is where `make run` serves Streamable HTTP.
const defaultHTTPAddr = "127.0.0.1:8080"

// clientSetup is what the client configuration is rendered from.
type clientSetup struct {
	// GOOS is the operating system the clients run on; it decides the
	// configuration files' paths and how a command line is quoted.
	GOOS string
	// Home is the user's home directory on that system; Getenv reads its
	// environment (APPDATA, XDG_CONFIG_HOME).
	Home   string
	Getenv func(string) string
	// Binary is the server binary clients launch (an absolute path: clients
	// start it from elsewhere); ServeArgs are its arguments on stdio.
	Binary    string
	ServeArgs []string
	// Addr is the HOST:PORT that `serve --http` listens on.
	Addr string
}

// clientPaths are the configuration files of the desktop clients on one
// operating system.
type clientPaths struct {
	ClaudeDesktop string
	Cursor        string
}

// clientConfigPaths returns where Claude Desktop and Cursor read their MCP
// servers from on goos, for the user whose home is home.
func clientConfigPaths(goos string, getenv func(string) string, home string) clientPaths {
	join := func(parts ...string) string {
		if goos == "windows" {
			return strings.Join(parts, `\`)
		}
		return strings.Join(parts, "/")
	}
	var desktop string
	switch goos {
	case "darwin":
		desktop = join(home, "Library", "Application Support", "Claude", "claude_desktop_config.json")
	case "windows":
		appData := getenv("APPDATA")
		if appData == "" {
			appData = join(home, "AppData", "Roaming")
		}
		desktop = join(appData, "Claude", "claude_desktop_config.json")
	default:
		config := getenv("XDG_CONFIG_HOME")
		if config == "" {
			config = join(home, ".config")
		}
		desktop = join(config, "Claude", "claude_desktop_config.json")
	}
	return clientPaths{ClaudeDesktop: desktop, Cursor: join(home, ".cursor", "mcp.json")}
}

// quoteArg quotes s as one word of a command line on goos: POSIX shell
// quoting, or double quotes on Windows (PowerShell and cmd).
func quoteArg(goos, s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n\"'\\$`!*?[]{}()<>|&;#~%^") {
		return s
	}
	if goos == "windows" {
		if !strings.ContainsAny(s, " \t\"") && s != "" {
			return s // backslashes are path separators there
		}
		return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func quoteCommand(goos string, words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = quoteArg(goos, w)
	}
	return strings.Join(q, " ")
}

// indentedJSON renders v as two-space indented JSON, HTML characters as they
// are.
func indentedJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // maps and strings only
	return strings.TrimSuffix(b.String(), "\n")
}

// stdioEntry is a client's entry for a server it launches.
type stdioEntry struct {
	Type    string   `json:"type,omitempty"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

type httpEntry struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// writeClientConfig prints how to connect each MCP client to the server.
func writeClientConfig(w io.Writer, s clientSetup) {
	paths := clientConfigPaths(s.GOOS, s.Getenv, s.Home)
	url := "http://" + s.Addr + "/mcp"
	stdio := append([]string{s.Binary}, s.ServeArgs...)
	stdioLine := quoteCommand(s.GOOS, stdio)
	serveHTTP := quoteCommand(s.GOOS, append([]string{s.Binary}, append(s.ServeArgs, "--http", s.Addr)...))

	fmt.Fprintf(w, "== mcp-code-runner: connecting MCP clients ==\n\n")
	fmt.Fprintf(w, "Streamable HTTP endpoint (`%s`):\n  %s\n", serveHTTP, url)
	host, _, err := net.SplitHostPort(s.Addr)
	if err != nil {
		host = s.Addr
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		fmt.Fprintf(w, `  %s is not a loopback address: the server then requires --auth-token (or
  MCR_AUTH_TOKEN), and clients must send "Authorization: Bearer <token>"
  (Claude Code: add --header "Authorization: Bearer <token>"; VS Code: add
  "headers": {"Authorization": "Bearer <token>"} to the http entry).
`, host)
		if ip != nil && ip.IsUnspecified() {
			fmt.Fprintf(w, "  Clients connect to this machine's name or address, not %s.\n", host)
		}
	}

	desktop := map[string]map[string]stdioEntry{"mcpServers": {mcpServerName: {Command: s.Binary, Args: s.ServeArgs}}}
	fmt.Fprintf(w, "\nClaude Desktop (stdio; add to %s, then restart Claude Desktop):\n%s\n", paths.ClaudeDesktop, indentedJSON(desktop))

	fmt.Fprintf(w, "\nClaude Code:\n")
	fmt.Fprintf(w, "  # over HTTP (the server must be running):\n  claude mcp add --transport http %s %s\n", mcpServerName, url)
	fmt.Fprintf(w, "  # or over stdio (Claude Code starts the server itself):\n  claude mcp add --transport stdio %s -- %s\n", mcpServerName, stdioLine)

	vscode := map[string]map[string]any{"servers": {
		mcpServerName:            httpEntry{Type: "http", URL: url},
		mcpServerName + "-stdio": stdioEntry{Type: "stdio", Command: s.Binary, Args: s.ServeArgs},
	}}
	fmt.Fprintf(w, "\nVS Code (.vscode/mcp.json in the workspace; use one of the two entries):\n%s\n", indentedJSON(vscode))

	fmt.Fprintf(w, "\nCursor (stdio; add to %s):\n%s\n", paths.Cursor, indentedJSON(desktop))

	fmt.Fprintf(w, "\nMCP Inspector (Node 22 comes from npm):\n")
	fmt.Fprintf(w, "  # web UI, against the running HTTP server:\n  %s --web --transport http --server-url %s\n", inspectorCommand, url)
	fmt.Fprintf(w, "  # command line, over HTTP (--protocol-era legacy|auto|modern picks the protocol era):\n")
	fmt.Fprintf(w, "  %s --cli --method tools/list %s\n", inspectorCommand, url)
	if call := languages.Builtin().Roles().ExampleCall; call != nil {
		args, _ := json.Marshal(call) // two strings
		fmt.Fprintf(w, "  %s --cli --method tools/call --tool-name run_code --tool-args-json %s %s\n",
			inspectorCommand, quoteArg(s.GOOS, string(args)), url)
	}
	fmt.Fprintf(w, "  # command line, over stdio:\n  %s --cli --method tools/list -- %s\n", inspectorCommand, stdioLine)
}

// hostClientSetup describes the clients of this machine: its OS, the user's
// home, this executable (or binary, when given) and the settings given on the
// command line that a client's server must get too.
func hostClientSetup(cmd *cobra.Command, g *globalOptions, binary, addr string) (clientSetup, error) {
	if binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return clientSetup{}, fmt.Errorf("finding this executable: %w", err)
		}
		if binary, err = filepath.EvalSymlinks(exe); err != nil {
			return clientSetup{}, fmt.Errorf("finding this executable: %w", err)
		}
	}
	binary, err := filepath.Abs(binary)
	if err != nil {
		return clientSetup{}, err
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return clientSetup{}, fmt.Errorf("finding the home directory for the clients' configuration files: %w", err)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return clientSetup{}, fmt.Errorf("--http %q: want HOST:PORT, e.g. %s", addr, defaultHTTPAddr)
	}
	args := []string{"serve"}
	if g.configFile != "" {
		abs, err := filepath.Abs(g.configFile)
		if err != nil {
			return clientSetup{}, err
		}
		args = append(args, "--config", abs)
	}
	if f := cmd.Flag("docker-host"); f != nil && f.Changed {
		args = append(args, "--docker-host", f.Value.String())
	}
	if f := cmd.Flag("agent-path"); f != nil && f.Changed {
		abs, err := filepath.Abs(f.Value.String())
		if err != nil {
			return clientSetup{}, err
		}
		args = append(args, "--agent-path", abs)
	}
	return clientSetup{GOOS: runtime.GOOS, Home: home, Getenv: os.Getenv, Binary: binary, ServeArgs: args, Addr: addr}, nil
}

// newClientConfigCmd is "client-config": what `make run` and `setup` print.
func newClientConfigCmd(g *globalOptions) *cobra.Command {
	var binary, addr string
	cmd := &cobra.Command{
		Use:   "client-config",
		Short: "Print how to connect Claude Desktop, Claude Code, VS Code, Cursor and the MCP Inspector",
		Long: `Print each MCP client's configuration for this server, with the paths of
this operating system: Claude Desktop's and Cursor's configuration files,
Claude Code's commands, VS Code's .vscode/mcp.json and the MCP Inspector.
Desktop clients launch this binary on stdio; the HTTP entries need
"mcp-code-runner serve --http ADDR" running. --config, --docker-host and
--agent-path given here are passed on to the server the clients launch.`,
		Example: `  mcp-code-runner client-config
  mcp-code-runner client-config --http 127.0.0.1:9000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := hostClientSetup(cmd, g, binary, addr)
			if err != nil {
				return err
			}
			writeClientConfig(cmd.OutOrStdout(), s)
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "http", defaultHTTPAddr, "HOST:PORT that `serve --http` listens on")
	cmd.Flags().StringVar(&binary, "binary", "", "the server binary clients launch (default: this executable)")
	g.addSettingFlags(cmd, "docker-host", "agent-path")
	return cmd
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

func TestClientConfigPaths(t *testing.T) {
	tests := []struct {
		name        string
		goos        string
		env         map[string]string
		home        string
		wantDesktop string
		wantCursor  string
	}{
		{"macOS: Claude Desktop reads Application Support", "darwin", nil, "/Users/ada",
			"/Users/ada/Library/Application Support/Claude/claude_desktop_config.json", "/Users/ada/.cursor/mcp.json"},
		{"Windows: Claude Desktop reads %APPDATA%", "windows", map[string]string{"APPDATA": `C:\Users\Ada\AppData\Roaming`}, `C:\Users\Ada`,
			`C:\Users\Ada\AppData\Roaming\Claude\claude_desktop_config.json`, `C:\Users\Ada\.cursor\mcp.json`},
		{"Windows without APPDATA: the roaming profile under the home", "windows", nil, `C:\Users\Ada`,
			`C:\Users\Ada\AppData\Roaming\Claude\claude_desktop_config.json`, `C:\Users\Ada\.cursor\mcp.json`},
		{"Linux: ~/.config/Claude", "linux", nil, "/home/ada",
			"/home/ada/.config/Claude/claude_desktop_config.json", "/home/ada/.cursor/mcp.json"},
		{"Linux: XDG_CONFIG_HOME moves the configuration directory", "linux", map[string]string{"XDG_CONFIG_HOME": "/home/ada/cfg"}, "/home/ada",
			"/home/ada/cfg/Claude/claude_desktop_config.json", "/home/ada/.cursor/mcp.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := clientConfigPaths(tt.goos, env(tt.env), tt.home)
			if got.ClaudeDesktop != tt.wantDesktop || got.Cursor != tt.wantCursor {
				t.Errorf("got %+v, want desktop %q, cursor %q", got, tt.wantDesktop, tt.wantCursor)
			}
		})
	}
}

const goldenLinux = `== mcp-code-runner: connecting MCP clients ==

Streamable HTTP endpoint (` + "`/home/ada/go/bin/mcp-code-runner serve --http 127.0.0.1:8080`" + `):
  http://127.0.0.1:8080/mcp

Claude Desktop (stdio; add to /home/ada/.config/Claude/claude_desktop_config.json, then restart Claude Desktop):
{
  "mcpServers": {
    "code-runner": {
      "command": "/home/ada/go/bin/mcp-code-runner",
      "args": [
        "serve"
      ]
    }
  }
}

Claude Code:
  # over HTTP (the server must be running):
  claude mcp add --transport http code-runner http://127.0.0.1:8080/mcp
  # or over stdio (Claude Code starts the server itself):
  claude mcp add --transport stdio code-runner -- /home/ada/go/bin/mcp-code-runner serve

VS Code (.vscode/mcp.json in the workspace; use one of the two entries):
{
  "servers": {
    "code-runner": {
      "type": "http",
      "url": "http://127.0.0.1:8080/mcp"
    },
    "code-runner-stdio": {
      "type": "stdio",
      "command": "/home/ada/go/bin/mcp-code-runner",
      "args": [
        "serve"
      ]
    }
  }
}

Cursor (stdio; add to /home/ada/.cursor/mcp.json):
{
  "mcpServers": {
    "code-runner": {
      "command": "/home/ada/go/bin/mcp-code-runner",
      "args": [
        "serve"
      ]
    }
  }
}

MCP Inspector (Node 22 comes from npm):
  # web UI, against the running HTTP server:
  npx -y -p node@22 -p @modelcontextprotocol/inspector@2.12.0 -- mcp-inspector --web --transport http --server-url http://127.0.0.1:8080/mcp
  # command line, over HTTP (--protocol-era legacy|auto|modern picks the protocol era):
  npx -y -p node@22 -p @modelcontextprotocol/inspector@2.12.0 -- mcp-inspector --cli --method tools/list http://127.0.0.1:8080/mcp
  npx -y -p node@22 -p @modelcontextprotocol/inspector@2.12.0 -- mcp-inspector --cli --method tools/call --tool-name run_code --tool-args-json '{"language":"python","code":"print(6*7)"}' http://127.0.0.1:8080/mcp
  # command line, over stdio:
  npx -y -p node@22 -p @modelcontextprotocol/inspector@2.12.0 -- mcp-inspector --cli --method tools/list -- /home/ada/go/bin/mcp-code-runner serve
`

func TestClientConfigOnLinuxIsTheGoldenText(t *testing.T) {
	var b bytes.Buffer
	writeClientConfig(&b, clientSetup{GOOS: "linux", Home: "/home/ada", Getenv: env(nil),
		Binary: "/home/ada/go/bin/mcp-code-runner", ServeArgs: []string{"serve"}, Addr: "127.0.0.1:8080"})
	if got := b.String(); got != goldenLinux {
		t.Errorf("got:\n%s\nwant:\n%s", got, goldenLinux)
	}
}

func TestClientConfigPerOS(t *testing.T) {
	tests := []struct {
		name  string
		setup clientSetup
		want  []string
	}{
		{"macOS: Application Support, and a path with a space quoted for the shell",
			clientSetup{GOOS: "darwin", Home: "/Users/ada", Getenv: env(nil), Binary: "/Users/ada/my tools/mcp-code-runner",
				ServeArgs: []string{"serve", "--agent-path", "/Users/ada/agent"}, Addr: "127.0.0.1:8080"},
			[]string{
				"add to /Users/ada/Library/Application Support/Claude/claude_desktop_config.json,",
				"claude mcp add --transport stdio code-runner -- '/Users/ada/my tools/mcp-code-runner' serve --agent-path /Users/ada/agent\n",
				`"command": "/Users/ada/my tools/mcp-code-runner",`,
				`"--agent-path",`,
				"Cursor (stdio; add to /Users/ada/.cursor/mcp.json):",
			}},
		{"Windows: %APPDATA%, backslashes escaped in JSON, double quotes on the command line",
			clientSetup{GOOS: "windows", Home: `C:\Users\Ada`, Getenv: env(map[string]string{"APPDATA": `C:\Users\Ada\AppData\Roaming`}),
				Binary: `C:\Users\Ada\go\bin\mcp-code-runner.exe`, ServeArgs: []string{"serve"}, Addr: "127.0.0.1:8080"},
			[]string{
				`add to C:\Users\Ada\AppData\Roaming\Claude\claude_desktop_config.json,`,
				`"command": "C:\\Users\\Ada\\go\\bin\\mcp-code-runner.exe",`,
				`claude mcp add --transport stdio code-runner -- C:\Users\Ada\go\bin\mcp-code-runner.exe serve` + "\n",
				`--tool-args-json "{\"language\":\"python\",\"code\":\"print(6*7)\"}"`,
				`Cursor (stdio; add to C:\Users\Ada\.cursor\mcp.json):`,
			}},
		{"a non-loopback address: the token is required and clients are told how to send it",
			clientSetup{GOOS: "linux", Home: "/home/ada", Getenv: env(nil), Binary: "/usr/local/bin/mcp-code-runner", ServeArgs: []string{"serve"}, Addr: "0.0.0.0:8080"},
			[]string{
				"0.0.0.0 is not a loopback address: the server then requires --auth-token",
				"Clients connect to this machine's name or address, not 0.0.0.0.",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			writeClientConfig(&b, tt.setup)
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
		})
	}
}

func TestQuoteArg(t *testing.T) {
	tests := []struct{ goos, in, want string }{
		{"linux", "/usr/bin/x", "/usr/bin/x"},
		{"linux", "/a b/x", "'/a b/x'"},
		{"darwin", "it's", `'it'\''s'`},
		{"linux", "", "''"},
		{"windows", `C:\x\y.exe`, `C:\x\y.exe`},
		{"windows", `C:\Program Files\x.exe`, `"C:\Program Files\x.exe"`},
	}
	for _, tt := range tests {
		if got := quoteArg(tt.goos, tt.in); got != tt.want {
			t.Errorf("quoteArg(%s, %q) = %s, want %s", tt.goos, tt.in, got, tt.want)
		}
	}
}

func TestHostAgentOnlyOnLinux(t *testing.T) {
	if err := hostAgentError("linux", "arm64"); err != nil {
		t.Errorf("linux: %v", err)
	}
	for _, goos := range []string{"darwin", "windows"} {
		err := hostAgentError(goos, "arm64")
		if err == nil || !strings.Contains(err.Error(), "GOOS=linux") || !strings.Contains(err.Error(), "agent_path") {
			t.Errorf("%s: want an error saying how to build the Linux agent and set agent_path, got %v", goos, err)
		}
	}
}

func TestSetupWithoutADaemonSaysWhatToDo(t *testing.T) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	sock := filepath.Join(t.TempDir(), "no-daemon.sock")
	root.SetArgs([]string{"setup", "--skip-images", "--docker-host", "unix://" + sock})
	err := root.ExecuteContext(t.Context())
	if err == nil {
		t.Fatalf("setup succeeded without a daemon:\n%s", out.String())
	}
	for _, w := range []string{"is not reachable", sock, daemonHint(runtime.GOOS)} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q: %v", w, err)
		}
	}
}

func TestSetupRefusesAnUnknownLanguageBeforeTouchingTheEngine(t *testing.T) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"setup", "--languages", "intercal", "--docker-host", "unix:///nonexistent.sock"})
	err := root.ExecuteContext(t.Context())
	if err == nil || !strings.Contains(err.Error(), `unknown language "intercal"`) || !strings.Contains(err.Error(), "python") {
		t.Fatalf("want an error naming the language and the valid ones, got %v", err)
	}
	if strings.Contains(out.String(), "[1/4]") {
		t.Errorf("setup reached the engine:\n%s", out.String())
	}
}

func TestCheckAgentArch(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkAgentArch(exe, runtime.GOARCH); err != nil {
		t.Errorf("this test binary on its own architecture: %v", err)
	}
	other := map[string]string{"amd64": "arm64"}[runtime.GOARCH]
	if other == "" {
		other = "amd64"
	}
	if err := checkAgentArch(exe, other); err == nil || !strings.Contains(err.Error(), "GOARCH="+other) {
		t.Errorf("an agent for another architecture: want an error saying GOARCH=%s, got %v", other, err)
	}
	notELF := filepath.Join(t.TempDir(), "agent")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkAgentArch(notELF, "amd64"); err == nil || !strings.Contains(err.Error(), "is not a Linux executable") || !strings.Contains(err.Error(), "GOOS=linux") {
		t.Errorf("a file that is not ELF: want an error saying how to build the agent, got %v", err)
	}
}

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/codemode"
	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// CodeModeOptions configure the code mode comparison.
type CodeModeOptions struct {
	// Server starts the filesystem MCP server
	// (@modelcontextprotocol/server-filesystem) given a directory as its
	// last argument: ["node", ".../server-filesystem/dist/index.js"].
	Server []string
	// Runs is how many times each side does the task.
	Runs int
	Out  io.Writer
}

// codeModeFiles is the task's size: files read and numbers added.
const codeModeFiles = 20

// CodeMode measures one task done two ways side by side: read 20 files of
// the filesystem server and add the numbers they hold, (a) as 20
// tools/call an MCP client makes straight to the server, each result
// reaching the client (what a model would read), and (b) as one run_code
// whose Python program makes the 20 calls through code mode, only the
// program's answer reaching the client. It reports the bytes of results
// the client gets and the wall time of each, and the broker's overhead per
// call (a call's time in the sandbox less the upstream's time for it),
// p50 and p99.
func CodeMode(ctx context.Context, cfg config.Config, reg *languages.Registry, b sandbox.Backend, o CodeModeOptions) error {
	if len(o.Server) == 0 {
		return fmt.Errorf("code mode bench: no filesystem server command")
	}
	dir, err := os.MkdirTemp("", "mcr-bench-code-mode-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	want := 0
	for i := 1; i <= codeModeFiles; i++ {
		// A number on the first line under a page of text: what a model
		// reads whole in (a), and the program reads for one line in (b).
		body := fmt.Sprintf("%d\n%s", i*7, strings.Repeat("lorem ipsum dolor sit amet, consectetur adipiscing elit\n", 30))
		want += i * 7
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("n%02d.txt", i)), []byte(body), 0o644); err != nil {
			return err
		}
	}
	server := append(append([]string(nil), o.Server...), dir)

	direct, directBytes, err := codeModeDirect(ctx, server, dir, want, o.Runs)
	if err != nil {
		return err
	}
	viaRun, runBytes, overhead, err := codeModeRun(ctx, cfg, reg, b, server, dir, want, o.Runs)
	if err != nil {
		return err
	}
	w := o.Out
	fmt.Fprintf(w, "\ncode mode: read %d files of the filesystem server and add their numbers (%d times each)\n", codeModeFiles, o.Runs)
	fmt.Fprintf(w, "%-44s %14s %10s %10s\n", "", "result bytes", "p50 ms", "p99 ms")
	fmt.Fprintf(w, "%-44s %14d %10s %10s\n", "(a) 20 tools/call, client to server", directBytes, ms(direct.Quantile(.5)), ms(direct.Quantile(.99)))
	fmt.Fprintf(w, "%-44s %14d %10s %10s\n", "(b) one run_code with code mode (python)", runBytes, ms(viaRun.Quantile(.5)), ms(viaRun.Quantile(.99)))
	fmt.Fprintf(w, "broker overhead per call (sandbox to upstream and back, less the upstream's time), %d calls: p50 %s ms, p99 %s ms\n",
		len(overhead.Times), ms(overhead.Quantile(.5)), ms(overhead.Quantile(.99)))
	return nil
}

// codeModeDirect does the task as a client of the server would: 20 calls,
// every result read.
func codeModeDirect(ctx context.Context, server []string, dir string, want, runs int) (*Sample, int, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "mcr-bench"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.CommandContext(ctx, server[0], server[1:]...)}, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("code mode bench: starting the filesystem server: %w", err)
	}
	defer cs.Close()
	s := &Sample{Name: "direct"}
	bytes := 0
	for range runs {
		var failed error
		s.time(nil, func() bool {
			total, n := 0, 0
			for i := 1; i <= codeModeFiles; i++ {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": filepath.Join(dir, fmt.Sprintf("n%02d.txt", i))}})
				if err != nil {
					failed = err
					return false
				}
				data, _ := json.Marshal(res)
				n += len(data)
				if len(res.Content) > 0 {
					if t, ok := res.Content[0].(*mcp.TextContent); ok {
						var v int
						_, _ = fmt.Sscan(t.Text, &v)
						total += v
					}
				}
			}
			bytes = n
			return total == want
		})
		if failed != nil {
			return nil, 0, fmt.Errorf("code mode bench: calling the filesystem server: %w", failed)
		}
	}
	return s, bytes, nil
}

// codeModeProgram reads the files through mcr_tools, adds their first
// lines, and prints the total and each call's time in the sandbox.
const codeModeProgram = `import json, time, mcr_tools
total, times = 0, []
for i in range(1, %d):
    t = time.perf_counter()
    r = mcr_tools.fs.read_text_file(path="%s/n%%02d.txt" %% i)
    times.append(time.perf_counter() - t)
    total += int(r["content"][0]["text"].split("\n", 1)[0])
print(total)
print(json.dumps(times))
`

// codeModeRun does the task as one run_code with code mode, on a warm
// pool, and returns the broker's overhead per call beside it.
func codeModeRun(ctx context.Context, cfg config.Config, reg *languages.Registry, b sandbox.Backend, server []string, dir string, want, runs int) (*Sample, int, *Sample, error) {
	bc := cfg
	bc.Pool.Sizes = []string{"python=2"}
	bc.CodeMode.Servers = map[string]config.CodeModeServer{"fs": {Command: server[0], Args: server[1:]}}
	bc.CodeMode.CallsPerMinute = 1 << 20
	bc.CodeMode.MaxCallsPerRun = 1 << 20
	broker := codemode.New(bc.CodeMode, nil, os.Getenv, nil)
	defer broker.Close()
	var mu sync.Mutex
	var upstream []time.Duration
	broker.Observe(func(r codemode.Record) { mu.Lock(); upstream = append(upstream, r.Duration); mu.Unlock() })
	e := engine.New(bc, reg, b, nil, engine.WithToolBroker(broker))
	e.StartPool()
	defer func() { _ = e.Close(context.Background()) }()
	ctx = principal.WithContext(ctx, principal.Local())
	req := engine.Request{Language: "python", Tools: []string{"fs"}, Code: fmt.Sprintf(codeModeProgram, codeModeFiles+1, dir)}
	// One untimed run: the server's connection and the tools' list are
	// made once per server, not per run.
	if _, err := e.Run(ctx, req, engine.RunOptions{}); err != nil {
		return nil, 0, nil, err
	}
	s, overhead := &Sample{Name: "code mode"}, &Sample{Name: "overhead"}
	bytes := 0
	for range runs {
		mu.Lock()
		upstream = upstream[:0]
		mu.Unlock()
		var res *engine.Result
		var err error
		s.time(nil, func() bool {
			res, err = e.Run(ctx, req, engine.RunOptions{})
			return err == nil && res.Status == engine.StatusOK && strings.HasPrefix(res.Stdout, fmt.Sprint(want)+"\n")
		})
		if err != nil {
			return nil, 0, nil, err
		}
		if res.Status != engine.StatusOK {
			return nil, 0, nil, fmt.Errorf("code mode bench: the program failed: %s%s", res.Stdout, res.Stderr)
		}
		data, _ := json.Marshal(res)
		bytes = len(data)
		_, line, _ := strings.Cut(strings.TrimSpace(res.Stdout), "\n")
		var inSandbox []float64
		if json.Unmarshal([]byte(line), &inSandbox) == nil {
			mu.Lock()
			for i, sec := range inSandbox {
				if i < len(upstream) {
					overhead.add(time.Duration(sec*float64(time.Second)) - upstream[i])
				}
			}
			mu.Unlock()
		}
	}
	return s, bytes, overhead, nil
}

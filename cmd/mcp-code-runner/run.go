package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

func init() { subcommands = append(subcommands, newRunCmd) }

func newRunCmd(g *globalOptions) *cobra.Command {
	var (
		lang    string
		timeout int
		stdin   string
		envs    []string
		files   []string
		asJSON  bool
		verbose bool
	)
	cmd := &cobra.Command{
		Use:   "run [-l LANG] [FILE|-] [-- ARGS...]",
		Short: "Run a file (or stdin) in a sandbox and print its output",
		Long: `Run executes a program exactly as run_code would: in a fresh, hardened
container. It prints the program's stdout and stderr as they arrive and
exits with the program's exit code (the compiler's, if compilation fails).
Standard output carries the program's output only; the server's log is
written to standard error with -v (or --log-level) alone.

The language is taken from -l or guessed from the file extension. With no
FILE, or FILE "-", the code is read from standard input.`,
		Example: `  mcp-code-runner run -l python hello.py
  echo 'console.log(1+1)' | mcp-code-runner run -l js
  mcp-code-runner run script.sh -- first second
  mcp-code-runner run --json -l python --stdin "$(cat input.txt)" solve.py`,
		RunE: func(cmd *cobra.Command, args []string) error {
			g.quiet = !verbose && !cmd.Flags().Changed("log-level")
			var progArgs []string
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				progArgs = args[dash:]
				args = args[:dash]
			}
			if len(args) > 1 {
				return fmt.Errorf("give one program file (got %d); pass program arguments after --", len(args))
			}
			path := "-"
			if len(args) == 1 {
				path = args[0]
			}
			var code []byte
			var err error
			if path == "-" {
				code, err = io.ReadAll(os.Stdin)
			} else {
				code, err = os.ReadFile(path)
			}
			if err != nil {
				return fmt.Errorf("reading the program: %w", err)
			}
			st, err := newStack(g)
			if err != nil {
				return err
			}
			defer st.Close()
			// The run's sandbox is removed after the answer, in the
			// background: the process waits for that before it exits.
			defer waitForRemovals(cmd.Context(), st)
			if lang == "" {
				lang = guessLanguage(st, path)
				if lang == "" {
					return fmt.Errorf("cannot tell the language of %q; give it with -l (available: %s)", path, strings.Join(st.reg.Names(), ", "))
				}
			}
			req := engine.Request{Language: lang, Code: string(code), Stdin: stdin, Args: progArgs, TimeoutSeconds: timeout, Env: map[string]string{}}
			for _, kv := range envs {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					return fmt.Errorf("--env %q: want NAME=value", kv)
				}
				req.Env[k] = v
			}
			for _, f := range files {
				data, err := os.ReadFile(f)
				if err != nil {
					return fmt.Errorf("reading --file: %w", err)
				}
				req.Files = append(req.Files, engine.InputFile{Path: filepath.Base(f), Content: encodeB64(data), Encoding: "base64"})
			}
			var onChunk func(sandbox.Chunk)
			if !asJSON {
				onChunk = func(c sandbox.Chunk) {
					if c.Stream == sandbox.Stdout {
						_, _ = os.Stdout.Write(c.Data)
					} else {
						_, _ = os.Stderr.Write(c.Data)
					}
				}
			}
			res, err := st.engine.Run(cmd.Context(), req, engine.RunOptions{OnChunk: onChunk})
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				_ = enc.Encode(res)
			} else if res.Status != engine.StatusOK && res.Status != engine.StatusError {
				fmt.Fprintf(os.Stderr, "mcp-code-runner: %s\n", strings.TrimSpace(res.Status+": "+res.ExitReason))
			}
			return programExit(res)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&lang, "language", "l", "", "language name or alias (default: from the file extension)")
	f.IntVarP(&timeout, "timeout", "t", 0, "run time limit in seconds (default: the operator's)")
	f.StringVar(&stdin, "stdin", "", "text given to the program on standard input")
	f.StringArrayVarP(&envs, "env", "e", nil, "NAME=value environment variable (repeatable)")
	f.StringArrayVarP(&files, "file", "f", nil, "extra file copied into the workspace under its base name (repeatable)")
	f.BoolVar(&asJSON, "json", false, "print the whole structured result as JSON instead of the output")
	f.BoolVarP(&verbose, "verbose", "v", false, "also write the server's log to standard error")
	g.addSettingFlags(cmd)
	return cmd
}

// programExit is what `run` exits with: the program's exit code, the
// compiler's when compilation failed, and 1 for a run that ended otherwise
// than normally without a code of its own.
func programExit(res *engine.Result) error {
	code := res.ExitCode
	if res.Status == engine.StatusCompileError && res.Compile != nil {
		code = res.Compile.ExitCode
	}
	if code == 0 && res.Status != engine.StatusOK {
		code = 1
	}
	if code != 0 {
		return exitCodeError(code)
	}
	return nil
}

// guessLanguage maps a file extension to a language through the registry's
// file names (main.py -> python).
func guessLanguage(st *stack, path string) string {
	ext := filepath.Ext(path)
	if ext == "" {
		return ""
	}
	for _, l := range st.reg.Languages() {
		if filepath.Ext(l.File) == ext {
			return l.Name
		}
	}
	return ""
}

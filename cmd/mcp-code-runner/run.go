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

// runFlags are the flags of `run`.
type runFlags struct {
	lang    string
	timeout int
	stdin   string
	envs    []string
	files   []string
	asJSON  bool
	verbose bool
}

func newRunCmd(g *globalOptions) *cobra.Command {
	var o runFlags
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
			g.quiet = !o.verbose && !cmd.Flags().Changed("log-level")
			return o.run(cmd, args, g)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.lang, "language", "l", "", "language name or alias (default: from the file extension)")
	f.IntVarP(&o.timeout, "timeout", "t", 0, "run time limit in seconds (default: the operator's)")
	f.StringVar(&o.stdin, "stdin", "", "text given to the program on standard input")
	f.StringArrayVarP(&o.envs, "env", "e", nil, "NAME=value environment variable (repeatable)")
	f.StringArrayVarP(&o.files, "file", "f", nil, "extra file copied into the workspace under its base name (repeatable)")
	f.BoolVar(&o.asJSON, "json", false, "print the whole structured result as JSON instead of the output")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "also write the server's log to standard error")
	g.addSettingFlags(cmd)
	return cmd
}

// run runs the program args name (the arguments after -- are its own),
// prints its output as it arrives, and returns its exit.
func (o runFlags) run(cmd *cobra.Command, args []string, g *globalOptions) error {
	var progArgs []string
	if dash := cmd.ArgsLenAtDash(); dash >= 0 {
		progArgs = args[dash:]
		args = args[:dash]
	}
	path, code, err := readProgram(args)
	if err != nil {
		return err
	}
	st, err := newStack(g)
	if err != nil {
		return err
	}
	defer st.Close()
	// The run's sandbox is removed after the answer, in the background:
	// the process waits for that before it exits.
	defer waitForRemovals(cmd.Context(), st)
	lang := o.lang
	if lang == "" {
		lang = guessLanguage(st, path)
		if lang == "" {
			return fmt.Errorf("cannot tell the language of %q; give it with -l (available: %s)", path, strings.Join(st.reg.Names(), ", "))
		}
	}
	req, err := o.request(lang, code, progArgs)
	if err != nil {
		return err
	}
	var onChunk func(sandbox.Chunk)
	if !o.asJSON {
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
	if o.asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
	} else if res.Status != engine.StatusOK && res.Status != engine.StatusError {
		fmt.Fprintf(os.Stderr, "mcp-code-runner: %s\n", strings.TrimSpace(res.Status+": "+res.ExitReason))
	}
	return programExit(res)
}

// readProgram reads the one program file args name, or standard input
// for none or "-", and returns its path ("-" for standard input).
func readProgram(args []string) (string, []byte, error) {
	if len(args) > 1 {
		return "", nil, fmt.Errorf("give one program file (got %d); pass program arguments after --", len(args))
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
		return "", nil, fmt.Errorf("reading the program: %w", err)
	}
	return path, code, nil
}

// request is the run of code in lang with the flags' input, environment
// and files.
func (o runFlags) request(lang string, code []byte, progArgs []string) (engine.Request, error) {
	req := engine.Request{Language: lang, Code: string(code), Stdin: o.stdin, Args: progArgs, TimeoutSeconds: o.timeout, Env: map[string]string{}}
	for _, kv := range o.envs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return req, fmt.Errorf("--env %q: want NAME=value", kv)
		}
		req.Env[k] = v
	}
	for _, f := range o.files {
		data, err := os.ReadFile(f)
		if err != nil {
			return req, fmt.Errorf("reading --file: %w", err)
		}
		req.Files = append(req.Files, engine.InputFile{Path: filepath.Base(f), Content: encodeB64(data), Encoding: "base64"})
	}
	return req, nil
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

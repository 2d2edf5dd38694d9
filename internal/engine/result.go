package engine

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/outputs"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// shape turns the sandbox result into the tool result.
func (e *Engine) shape(runID, owner string, lang languages.Language, sres *sandbox.Result, cancelled bool) *Result {
	out := &Result{RunID: runID, Language: lang.Name}
	stageByName := map[string]*sandbox.StageOutput{}
	for i := range sres.Stages {
		stageByName[sres.Stages[i].Name] = &sres.Stages[i]
	}
	if lang.Compiled() {
		if c := stageByName["compile"]; c != nil {
			st := e.stage(runID, owner, "compile", c)
			out.Compile = &st
		}
	}
	run := stageByName["run"]
	if run != nil {
		out.Stage = e.stage(runID, owner, "run", run)
		out.Value = run.Value
		out.KernelRestarted = run.KernelRestarted
		if run.Cancelled && !sres.Killed {
			out.Status, out.ExitReason = StatusKilled, "the call was cancelled; the session stays usable"
			return out
		}
	}
	switch {
	case sres.AgentError != "":
		out.Status, out.ExitCode = StatusError, 126
		out.ExitReason = "the sandbox refused the request: " + sres.AgentError
	case out.Compile != nil && (out.Compile.ExitCode != 0 || out.Compile.TimedOut) && run == nil:
		out.Status, out.ExitCode, out.ExitReason = StatusCompileError, out.Compile.ExitCode, compileFailure(out.Compile)
	case run == nil || sres.Incomplete:
		sandboxEnded(out, run, sres, cancelled)
	case out.TimedOut:
		out.Status = StatusTimeout
		out.ExitReason = "the program hit its time limit and was killed; output up to then is kept"
		if out.OOMKilled {
			out.ExitReason += "; before that, the memory limit was reached and the out-of-memory killer ended some of its processes"
		}
	case out.OOMKilled:
		out.Status = StatusOOM
		out.ExitReason = "the program hit the memory limit and was killed"
	case out.ExitCode != 0:
		out.Status = StatusError
	default:
		out.Status = StatusOK
	}
	if run != nil && run.Error != "" {
		out.ExitReason = run.Error
	}
	if c := stageByName["compile"]; c != nil && lang.TypeErrors != nil {
		noteTypeErrors(out, c, lang.TypeErrors.Pattern, run != nil)
	}
	return out
}

// compileFailure says why a compile stage stopped the program from running.
func compileFailure(c *Stage) string {
	switch {
	case c.OOMKilled:
		return "compilation hit the memory limit; the program was not run"
	case c.TimedOut:
		return "compilation hit its time limit; the program was not run"
	}
	return "compilation failed; the compiler's messages are in compile.stderr and compile.stdout; the program was not run"
}

// noteTypeErrors counts the type errors a compile stage reported and, when
// the program ran despite them, says so.
func noteTypeErrors(out *Result, compile *sandbox.StageOutput, pattern string, ran bool) {
	out.TypeErrors = countLines(compile.Stderr, pattern)
	if out.TypeErrors > 0 && ran {
		note := fmt.Sprintf("the compiler reported %d type error(s), in compile.stderr; the program was compiled and run despite them", out.TypeErrors)
		out.ExitReason = strings.TrimPrefix(out.ExitReason+"; "+note, "; ")
	}
}

// sandboxEnded says how a run ended whose sandbox ended before the agent
// reported: the run overran its deadline, the caller left, or memory ran
// out for the whole sandbox. What the run printed until then is kept and
// counted.
func sandboxEnded(out *Result, run *sandbox.StageOutput, sres *sandbox.Result, cancelled bool) {
	out.ExitCode, out.Signal = 137, "SIGKILL"
	if run != nil && run.ExitCode == 0 && run.DurationMs == 0 {
		out.StdoutBytes = max(out.StdoutBytes, int64(len(run.Stdout)))
		out.StderrBytes = max(out.StderrBytes, int64(len(run.Stderr)))
		out.DurationMs = sres.Elapsed.Milliseconds()
		if out.Compile != nil {
			out.DurationMs = max(0, out.DurationMs-out.Compile.DurationMs)
		}
	}
	switch {
	case sres.OOMKilled:
		out.Status, out.OOMKilled = StatusOOM, true
		out.ExitReason = "the sandbox ran out of memory; use less memory"
	case cancelled:
		out.Status = StatusKilled
		out.ExitReason = "the request was cancelled; the sandbox was killed"
	case sres.Killed:
		out.Status, out.TimedOut = StatusTimeout, true
		out.ExitReason = "the sandbox overran its deadline and was killed"
	case strings.Contains(sres.Diagnostics, "failed to create new OS thread") || strings.Contains(sres.Diagnostics, "newosproc"):
		out.Status = StatusKilled
		out.ExitReason = "the program used up the process limit (pids_limit) so that the sandbox could not go on; fewer processes or threads"
	default:
		out.Status = StatusKilled
		out.ExitReason = "the sandbox ended unexpectedly"
	}
}

// countLines counts the lines of text that match pattern (validated when
// the registry was loaded).
func countLines(text []byte, pattern string) int {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return 0
	}
	n := 0
	for line := range bytes.Lines(text) {
		if re.Match(line) {
			n++
		}
	}
	return n
}

// stage shapes one stage, capping inline output and keeping the full output.
func (e *Engine) stage(runID, owner, name string, s *sandbox.StageOutput) Stage {
	lim := e.cfg.Limits.InlineOutputBytes
	st := Stage{
		ExitCode: s.ExitCode, Signal: s.Signal, TimedOut: s.TimedOut, OOMKilled: s.OOMKilled,
		StdoutBytes: s.StdoutBytes, StderrBytes: s.StderrBytes,
		DurationMs: s.DurationMs, CPUTimeMs: s.CPUTimeMs, MaxMemoryKB: s.MaxRSSKB,
	}
	st.Stdout, st.StdoutTruncated = clip(s.Stdout, lim, s.StdoutBytes)
	st.Stderr, st.StderrTruncated = clip(s.Stderr, lim, s.StderrBytes)
	if st.StdoutTruncated {
		st.StdoutURI = e.keepOutput(outputs.URI(runID, name, "stdout"), owner, s.Stdout)
	}
	if st.StderrTruncated {
		st.StderrURI = e.keepOutput(outputs.URI(runID, name, "stderr"), owner, s.Stderr)
	}
	if s.Error != "" && st.Stderr == "" {
		st.Stderr = s.Error
	}
	return st
}

// keepOutput keeps a full output under uri and returns uri, or "" when the
// state store refused it: a result never names a URI that does not serve.
func (e *Engine) keepOutput(uri, owner string, data []byte) string {
	if err := e.outputs.Put(uri, owner, data); err != nil {
		e.log.Error("a full output was not kept: the result gives no URI for it", "uri", uri, "owner", owner, "err", err)
		return ""
	}
	return uri
}

// clip fits data into limit bytes, keeping the head and the tail (where
// errors usually are) with a marker between them. total is how much the
// program wrote, which may exceed len(data) when the sandbox dropped output.
func clip(data []byte, limit int, total int64) (string, bool) {
	if len(data) <= limit && int64(len(data)) >= total {
		return string(data), false
	}
	if len(data) <= limit {
		return string(data) + fmt.Sprintf("\n[output truncated: %d of %d bytes kept]\n", len(data), total), true
	}
	head := validPrefix(data[:limit*3/4])
	tail := validSuffix(data[len(data)-limit/4:])
	omitted := total - int64(len(head)) - int64(len(tail))
	return head + fmt.Sprintf("\n[... %d bytes omitted ...]\n", omitted) + tail, true
}

func validPrefix(b []byte) string {
	for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.Valid(b); i++ {
		b = b[:len(b)-1]
	}
	return string(b)
}

func validSuffix(b []byte) string {
	for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return string(b)
}

// Summary is a one-line human description of a result.
func Summary(r *Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s run %s: %s", r.Language, r.RunID, r.Status)
	if r.Compile != nil && r.Status == StatusCompileError {
		fmt.Fprintf(&b, " (compiler exit code %d)", r.Compile.ExitCode)
	} else {
		fmt.Fprintf(&b, ", exit code %d", r.ExitCode)
		if r.Signal != "" {
			fmt.Fprintf(&b, " (%s)", r.Signal)
		}
	}
	fmt.Fprintf(&b, " in %d ms.", r.DurationMs)
	if r.TypeErrors > 0 && r.Status != StatusCompileError {
		fmt.Fprintf(&b, " The compiler reported %d type error(s) (compile.stderr); the program ran despite them.", r.TypeErrors)
	}
	if r.StdoutTruncated || r.StderrTruncated {
		b.WriteString(" Output was truncated; the full text is readable at the stdout_uri/stderr_uri resources.")
	}
	return b.String()
}

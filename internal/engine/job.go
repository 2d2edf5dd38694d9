package engine

import (
	"slices"
	"sort"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// Template returns the sandbox template of a language: its image and its
// limits, the operator's defaults with the language's overrides.
func (e *Engine) Template(lang languages.Language) sandbox.Template {
	lim := e.cfg.Limits
	res := sandbox.Resources{
		MemoryMB: lim.MemoryMB, CPUs: lim.CPUs, PidsLimit: lim.PidsLimit,
		WorkspaceMB: lim.WorkspaceMB, TmpMB: lim.TmpMB, NoFile: lim.NoFile, FileSizeMB: lim.FileSizeMB,
	}
	if lang.Limits.MemoryMB > 0 {
		res.MemoryMB = lang.Limits.MemoryMB
	}
	if lang.Limits.PidsLimit > 0 {
		res.PidsLimit = lang.Limits.PidsLimit
	}
	compile := lim.CompileTimeoutSeconds
	if lang.Limits.CompileTimeoutSeconds > 0 {
		compile = lang.Limits.CompileTimeoutSeconds
	}
	longest := max(lim.MaxTimeoutSeconds, e.cfg.Executions.MaxDurationSeconds)
	maxJob := time.Duration(longest+compile)*time.Second + deadlineGrace
	return sandbox.Template{
		Image:     e.reg.ImageOf(lang).Tag,
		Isolation: e.isolation(),
		Resources: res,
		MaxLife:   time.Duration(e.cfg.Pool.MaxIdleSeconds)*time.Second + maxJob,
		Purpose:   lang.Name,
		Instance:  e.instance,
	}
}

// job turns a plan into the sandbox job that runs it: the files, then the
// compile and run stages, or in a session a call of the language's
// long-lived interpreter (kernel), with a deadline for the whole job.
func (e *Engine) job(p *Plan, runID string) sandbox.Job {
	lim := e.cfg.Limits
	lang, req := p.Language, p.Request
	env := append([]string(nil), lang.Env...)
	names := make([]string, 0, len(req.Env))
	for k := range req.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		env = append(env, k+"="+req.Env[k])
	}
	request := wire.Request{Workdir: wire.WorkspacePath, OutputLimit: int64(lim.MaxOutputBytes),
		Artifacts: artifactLimits(e.cfg.Artifacts), Session: p.Session}
	if p.Kernel {
		request.Op = wire.OpKernel
		request.Files = p.files[1:] // the code goes to the interpreter, not a file
		request.Kernel = &wire.KernelCall{Name: lang.Kernel.Name, Argv: lang.Kernel.Run, Env: env,
			Code: req.Code, TimeoutMs: int64(p.Timeout) * 1000}
		return sandbox.Job{Request: request, Deadline: p.deadline(), RunID: runID}
	}
	request.Files = p.files
	request.Entry = lang.Entry
	request.Architectures, request.ArchitectureRefusal = lang.Architectures, lang.ArchitectureRefusal()
	if lang.Compiled() {
		compileEnv := env
		if lang.TypeErrors != nil && e.cfg.TypeErrorsFatal {
			// Last, so that it wins; request env cannot name MCR_ variables anyway.
			compileEnv = append(slices.Clip(env), lang.TypeErrors.FatalEnv)
		}
		request.Stages = append(request.Stages, wire.Stage{
			Name: "compile", Argv: lang.Compile, Env: compileEnv,
			TimeoutMs: int64(p.CompileTimeout) * 1000, StopOnFailure: true,
		})
	}
	request.Stages = append(request.Stages, wire.Stage{
		Name: "run", Argv: append(append([]string(nil), lang.Run...), req.Args...), Env: env,
		Stdin: []byte(req.Stdin), TimeoutMs: int64(p.Timeout) * 1000,
	})
	return sandbox.Job{Request: request, Deadline: p.deadline(), RunID: runID}
}

// KernelStartJob returns the job that starts lang's session interpreter in
// a held sandbox ahead of the session's first call: a kernel call with no
// code, which the agent answers once the interpreter runs, its output
// capped at lim's. env is what the
// session's calls add to the language's (see addEnv); the agent starts the
// interpreter again if the first call brings another environment. A
// language without a kernel has no such job.
func KernelStartJob(lim config.Limits, lang languages.Language, env []string) (sandbox.Job, bool) {
	if lang.Kernel == nil {
		return sandbox.Job{}, false
	}
	request := wire.Request{Op: wire.OpKernel, Workdir: wire.WorkspacePath, OutputLimit: int64(lim.MaxOutputBytes), Session: true,
		Kernel: &wire.KernelCall{Name: lang.Kernel.Name, Argv: lang.Kernel.Run, Env: append(append([]string(nil), lang.Env...), env...),
			TimeoutMs: kernelStartTimeout.Milliseconds()}}
	return sandbox.Job{Request: request, Deadline: kernelStartTimeout + deadlineGrace, RunID: "kernel-start"}, true
}

// kernelStartTimeout bounds an interpreter's start ahead of a session.
const kernelStartTimeout = 30 * time.Second

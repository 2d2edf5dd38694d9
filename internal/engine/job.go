package engine

import (
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
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
		Resources: res,
		MaxLife:   time.Duration(e.cfg.Pool.MaxIdleSeconds)*time.Second + maxJob,
		Purpose:   lang.Name,
	}
}

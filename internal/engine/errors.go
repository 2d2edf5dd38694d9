package engine

import (
	"errors"
	"fmt"

	"github.com/mcp-code-runner/mcp-code-runner/internal/fault"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/pool"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// Error codes of an engine Error.
const (
	CodeInvalid = fault.CodeInvalid
	CodeBusy    = fault.CodeBusy
	// CodeQuota: the principal is at one of its quotas (config quotas.*).
	CodeQuota        = fault.CodeQuota
	CodeImageMissing = fault.CodeImageMissing
	CodeUnavailable  = fault.CodeUnavailable
	CodeInternal     = fault.CodeInternal
	// CodeInstall: the package manager could not install what was asked.
	CodeInstall = fault.CodeInstall
)

// Error is an engine failure that a caller can act on; Message says what is
// wrong and what to do. It is [fault.Error], which the packages below the
// engine that check a request return too.
type Error = fault.Error

func invalid(format string, args ...any) error { return fault.Invalid(format, args...) }

// IsInvalid reports whether err is a rejected request.
func IsInvalid(err error) bool { return fault.IsInvalid(err) }

// CodeOf returns err's code, CodeInternal for plain errors.
func CodeOf(err error) string { return fault.CodeOf(err) }

// explain turns a backend error into an Error that says what to do.
func (e *Engine) explain(err error, lang languages.Language) error {
	switch {
	case errors.Is(err, pool.ErrBusy):
		return &Error{Code: CodeBusy, Err: err, Message: err.Error()}
	case errors.Is(err, sandbox.ErrImageMissing):
		img := e.reg.ImageOf(lang)
		return imageMissing(err, img, fmt.Sprintf("the %s runtime image %s", lang.Name, img.Tag), lang.Name)
	case errors.Is(err, sandbox.ErrUnsupported):
		return &Error{Code: CodeInvalid, Err: err, Message: err.Error()}
	case errors.Is(err, sandbox.ErrUnavailable):
		// The backend's error says what to do about it.
		return &Error{Code: CodeUnavailable, Err: err, Message: fmt.Sprintf(
			"%v; then run `mcp-code-runner doctor`", err)}
	default:
		return &Error{Code: CodeInternal, Err: err, Message: fmt.Sprintf("the sandbox failed: %v; run `mcp-code-runner doctor` to check the setup", err)}
	}
}

// imageMissing says that the image described as what is not built, and the
// command that builds it by name (a language's or the image's own).
func imageMissing(err error, img languages.Image, what, name string) error {
	all := "`make images`"
	if img.OnDemand {
		// `make images` builds the default set, which leaves this image out.
		all = "`mcp-code-runner images build --all`"
	}
	return &Error{Code: CodeImageMissing, Err: err, Message: fmt.Sprintf(
		"%s is not built on this host; build it with `mcp-code-runner images build %s` (or %s), then retry",
		what, name, all)}
}

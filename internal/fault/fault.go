// Package fault is the error every layer that checks a request returns
// when the caller can act on it: a code that says what kind of failure it
// is (a bad argument, a busy server, a quota) and a message that says what
// is wrong and what to do. The engine names it engine.Error; the packages
// below the engine that check a request's parts (the network gate) return
// it too, so a tool error carries one code whichever layer refused.
package fault

import (
	"errors"
	"fmt"
)

// Error codes of an Error.
const (
	CodeInvalid = "invalid_argument"
	CodeBusy    = "busy"
	// CodeQuota: the principal is at one of its quotas (config quotas.*).
	CodeQuota        = "quota"
	CodeImageMissing = "image_missing"
	CodeUnavailable  = "unavailable"
	CodeInternal     = "internal"
	// CodeInstall: the package manager could not install what was asked.
	CodeInstall = "install_failed"
)

// Error is a failure that a caller can act on; Message says what is wrong
// and what to do.
type Error struct {
	Code    string
	Message string
	Err     error
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

// Invalid is a rejected request: format and args say what is wrong and
// what to do.
func Invalid(format string, args ...any) error {
	return &Error{Code: CodeInvalid, Message: fmt.Sprintf(format, args...)}
}

// IsInvalid reports whether err is a rejected request.
func IsInvalid(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == CodeInvalid
}

// CodeOf returns err's code, CodeInternal for plain errors.
func CodeOf(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return CodeInternal
}

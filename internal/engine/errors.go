package engine

import (
	"errors"
	"fmt"
)

// Error codes of an engine Error.
const (
	CodeInvalid = "invalid_argument"
	CodeBusy    = "busy"
	// CodeQuota: the principal is at one of its quotas (config quotas.*).
	CodeQuota        = "quota"
	CodeImageMissing = "image_missing"
	CodeUnavailable  = "unavailable"
	CodeInternal     = "internal"
)

// Error is an engine failure that a caller can act on; Message says what is
// wrong and what to do.
type Error struct {
	Code    string
	Message string
	Err     error
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

func invalid(format string, args ...any) error {
	return &Error{Code: CodeInvalid, Message: fmt.Sprintf(format, args...)}
}

// IsInvalid reports whether err is a rejected request.
func IsInvalid(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == CodeInvalid
}

// CodeOf returns err's code, CodeInternal for plain errors.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

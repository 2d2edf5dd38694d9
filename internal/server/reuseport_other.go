//go:build !unix

package server

import (
	"errors"
	"syscall"
)

// reusePort refuses: SO_REUSEPORT is a Unix socket option.
func reusePort(_, _ string, _ syscall.RawConn) error {
	return errors.New("http.reuse_port needs Linux or another Unix: run one server per port here")
}

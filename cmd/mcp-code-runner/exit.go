package main

import (
	"encoding/base64"
	"errors"
	"fmt"
)

// exitCodeError ends the process with a given exit code and no message; "run"
// uses it to exit with the program's own code.
type exitCodeError int

func (e exitCodeError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func asExit(err error, target *exitCodeError) bool { return errors.As(err, target) }

func encodeB64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

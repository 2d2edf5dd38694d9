package main

import (
	"fmt"
	"io"
	"os"
)

// install copies the running executable to dest, read-only and executable
// for everyone (the sandbox's user need not be the installer's). dest must
// not exist: the volume it lands in is new for every sandbox.
func install(dest string) error {
	src, err := os.Open("/proc/self/exe")
	if err != nil {
		return fmt.Errorf("opening this executable: %w", err)
	}
	defer src.Close()
	out, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o555) // #nosec G703 -- dest is the path the sandbox pod spec gives
	if err != nil {
		return fmt.Errorf("creating %s: %w", dest, err)
	}
	if _, err := io.Copy(out, src); err != nil {
		out.Close()
		return fmt.Errorf("copying to %s: %w", dest, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", dest, err)
	}
	// The umask may have taken bits off the mode at creation.
	return os.Chmod(dest, 0o555) // #nosec G703 -- as above
}

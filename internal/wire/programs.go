package wire

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"
)

// programs are the interpreter programs both halves know by file name: the
// registry names them (a language's kernel and warm program), the request
// carries the name, and the agent runs the program.
//
//go:embed programs
var programs embed.FS

// Program returns the source of the program named name (a file name of
// programs/, such as a session kernel or a warm program).
func Program(name string) ([]byte, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		return nil, fmt.Errorf("no program named %q", name)
	}
	src, err := fs.ReadFile(programs, "programs/"+name)
	if err != nil {
		return nil, fmt.Errorf("no program named %q", name)
	}
	return src, nil
}

// HasProgram reports whether a program of that name is built in.
func HasProgram(name string) bool {
	_, err := Program(name)
	return err == nil
}

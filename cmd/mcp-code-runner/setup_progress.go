package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// buildProgress is the progress display of setup's image builds: it writes
// everything to log and shows only the milestones (an image starts, its
// languages' versions, it is built or up to date) and the build's current
// step, which a terminal shows on one line that is rewritten.
type buildProgress struct {
	w, log   io.Writer
	terminal bool
	// languages are the registry's language names: "NAME: VERSION" lines
	// after a build are milestones.
	languages map[string]bool
	partial   []byte
	stepShown bool
}

func newBuildProgress(w, log io.Writer, terminal bool, languages []string) *buildProgress {
	p := &buildProgress{w: w, log: log, terminal: terminal, languages: map[string]bool{}}
	for _, l := range languages {
		p.languages[l] = true
	}
	return p
}

func (p *buildProgress) Write(b []byte) (int, error) {
	_, _ = p.log.Write(b)
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		p.line(strings.TrimRight(string(p.partial[:i]), "\r"))
		p.partial = p.partial[i+1:]
	}
}

// Close ends a step line a terminal shows.
func (p *buildProgress) Close() {
	if p.stepShown {
		fmt.Fprint(p.w, "\r\033[K")
		p.stepShown = false
	}
}

// maxStepWidth keeps a step on one line of a narrow terminal.
const maxStepWidth = 100

func (p *buildProgress) line(l string) {
	// Images that build side by side mark their lines "[image] ".
	var image string
	if strings.HasPrefix(l, "[") {
		if i := strings.Index(l, "] "); i > 0 {
			image, l = l[:i+2], l[i+2:]
		}
	}
	switch {
	case strings.HasPrefix(l, "Step "):
		l = image + l
		if len(l) > maxStepWidth {
			l = l[:maxStepWidth-3] + "..."
		}
		if p.terminal {
			fmt.Fprintf(p.w, "\r\033[K      %s", l)
			p.stepShown = true
		} else {
			fmt.Fprintf(p.w, "      %s\n", l)
		}
	case p.milestone(l):
		p.Close()
		fmt.Fprintf(p.w, "      %s%s\n", image, l)
	}
}

func (p *buildProgress) milestone(l string) bool {
	for _, prefix := range []string{"building ", "built ", "root image ", "pulling ", "debootstrap ", "importing ", "bootstrapped ", "kept the previous image "} {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	if strings.HasSuffix(l, " is up to date") {
		return true
	}
	name, _, ok := strings.Cut(l, ": ")
	return ok && p.languages[name]
}

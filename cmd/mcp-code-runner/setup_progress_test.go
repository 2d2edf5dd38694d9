package main

import (
	"bytes"
	"testing"
)

func TestSetupShowsTheMilestonesAndStepsOfBuildsSideBySideWithTheirImage(t *testing.T) {
	for _, tc := range []struct {
		name string
		log  string
		want string
	}{
		{"one build at a time",
			"building mcp-code-runner/node:1 for linux/amd64\nStep 1/3 : FROM base\n ---> abc\nnode: v20.19.2\nbuilt mcp-code-runner/node:1 in 3s\n",
			"      building mcp-code-runner/node:1 for linux/amd64\n      Step 1/3 : FROM base\n      node: v20.19.2\n      built mcp-code-runner/node:1 in 3s\n"},
		{"side by side, each line marked with its image",
			"[node] building mcp-code-runner/node:1 for linux/amd64\n[go] Step 2/5 : RUN apt-get install\n[go] Get:1 http://deb.debian.org\n[node] node: v20.19.2\n[go] mcp-code-runner/go:1 is up to date\n",
			"      [node] building mcp-code-runner/node:1 for linux/amd64\n      [go] Step 2/5 : RUN apt-get install\n      [node] node: v20.19.2\n      [go] mcp-code-runner/go:1 is up to date\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var shown, log bytes.Buffer
			p := newBuildProgress(&shown, &log, false, []string{"node", "go"})
			_, _ = p.Write([]byte(tc.log))
			p.Close()
			if shown.String() != tc.want {
				t.Errorf("shown:\n%s\nwant:\n%s", shown.String(), tc.want)
			}
			if log.String() != tc.log {
				t.Errorf("the log lost lines: %q", log.String())
			}
		})
	}
}

package main

import (
	"bytes"
	"testing"
)

func TestBuildProgressShowsMilestonesAndLogsEverything(t *testing.T) {
	var shown, log bytes.Buffer
	p := newBuildProgress(&shown, &log, false, []string{"python"})
	input := "building mcp-code-runner/python:2 from python.Dockerfile on mcp-code-runner/base:1\n" +
		"Step 1/3 : FROM mcp-code-runner/base:1\n ---> 1234\nGet:1 http://deb.debian.org trixie InRelease\n" +
		"python: Python 3.13.5\nbuilt mcp-code-runner/python:2 in 1m2s\nmcp-code-runner/base:1 is up to date\n"
	// Written in pieces that split lines, as the daemon's stream does.
	for i := 0; i < len(input); i += 7 {
		_, _ = p.Write([]byte(input[i:min(i+7, len(input))]))
	}
	p.Close()
	want := "      building mcp-code-runner/python:2 from python.Dockerfile on mcp-code-runner/base:1\n" +
		"      Step 1/3 : FROM mcp-code-runner/base:1\n" +
		"      python: Python 3.13.5\n" +
		"      built mcp-code-runner/python:2 in 1m2s\n" +
		"      mcp-code-runner/base:1 is up to date\n"
	if shown.String() != want {
		t.Errorf("shown:\n%s\nwant:\n%s", shown.String(), want)
	}
	if log.String() != input {
		t.Errorf("the log lost output:\n%s", log.String())
	}
}

func TestBuildProgressShowsImagesBuiltSideBySideWithTheirMark(t *testing.T) {
	var shown, log bytes.Buffer
	p := newBuildProgress(&shown, &log, false, []string{"node", "go"})
	input := "[node] building mcp-code-runner/node:1 for linux/amd64\n[go] Step 2/5 : RUN apt-get install\n[go] Get:1 http://deb.debian.org\n" +
		"[node] node: v20.19.2\n[go] mcp-code-runner/go:1 is up to date\n"
	_, _ = p.Write([]byte(input))
	p.Close()
	want := "      [node] building mcp-code-runner/node:1 for linux/amd64\n      [go] Step 2/5 : RUN apt-get install\n" +
		"      [node] node: v20.19.2\n      [go] mcp-code-runner/go:1 is up to date\n"
	if shown.String() != want {
		t.Errorf("shown:\n%s\nwant:\n%s", shown.String(), want)
	}
	if log.String() != input {
		t.Errorf("the log lost output:\n%s", log.String())
	}
}

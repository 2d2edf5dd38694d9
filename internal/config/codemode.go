package config

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// CodeMode lets sandbox code call the tools of MCP servers the operator
// names here: a run given tools (run_code's, start_execution's or
// create_session's tools) imports mcr_tools (Python) or mcr-tools
// (JavaScript, TypeScript), and the server makes each call on the
// program's behalf over the sandbox's agent link, with the upstream's
// credentials kept on the server. See docs/TOOLS.md.
type CodeMode struct {
	// Servers are the MCP servers a run may be given, by the name runs
	// use: {command, args, env, cwd} for a server started by this one as
	// its child over stdio, or {url, headers} for a Streamable HTTP one.
	// An env or header value may hold {secret:NAME} (the value of the
	// operator's secret NAME of network.secrets) or {env:NAME} (the
	// server's environment variable NAME); neither ever reaches a sandbox.
	Servers map[string]CodeModeServer `json:"servers"`
	// Grants say which principals may give their runs which servers; empty
	// means every principal may use every server (one user's server).
	Grants []CodeModeGrant `json:"grants"`
	// CallTimeoutSeconds bounds one brokered tool call, connecting
	// included; a call past it gets an error saying so.
	CallTimeoutSeconds int `json:"call_timeout_seconds"`
	// MaxResultBytes bounds one call's result as JSON: a larger result is
	// refused with an error saying its size, and never enters the sandbox.
	MaxResultBytes int `json:"max_result_bytes"`
	// MaxCallsPerRun bounds the tool calls of one run (of one session
	// call); the calls past it are refused.
	MaxCallsPerRun int `json:"max_calls_per_run"`
	// CallsPerMinute bounds each principal's tool calls, all its runs
	// together: a minute's worth at once, then refilled at this rate.
	CallsPerMinute int `json:"calls_per_minute"`
	// MaxConcurrentCalls bounds the calls one run has in flight at once.
	MaxConcurrentCalls int `json:"max_concurrent_calls"`
	// AuditArguments writes each call's arguments into its audit line;
	// off, the line names the server and tool and says how large the
	// arguments and result were, never what they held.
	AuditArguments bool `json:"audit_arguments"`
}

// CodeModeServer is one upstream MCP server of code mode.
type CodeModeServer struct {
	// Command starts a stdio server (with Args, Env and Cwd).
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	// URL is a Streamable HTTP server's endpoint (with Headers).
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Approval asks the run's user, through MCP elicitation, before a
	// call: "" or "never" (no question), "server" (once per run or session
	// for the server), or "tools" (once per tool named in ApprovalTools,
	// the others pass).
	Approval      string   `json:"approval,omitempty"`
	ApprovalTools []string `json:"approval_tools,omitempty"`
}

// Stdio reports whether s is a server started over stdio.
func (s CodeModeServer) Stdio() bool { return s.Command != "" }

// CodeModeGrant gives Principals (their names; "*" for every one) the use
// of Servers (their names; "*" for every one).
type CodeModeGrant struct {
	Principals []string `json:"principals"`
	Servers    []string `json:"servers"`
}

// Approval values of a code mode server.
const (
	ApprovalNever  = "never"
	ApprovalServer = "server"
	ApprovalTools  = "tools"
)

// codeModeName is a server's name: a Python module and a JavaScript
// module path alike.
var codeModeName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// secretRef finds the {secret:NAME} and {env:NAME} references of a value.
var secretRef = regexp.MustCompile(`\{(secret|env):([^{}]*)\}`)

// Granted lists the servers principal may use, sorted.
func (c CodeMode) Granted(principal string) []string {
	var out []string
	for name := range c.Servers {
		if c.Grants == nil || c.grants(principal, name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func (c CodeMode) grants(principal, server string) bool {
	for _, g := range c.Grants {
		if (slices.Contains(g.Principals, "*") || slices.Contains(g.Principals, principal)) &&
			(slices.Contains(g.Servers, "*") || slices.Contains(g.Servers, server)) {
			return true
		}
	}
	return false
}

// Allows reports whether principal may use server.
func (c CodeMode) Allows(principal, server string) bool {
	_, ok := c.Servers[server]
	return ok && (c.Grants == nil || c.grants(principal, server))
}

// Expand replaces the {secret:NAME} and {env:NAME} references of v with
// their values: secret reads a secret of network.secrets, getenv the
// server's environment.
func Expand(v string, secret func(name string) (string, error), getenv func(string) string) (string, error) {
	var err error
	out := secretRef.ReplaceAllStringFunc(v, func(ref string) string {
		m := secretRef.FindStringSubmatch(ref)
		if m[1] == "env" {
			val := getenv(m[2])
			if val == "" && err == nil {
				err = fmt.Errorf("the environment variable %s is empty or unset; set it in the server's environment", m[2])
			}
			return val
		}
		val, serr := secret(m[2])
		if serr != nil && err == nil {
			err = serr
		}
		return val
	})
	return out, err
}

func (c CodeMode) validate(secrets []Secret) []error {
	var errs []error
	for _, n := range []struct {
		name string
		v    int
	}{{"call_timeout_seconds", c.CallTimeoutSeconds}, {"max_result_bytes", c.MaxResultBytes},
		{"max_calls_per_run", c.MaxCallsPerRun}, {"calls_per_minute", c.CallsPerMinute}, {"max_concurrent_calls", c.MaxConcurrentCalls}} {
		if n.v <= 0 {
			errs = append(errs, fmt.Errorf("code_mode.%s must be positive", n.name))
		}
	}
	names := make([]string, 0, len(c.Servers))
	for name := range c.Servers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s := c.Servers[name]
		at := fmt.Sprintf("code_mode.servers %q", name)
		if !codeModeName.MatchString(name) {
			errs = append(errs, fmt.Errorf("%s: use lower-case letters, digits and _, starting with a letter (at most 32): the name is a Python module's and a JavaScript module path's", at))
		}
		switch {
		case (s.Command == "") == (s.URL == ""):
			errs = append(errs, fmt.Errorf("%s: give command (a stdio server this server starts) or url (a Streamable HTTP server), exactly one", at))
		case s.URL != "" && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://"):
			errs = append(errs, fmt.Errorf("%s: url %q: want an http:// or https:// URL of the server's MCP endpoint", at, s.URL))
		case s.URL != "" && (len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != ""):
			errs = append(errs, fmt.Errorf("%s: args, env and cwd are a stdio server's; a url server takes headers", at))
		case s.Command != "" && len(s.Headers) > 0:
			errs = append(errs, fmt.Errorf("%s: headers are a url server's; a stdio server takes env", at))
		}
		for k, v := range s.Headers {
			if !headerName.MatchString(k) {
				errs = append(errs, fmt.Errorf("%s: header %q: want a header name like Authorization", at, k))
			}
			errs = append(errs, checkRefs(at, v, secrets)...)
		}
		for _, v := range s.Env {
			errs = append(errs, checkRefs(at, v, secrets)...)
		}
		switch s.Approval {
		case "", ApprovalNever, ApprovalServer:
		case ApprovalTools:
			if len(s.ApprovalTools) == 0 {
				errs = append(errs, fmt.Errorf("%s: approval tools needs approval_tools, the tools whose calls are asked about", at))
			}
		default:
			errs = append(errs, fmt.Errorf("%s: approval %q: want never, server or tools", at, s.Approval))
		}
	}
	for i, g := range c.Grants {
		for _, s := range g.Servers {
			if _, ok := c.Servers[s]; !ok && s != "*" {
				errs = append(errs, fmt.Errorf("code_mode.grants[%d]: server %q is not one of code_mode.servers", i, s))
			}
		}
		if len(g.Principals) == 0 || len(g.Servers) == 0 {
			errs = append(errs, fmt.Errorf("code_mode.grants[%d]: name principals and servers (\"*\" for every one)", i))
		}
	}
	return errs
}

// checkRefs checks that the secrets v names are operator secrets.
func checkRefs(at, v string, secrets []Secret) []error {
	var errs []error
	for _, m := range secretRef.FindAllStringSubmatch(v, -1) {
		if m[1] == "secret" && !slices.ContainsFunc(secrets, func(s Secret) bool { return s.Name == m[2] }) {
			errs = append(errs, fmt.Errorf("%s: {secret:%s} names no secret of network.secrets; add one with that name (its value_env or value_file)", at, m[2]))
		}
	}
	return errs
}

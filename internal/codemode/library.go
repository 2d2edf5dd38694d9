package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// The files of a run's libraries, relative to the directory the agent
// makes for them in the sandbox: the Python package on PYTHONPATH, the
// Node.js package on NODE_PATH (and, for import, the resolve hook that
// NODE_OPTIONS registers), and the TypeScript declarations tsc is given.
const (
	pythonDir = "python/mcr_tools/"
	nodeDir   = "node_modules/mcr-tools/"
	typesFile = "types/mcr-tools.d.ts"
)

// Library generates the libraries of a run given servers: each server's
// tools, listed from it now, become Python functions and JavaScript
// exports with their descriptions, and TypeScript declarations typed from
// their input and output schemas.
func (b *Broker) Library(ctx context.Context, servers []string) (*wire.Tools, error) {
	lib := &wire.Tools{Servers: slices.Clone(servers)}
	add := func(path, data string) { lib.Files = append(lib.Files, wire.File{Path: path, Data: []byte(data)}) }
	add(pythonDir+"__init__.py", pythonInit(servers))
	add(nodeDir+"package.json", `{"name":"mcr-tools","version":"1.0.0","main":"index.js","types":"index.d.ts"}`+"\n")
	add(nodeDir+"index.js", nodeIndex(servers))
	add("register.mjs", registerMJS)
	add("hooks.mjs", hooksMJS)
	var dts strings.Builder
	dts.WriteString(typesHeader(servers))
	for _, s := range servers {
		tools, err := b.Tools(ctx, s)
		if err != nil {
			return nil, err
		}
		add(pythonDir+s+".py", pythonModule(s, tools))
		add(nodeDir+s+".js", nodeModule(s, tools))
		dts.WriteString(typesModule(s, tools))
	}
	add(typesFile, dts.String())
	return lib, nil
}

// Describe returns the signatures of server's tools (one tool's when tool
// is set) in Python and TypeScript, with their descriptions: what a model
// reads before it writes the code.
func (b *Broker) Describe(ctx context.Context, server, tool string) (string, error) {
	tools, err := b.Tools(ctx, server)
	if err != nil {
		return "", err
	}
	if tool != "" {
		i := slices.IndexFunc(tools, func(t *mcp.Tool) bool { return t.Name == tool })
		if i < 0 {
			names := make([]string, 0, len(tools))
			for _, t := range tools {
				names = append(names, t.Name)
			}
			return "", fmt.Errorf("MCP server %q has no tool %q; its tools are %s", server, tool, strings.Join(names, ", "))
		}
		tools = tools[i : i+1]
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "# MCP server %s: %d tool(s)\n\n", server, len(tools))
	fmt.Fprintf(&sb, "Give a run the server with tools: [%q] (run_code, start_execution, create_session).\n", server)
	fmt.Fprintf(&sb, "Each call returns the tool's CallToolResult: content, structuredContent, isError.\n\n")
	fmt.Fprintf(&sb, "## Python\n\n```python\nimport mcr_tools\n")
	for _, t := range tools {
		sb.WriteString(pythonFunc(server, t, false))
	}
	fmt.Fprintf(&sb, "```\n\n## TypeScript / JavaScript\n\n```typescript\n")
	fmt.Fprintf(&sb, "import { %s } from \"mcr-tools/%s\";  // or require(\"mcr-tools/%s\")\n", strings.Join(exportNames(tools), ", "), server, server)
	for _, t := range tools {
		sb.WriteString(typesFunc(t))
	}
	sb.WriteString("```\n")
	return sb.String(), nil
}

var (
	identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	notIdent   = regexp.MustCompile(`[^A-Za-z0-9_]`)
)

// pythonKeywords are the names a Python parameter or function cannot have.
var pythonKeywords = map[string]bool{"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true,
	"async": true, "await": true, "break": true, "class": true, "continue": true, "def": true, "del": true, "elif": true,
	"else": true, "except": true, "finally": true, "for": true, "from": true, "global": true, "if": true, "import": true,
	"in": true, "is": true, "lambda": true, "nonlocal": true, "not": true, "or": true, "pass": true, "raise": true,
	"return": true, "try": true, "while": true, "with": true, "yield": true}

// funcName is a tool's name as a Python function and JavaScript export:
// what is not a letter, digit or _ becomes _ (get-env: get_env).
func funcName(tool string) string {
	n := notIdent.ReplaceAllString(tool, "_")
	if n == "" || n[0] >= '0' && n[0] <= '9' {
		n = "_" + n
	}
	if pythonKeywords[n] || n == "call" {
		n += "_"
	}
	return n
}

// exportNames are the functions a server's module has, one per tool whose
// name does not clash with an earlier one's (a clashing tool is reached
// through call).
func exportNames(tools []*mcp.Tool) []string {
	var names []string
	for _, t := range tools {
		if n := funcName(t.Name); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// schema is the part of a JSON Schema the libraries read.
type schema struct {
	Type        any                `json:"type"`
	Description string             `json:"description"`
	Properties  map[string]*schema `json:"properties"`
	Required    []string           `json:"required"`
	Items       *schema            `json:"items"`
	Enum        []any              `json:"enum"`
	AnyOf       []*schema          `json:"anyOf"`
	OneOf       []*schema          `json:"oneOf"`
	Default     any                `json:"default"`
}

func schemaOf(v any) *schema {
	if v == nil {
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var s schema
	if json.Unmarshal(data, &s) != nil {
		return nil
	}
	return &s
}

// types lists the schema's type names.
func (s *schema) types() []string {
	switch t := s.Type.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if str, ok := x.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}

// param is one argument of a tool, in the order the libraries list them:
// required ones first, each group by name.
type param struct {
	name     string
	required bool
	s        *schema
}

func params(in *schema) []param {
	if in == nil {
		return nil
	}
	var out []param
	for name, s := range in.Properties {
		out = append(out, param{name: name, required: slices.Contains(in.Required, name), s: s})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].required != out[j].required {
			return out[i].required
		}
		return out[i].name < out[j].name
	})
	return out
}

// tsType is a schema as a TypeScript type, unknown where it says nothing
// the type system can hold.
func tsType(s *schema, depth int) string {
	if s == nil || depth > 6 {
		return "unknown"
	}
	if len(s.Enum) > 0 {
		var lits []string
		for _, e := range s.Enum {
			b, _ := json.Marshal(e)
			lits = append(lits, string(b))
		}
		return strings.Join(lits, " | ")
	}
	if alts := append(slices.Clone(s.AnyOf), s.OneOf...); len(alts) > 0 {
		var ts []string
		for _, a := range alts {
			ts = append(ts, tsType(a, depth+1))
		}
		return strings.Join(ts, " | ")
	}
	var ts []string
	for _, t := range s.types() {
		switch t {
		case "string":
			ts = append(ts, "string")
		case "number", "integer":
			ts = append(ts, "number")
		case "boolean":
			ts = append(ts, "boolean")
		case "null":
			ts = append(ts, "null")
		case "array":
			ts = append(ts, "Array<"+tsType(s.Items, depth+1)+">")
		case "object":
			ts = append(ts, tsObject(s, depth))
		}
	}
	if len(ts) == 0 {
		if s.Properties != nil {
			return tsObject(s, depth)
		}
		return "unknown"
	}
	return strings.Join(ts, " | ")
}

func tsObject(s *schema, depth int) string {
	if len(s.Properties) == 0 {
		return "Record<string, unknown>"
	}
	var fields []string
	for _, p := range params(s) {
		opt := "?"
		if p.required {
			opt = ""
		}
		name := p.name
		if !identifier.MatchString(name) {
			name = fmt.Sprintf("%q", name)
		}
		fields = append(fields, name+opt+": "+tsType(p.s, depth+1))
	}
	return "{ " + strings.Join(fields, "; ") + " }"
}

// pythonTypes are JSON Schema's types as Python's.
var pythonTypes = map[string]string{"string": "str", "integer": "int", "number": "float", "boolean": "bool",
	"array": "list", "object": "dict", "null": "None"}

// pyType is a schema's Python type hint.
func pyType(s *schema) string {
	if s == nil {
		return "Any"
	}
	var ts []string
	for _, t := range s.types() {
		if py, ok := pythonTypes[t]; ok {
			ts = append(ts, py)
		}
	}
	if len(ts) == 0 {
		return "Any"
	}
	return strings.Join(ts, " | ")
}

// schemaWord is a parameter's type as the docs say it.
func schemaWord(s *schema) string {
	if s == nil {
		return "any"
	}
	if len(s.Enum) > 0 {
		return "one of " + tsType(s, 0)
	}
	if t := s.types(); len(t) > 0 {
		return strings.Join(t, " or ")
	}
	return "any"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// pyDoc is text made safe inside a Python triple-quoted string.
func pyDoc(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	return strings.ReplaceAll(s, `"""`, `\"\"\"`)
}

// jsDoc is text made safe inside a /** */ comment.
func jsDoc(s string) string { return strings.ReplaceAll(s, "*/", "*\\/") }

// pythonFunc is one tool's Python function: keyword arguments from its
// input schema (**arguments when a property's name is not a Python name),
// its description and arguments in its docstring. Without body it is the
// signature alone (the discovery text).
func pythonFunc(server string, t *mcp.Tool, body bool) string {
	ps := params(schemaOf(t.InputSchema))
	plain := true
	for _, p := range ps {
		if !identifier.MatchString(p.name) || pythonKeywords[p.name] || p.name == "arguments" {
			plain = false
		}
	}
	var sig []string
	if plain && len(ps) > 0 {
		sig = append(sig, "*")
		for _, p := range ps {
			if p.required {
				sig = append(sig, fmt.Sprintf("%s: %s", p.name, pyType(p.s)))
			} else {
				sig = append(sig, fmt.Sprintf("%s: %s | None = None", p.name, pyType(p.s)))
			}
		}
	} else if len(ps) > 0 {
		sig = append(sig, "**arguments")
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\ndef %s(%s) -> dict:\n", funcName(t.Name), strings.Join(sig, ", "))
	fmt.Fprintf(&sb, "    \"\"\"%s", pyDoc(strings.TrimSpace(t.Description)))
	if funcName(t.Name) != t.Name {
		fmt.Fprintf(&sb, "\n\n    The tool %s of MCP server %s.", pyDoc(t.Name), server)
	}
	if len(ps) > 0 {
		sb.WriteString("\n\n    Args:")
		for _, p := range ps {
			req := ""
			if p.required {
				req = ", required"
			}
			fmt.Fprintf(&sb, "\n        %s (%s%s): %s", pyDoc(p.name), pyDoc(schemaWord(p.s)), req, pyDoc(oneLine(p.s.Description)))
		}
	}
	sb.WriteString("\n\n    Returns the tool's CallToolResult as a dict: content, structuredContent, isError.\n    \"\"\"\n")
	if !body {
		sb.WriteString("    ...\n")
		return sb.String()
	}
	switch {
	case len(ps) == 0:
		fmt.Fprintf(&sb, "    return _call(%q, %q, {})\n", server, t.Name)
	case plain:
		var pairs []string
		for _, p := range ps {
			pairs = append(pairs, fmt.Sprintf("(%q, %s)", p.name, p.name))
		}
		fmt.Fprintf(&sb, "    return _call(%q, %q, {k: v for k, v in (%s,) if v is not None})\n", server, t.Name, strings.Join(pairs, ", "))
	default:
		fmt.Fprintf(&sb, "    return _call(%q, %q, arguments)\n", server, t.Name)
	}
	return sb.String()
}

func pythonModule(server string, tools []*mcp.Tool) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "\"\"\"The tools of MCP server %s, called through mcp-code-runner (generated).\"\"\"\n", server)
	sb.WriteString("from typing import Any\n\nfrom . import call as _call\n")
	var done []string
	for _, t := range tools {
		if n := funcName(t.Name); !slices.Contains(done, n) {
			done = append(done, n)
			sb.WriteString(pythonFunc(server, t, true))
		}
	}
	fmt.Fprintf(&sb, "\n__all__ = %s\n", pyList(done))
	return sb.String()
}

func pyList(names []string) string {
	q := make([]string, 0, len(names))
	for _, n := range names {
		q = append(q, fmt.Sprintf("%q", n))
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func pythonInit(servers []string) string {
	return strings.Replace(pythonInitTemplate, "{servers}", pyList(servers), 1)
}

const pythonInitTemplate = `"""Calls to the tools of the MCP servers this run was given (mcp-code-runner's code mode).

    import mcr_tools
    result = mcr_tools.call("server", "tool", {"arg": 1})   # the tool's CallToolResult as a dict
    mcr_tools.server.tool(arg=1)                            # the same, generated per server

A call travels over the sandbox's agent to the server, which makes it; an
error (not granted, over a limit, the server failed) raises ToolError. A
tool's own failure comes back as a result with isError true.
"""
import importlib as _importlib
import json as _json
import os as _os
import socket as _socket

SERVERS = {servers}


class ToolError(Exception):
    """A tool call that could not be made."""


def call(server, tool, arguments=None, /, **kwargs):
    """Calls tool of MCP server with arguments (a dict, or keyword arguments) and returns its CallToolResult as a dict."""
    args = dict(arguments or {})
    args.update(kwargs)
    path = _os.environ.get("MCR_TOOLS_SOCKET")
    if not path:
        raise ToolError("this program was not given tools: name the MCP servers in tools of run_code, start_execution or create_session")
    with _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM) as s:
        s.connect(path)
        s.sendall((_json.dumps({"server": server, "tool": tool, "arguments": args}) + "\n").encode())
        with s.makefile("rb") as f:
            line = f.readline()
    if not line:
        raise ToolError("the sandbox's agent closed the call without an answer")
    answer = _json.loads(line)
    if answer.get("error"):
        raise ToolError(answer["error"])
    return answer["result"]


def __getattr__(name):
    if name in SERVERS:
        return _importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'mcr_tools' has no attribute {name!r}; this run was given the servers {SERVERS}")


__all__ = ["call", "ToolError", "SERVERS"] + SERVERS
`

func jsList(names []string) string {
	b, _ := json.Marshal(names)
	return string(b)
}

func nodeIndex(servers []string) string {
	return strings.Replace(nodeIndexTemplate, "{servers}", jsList(servers), 1)
}

const nodeIndexTemplate = `"use strict";
// Calls to the tools of the MCP servers this run was given (mcp-code-runner's code mode).
//   const { call } = require("mcr-tools");          // or: import { call } from "mcr-tools";
//   const result = await call("server", "tool", { arg: 1 });   // the tool's CallToolResult
//   const { tool } = require("mcr-tools/server");  // generated per server
const net = require("node:net");

class ToolError extends Error {
  constructor(message) { super(message); this.name = "ToolError"; }
}

function call(server, tool, args) {
  const path = process.env.MCR_TOOLS_SOCKET;
  if (!path) {
    return Promise.reject(new ToolError("this program was not given tools: name the MCP servers in tools of run_code, start_execution or create_session"));
  }
  return new Promise((resolve, reject) => {
    const sock = net.createConnection(path);
    const chunks = [];
    let answered = false;
    sock.on("connect", () => {
      sock.write(JSON.stringify({ server, tool, arguments: args ?? {} }) + "\n");
    });
    sock.on("data", (d) => {
      chunks.push(d);
      if (d.includes(10)) {
        answered = true;
        sock.end();
        const line = Buffer.concat(chunks).toString("utf8");
        const answer = JSON.parse(line.slice(0, line.indexOf("\n")));
        if (answer.error) reject(new ToolError(answer.error));
        else resolve(answer.result);
      }
    });
    sock.on("error", (err) => { if (!answered) reject(err); });
    sock.on("close", () => { if (!answered) reject(new ToolError("the sandbox's agent closed the call without an answer")); });
  });
}

exports.call = call;
exports.ToolError = ToolError;
exports.servers = {servers};
`

func nodeModule(server string, tools []*mcp.Tool) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "\"use strict\";\n// The tools of MCP server %s, called through mcp-code-runner (generated).\nconst { call } = require(\"./index.js\");\n", server)
	var done []string
	for _, t := range tools {
		n := funcName(t.Name)
		if slices.Contains(done, n) {
			continue
		}
		done = append(done, n)
		fmt.Fprintf(&sb, "\n/** %s */\nexports.%s = (args) => call(%q, %q, args ?? {});\n", jsDoc(oneLine(t.Description)), n, server, t.Name)
	}
	return sb.String()
}

// typesHeader declares the module mcr-tools itself.
func typesHeader(servers []string) string {
	names := make([]string, 0, len(servers))
	for _, s := range servers {
		names = append(names, fmt.Sprintf("%q", s))
	}
	server := "string"
	if len(names) > 0 {
		server = strings.Join(names, " | ")
	}
	return `// The tools of the MCP servers this run was given (mcp-code-runner's code mode, generated).
declare module "mcr-tools" {
  /** A content block: text (text), image or audio (data, mimeType), resource or resource_link. */
  export interface Content {
    type: "text" | "image" | "audio" | "resource" | "resource_link" | string;
    text?: string;
    data?: string;
    mimeType?: string;
    [key: string]: unknown;
  }
  /** A tool's result: its content, its structured content (typed from its output schema), and whether it failed. */
  export interface CallToolResult<S = unknown> {
    content: Content[];
    structuredContent: S | null;
    isError: boolean;
  }
  /** A call that could not be made (not granted, over a limit, the server failed). */
  export class ToolError extends Error {}
  export const servers: string[];
  /** Calls tool of MCP server with args; resolves to its CallToolResult. */
  export function call(server: ` + server + `, tool: string, args?: Record<string, unknown>): Promise<CallToolResult>;
}
`
}

func typesFunc(t *mcp.Tool) string {
	in := schemaOf(t.InputSchema)
	arg := "args?: Record<string, never>"
	if ps := params(in); len(ps) > 0 {
		opt := "?"
		for _, p := range ps {
			if p.required {
				opt = ""
			}
		}
		arg = "args" + opt + ": " + tsObject(in, 0)
	}
	out := "unknown"
	if o := schemaOf(t.OutputSchema); o != nil {
		out = tsType(o, 0)
	}
	var doc strings.Builder
	doc.WriteString(jsDoc(strings.TrimSpace(t.Description)))
	for _, p := range params(in) {
		if p.s != nil && p.s.Description != "" {
			fmt.Fprintf(&doc, "\n@param args.%s %s", p.name, jsDoc(oneLine(p.s.Description)))
		}
	}
	text := strings.ReplaceAll(doc.String(), "\n", "\n   * ")
	return fmt.Sprintf("  /**\n   * %s\n   */\n  export function %s(%s): Promise<CallToolResult<%s>>;\n", text, funcName(t.Name), arg, out)
}

func typesModule(server string, tools []*mcp.Tool) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "declare module \"mcr-tools/%s\" {\n  import type { CallToolResult } from \"mcr-tools\";\n", server)
	var done []string
	for _, t := range tools {
		if n := funcName(t.Name); !slices.Contains(done, n) {
			done = append(done, n)
			sb.WriteString(typesFunc(t))
		}
	}
	sb.WriteString("}\n")
	return sb.String()
}

// registerMJS, given to Node.js with --import, registers the resolve hook
// through which import finds mcr-tools (NODE_PATH serves require alone).
const registerMJS = `import { register } from "node:module";
register("./hooks.mjs", import.meta.url);
`

const hooksMJS = `const root = new URL("./node_modules/mcr-tools/", import.meta.url);
export async function resolve(specifier, context, nextResolve) {
  if (specifier === "mcr-tools" || specifier.startsWith("mcr-tools/")) {
    const sub = specifier === "mcr-tools" ? "index" : specifier.slice("mcr-tools/".length);
    if (/^[a-z][a-z0-9_]*$/.test(sub)) {
      return { url: new URL(sub + ".js", root).href, format: "commonjs", shortCircuit: true };
    }
  }
  return nextResolve(specifier, context);
}
`

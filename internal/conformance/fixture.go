// Package conformance holds the fixtures of the official MCP conformance
// suite (@modelcontextprotocol/conformance): the tools, resources and prompts
// with fixed names (test_simple_text, slow_compute, test://static-text, ...)
// that its scenarios call. They are mounted on a server of this project's MCP
// layer (mcpserver.NewBareServer, served by transport.HTTPHandler) by the
// fixture server in ./fixtureserver, so that the suite exercises the
// product's HTTP handler, guards, cancellation routing and progress and
// logging plumbing with every scenario it has. The product never imports
// this package: its tool list stays its own.
//
// The fixtures answer as the suite's reference servers do (the TypeScript
// "everything server" of the conformance repository and go-sdk's
// conformance/everything-server).
package conformance

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/tasks"
)

// ServerName is the fixture server's implementation name.
const ServerName = "mcp-code-runner-conformance-fixture"

// NewServer returns a server of this project's MCP layer with every fixture
// of the conformance suite mounted.
func NewServer(version string, log *slog.Logger) *mcp.Server {
	s := mcpserver.NewBareServer(mcpserver.Surface{
		Implementation: &mcp.Implementation{Name: ServerName, Version: version},
		Capabilities: &mcp.ServerCapabilities{
			Tools:       &mcp.ToolCapabilities{},
			Resources:   &mcp.ResourceCapabilities{Subscribe: true},
			Prompts:     &mcp.PromptCapabilities{},
			Logging:     &mcp.LoggingCapabilities{},
			Completions: &mcp.CompletionCapabilities{},
		},
		CompletionHandler: func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
		},
		// Subscriptions are kept by the SDK; the fixture accepts them all.
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	}, log)
	addContentTools(s)
	addDiagnosticTools(s)
	addInputRequiredTools(s)
	addTaskTools(s)
	for _, name := range TaskTools {
		tasks.Support(s, name)
	}
	addResources(s)
	addPrompts(s)
	return s
}

// The suite's sample payloads: a 1x1 red PNG and a minimal WAV file.
const (
	imageBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	audioBase64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
)

func mustDecode(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

var (
	imageData = mustDecode(imageBase64)
	audioData = mustDecode(audioBase64)
)

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// none is the input of a tool without arguments.
type none struct{}

func tool[In any](s *mcp.Server, name, description string, fn func(context.Context, *mcp.CallToolRequest, In) (*mcp.CallToolResult, error)) {
	mcp.AddTool(s, &mcp.Tool{Name: name, Description: description}, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		res, err := fn(ctx, req, in)
		return res, nil, err
	})
}

// addContentTools adds the tools of the tools-call-* scenarios (both eras):
// one content type each, or several at once; the tools that notify, fail or
// ask the client, and those of the schema scenarios, come from the functions
// after it.
func addContentTools(s *mcp.Server) {
	tool(s, "test_simple_text", "Tests simple text content response", func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, error) {
		return text("This is a simple text response for testing."), nil
	})
	tool(s, "test_image_content", "Tests image content response", func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: imageData, MIMEType: "image/png"}}}, nil
	})
	tool(s, "test_audio_content", "Tests audio content response", func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: audioData, MIMEType: "audio/wav"}}}, nil
	})
	tool(s, "test_embedded_resource", "Tests embedded resource content response", func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content.",
		}}}}, nil
	})
	tool(s, "test_multiple_content_types", "Tests response with multiple content types (text, image, resource)", func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "Multiple content types test:"},
			&mcp.ImageContent{Data: imageData, MIMEType: "image/png"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`,
			}},
		}}, nil
	})
	addNotifyingTools(s)
	addClientRequestTools(s)
	addSchemaTools(s)
}

// addNotifyingTools adds the tools that log, report progress or fail.
func addNotifyingTools(s *mcp.Server) {
	tool(s, "test_tool_with_logging", "Tests tool that emits log messages during execution", func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, error) {
		for _, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: ServerName, Data: msg}); err != nil {
				return nil, err
			}
		}
		return text("Tool with logging executed successfully"), nil
	})
	tool(s, "test_tool_with_progress", "Tests tool that reports progress notifications", func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, error) {
		token := req.Params.GetProgressToken()
		for _, p := range []float64{0, 50, 100} {
			if token == nil {
				break
			}
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token, Progress: p, Total: 100, Message: fmt.Sprintf("Completed step %.0f of 100", p),
			}); err != nil {
				return nil, err
			}
		}
		return text(fmt.Sprint(token)), nil
	})
	tool(s, "test_error_handling", "Tests error response handling", func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, error) {
		return nil, errors.New("this tool intentionally returns an error for testing")
	})
}

// addClientRequestTools adds the tools that ask the client: sampling and
// elicitation.
func addClientRequestTools(s *mcp.Server) {
	type promptInput struct {
		Prompt string `json:"prompt" jsonschema:"The prompt to send to the LLM"`
	}
	tool(s, "test_sampling", "Tests server-initiated sampling (LLM completion request)", func(ctx context.Context, req *mcp.CallToolRequest, in promptInput) (*mcp.CallToolResult, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
			Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Prompt}}},
			MaxTokens: 100,
		})
		if err != nil {
			return nil, fmt.Errorf("sampling failed: %w", err)
		}
		reply := "(non-text response)"
		if tc, ok := res.Content.(*mcp.TextContent); ok {
			reply = tc.Text
		}
		return text("LLM response: " + reply), nil
	})
	type messageInput struct {
		Message string `json:"message" jsonschema:"The message to show the user"`
	}
	elicit := func(ctx context.Context, req *mcp.CallToolRequest, message string, schema any) (*mcp.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: message, RequestedSchema: schema})
		if err != nil {
			return nil, fmt.Errorf("elicitation failed: %w", err)
		}
		content, _ := json.Marshal(res.Content)
		return text(fmt.Sprintf("User response: action=%s, content=%s", res.Action, content)), nil
	}
	tool(s, "test_elicitation", "Tests server-initiated elicitation (user input request)", func(ctx context.Context, req *mcp.CallToolRequest, in messageInput) (*mcp.CallToolResult, error) {
		return elicit(ctx, req, in.Message, &jsonschema.Schema{
			Type:       "object",
			Properties: map[string]*jsonschema.Schema{"response": {Type: "string", Description: "User's response"}},
			Required:   []string{"response"},
		})
	})
	tool(s, "test_elicitation_sep1034_defaults", "Tests elicitation with default values per SEP-1034", func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, error) {
		return elicit(ctx, req, "Please review and update the form fields with defaults", json.RawMessage(`{
			"type": "object",
			"properties": {
				"name": {"type": "string", "description": "User name", "default": "John Doe"},
				"age": {"type": "integer", "description": "User age", "default": 30},
				"score": {"type": "number", "description": "User score", "default": 95.5},
				"status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
				"verified": {"type": "boolean", "description": "Verification status", "default": true}
			}
		}`))
	})
	tool(s, "test_elicitation_sep1330_enums", "Tests elicitation with enum schema improvements per SEP-1330", func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, error) {
		return elicit(ctx, req, "Test enum schemas", json.RawMessage(`{
			"type": "object",
			"properties": {
				"untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
				"titledSingle": {"type": "string", "oneOf": [
					{"const": "value1", "title": "First Option"},
					{"const": "value2", "title": "Second Option"},
					{"const": "value3", "title": "Third Option"}]},
				"legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
				"untitledMulti": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
				"titledMulti": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"anyOf": [
					{"const": "value1", "title": "First Option"},
					{"const": "value2", "title": "Second Option"},
					{"const": "value3", "title": "Third Option"}]}}
			}
		}`))
	})
}

// addSchemaTools adds the tools of the JSON Schema 2020-12 and x-mcp-header
// scenarios.
func addSchemaTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{
		Name:        "json_schema_2020_12_tool",
		Description: "Tool with JSON Schema 2020-12 features (SEP-1613, SEP-2106)",
		InputSchema: json.RawMessage(`{
			"$schema": "https://json-schema.org/draft/2020-12/schema",
			"type": "object",
			"$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
			"properties": {
				"name": {"type": "string"},
				"address": {"$ref": "#/$defs/address"},
				"contactMethod": {"type": "string", "enum": ["phone", "email"]},
				"phone": {"type": "string"},
				"email": {"type": "string"}
			},
			"allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
			"if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
			"then": {"required": ["phone"]},
			"else": {"required": ["email"]},
			"additionalProperties": false
		}`),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in json.RawMessage) (*mcp.CallToolResult, any, error) {
		return text(fmt.Sprintf("JSON Schema 2020-12 tool called with: %s", in)), nil, nil
	})
	type headerInput struct {
		Region string `json:"region,omitempty"`
		Level  int    `json:"level,omitempty"`
	}
	mcp.AddTool(s, &mcp.Tool{
		Name:        "test_x_mcp_header",
		Description: "Tests SEP-2243 Mcp-Param-* header validation",
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"region": {"type": "string", "description": "mirrored into Mcp-Param-Region", "x-mcp-header": "Region"},
				"level": {"type": "integer", "description": "not mirrored"}
			}
		}`),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in headerInput) (*mcp.CallToolResult, any, error) {
		return text("region=" + in.Region), nil, nil
	})
}

// addDiagnosticTools adds the tools of the 2026-07-28 server-stateless
// scenario (SEP-2575).
func addDiagnosticTools(s *mcp.Server) {
	tool(s, "test_missing_capability", "Requires the sampling client capability; answers -32021 without it (SEP-2575)", func(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, error) {
		if caps := req.ClientCapabilities(); caps != nil && caps.Sampling != nil {
			return text("Client declared the sampling capability; tool executed."), nil
		}
		data, err := json.Marshal(mcp.MissingRequiredClientCapabilityData{
			RequiredCapabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}},
		})
		if err != nil {
			return nil, err
		}
		return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "sampling capability required but not declared by the client", Data: data}
	})
	tool(s, "test_streaming_elicitation", "Answers with a plain result: a response stream carries no independent requests (SEP-2575)", func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, error) {
		return text("stream observed: result frames only, no top-level requests"), nil
	})
	tool(s, "test_logging_tool", "Tries to log; the layer drops it unless the request set a log level (SEP-2575)", func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, error) {
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: ServerName, Data: "test_logging_tool executed"})
		return text("Log attempted."), nil
	})
}

// tamperedSuffix is what the tampered-state scenario appends to a
// requestState; the fixture rejects it (a real server would sign the state).
const tamperedSuffix = "-TAMPERED"

func validState(state string) bool { return state != "" && !strings.HasSuffix(state, tamperedSuffix) }

// accepted returns the content of an accepted elicitation answer, or nil.
func accepted(responses mcp.InputResponseMap, key string) map[string]any {
	if responses == nil {
		return nil
	}
	r, ok := responses[key].(*mcp.ElicitResult)
	if !ok || r == nil || r.Action != "accept" {
		return nil
	}
	return r.Content
}

// sampled returns the text of a sampling answer.
func sampled(responses mcp.InputResponseMap, key string) (string, bool) {
	r, ok := responses[key].(*mcp.CreateMessageWithToolsResult)
	if !ok || r == nil {
		return "", false
	}
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			return tc.Text, true
		}
	}
	return "(non-text response)", true
}

func objectSchema(props ...string) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	for i := 0; i+1 < len(props); i += 2 {
		s.Properties[props[i]] = &jsonschema.Schema{Type: props[i+1]}
		s.Required = append(s.Required, props[i])
	}
	return s
}

func askName() *mcp.ElicitParams {
	return &mcp.ElicitParams{Message: "What is your name?", RequestedSchema: objectSchema("name", "string")}
}

func askConfirm() *mcp.ElicitParams {
	return &mcp.ElicitParams{Message: "Please confirm", RequestedSchema: objectSchema("ok", "boolean")}
}

func invalidState(what string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid requestState" + what}
}

// addInputRequiredTools adds the tools and prompt of the 2026-07-28
// input-required-result scenarios (SEP-2322, multi-round-trip requests).
func addInputRequiredTools(s *mcp.Server) {
	tool(s, "test_input_required_result_elicitation", "Asks for the caller's name with an input request (SEP-2322)", func(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, error) {
		if name, _ := accepted(req.Params.InputResponses, "user_name")["name"].(string); name != "" {
			return text(fmt.Sprintf("Hello, %s!", name)), nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"user_name": askName()}}, nil
	})
	tool(s, "test_input_required_result_sampling", "Asks for an LLM completion with an input request (SEP-2322)", func(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, error) {
		if t, ok := sampled(req.Params.InputResponses, "capital_question"); ok {
			return text("Sampling response: " + t), nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"capital_question": &mcp.CreateMessageParams{
			Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "What is the capital of France?"}}},
			MaxTokens: 100,
		}}}, nil
	})
	tool(s, "test_input_required_result_list_roots", "Asks for the client's roots with an input request (SEP-2322)", func(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["client_roots"].(*mcp.ListRootsResult); ok && r != nil {
			uris := make([]string, 0, len(r.Roots))
			for _, root := range r.Roots {
				uris = append(uris, root.URI)
			}
			return text(fmt.Sprintf("Client exposed %d root(s): %s", len(r.Roots), strings.Join(uris, ", "))), nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"client_roots": &mcp.ListRootsParams{}}}, nil
	})
	tool(s, "test_input_required_result_request_state", "Round-trips a requestState beside an input request (SEP-2322)", func(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, error) {
		if accepted(req.Params.InputResponses, "confirm") != nil {
			if !validState(req.Params.RequestState) {
				return nil, invalidState("")
			}
			return text("state-ok: requestState received and confirmation accepted"), nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"confirm": askConfirm()}, RequestState: "request_state"}, nil
	})
	tool(s, "test_input_required_result_multiple_inputs", "Asks for elicitation, sampling and roots in one round (SEP-2322)", func(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, error) {
		in := req.Params.InputResponses
		name, _ := accepted(in, "user_name")["name"].(string)
		greeting, hasGreeting := sampled(in, "greeting")
		roots, hasRoots := in["client_roots"].(*mcp.ListRootsResult)
		if name != "" && hasGreeting && hasRoots && roots != nil {
			return text(fmt.Sprintf("%s %s: %d root(s) visible", greeting, name, len(roots.Roots))), nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
			"user_name": askName(),
			"greeting": &mcp.CreateMessageParams{
				Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Generate a greeting"}}},
				MaxTokens: 50,
			},
			"client_roots": &mcp.ListRootsParams{},
		}, RequestState: "multiple_inputs"}, nil
	})
	addInputRequiredRoundTools(s)
}

// addInputRequiredRoundTools adds the input-required tools of the scenarios
// beyond one plain round: two rounds, a tampered requestState, and asking
// only for what the client's capabilities cover.
func addInputRequiredRoundTools(s *mcp.Server) {
	tool(s, "test_input_required_result_multi_round", "Two elicitation rounds with an evolving requestState (SEP-2322)", func(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, error) {
		state := req.Params.RequestState
		switch {
		case state == "":
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"step1": &mcp.ElicitParams{
				Message: "Step 1: What is your name?", RequestedSchema: objectSchema("name", "string"),
			}}, RequestState: "round=1"}, nil
		case state == "round=1":
			name, _ := accepted(req.Params.InputResponses, "step1")["name"].(string)
			if name == "" {
				name = "unknown"
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"step2": &mcp.ElicitParams{
				Message: "Step 2: What is your favorite color?", RequestedSchema: objectSchema("color", "string"),
			}}, RequestState: "round=2;name=" + name}, nil
		case strings.HasPrefix(state, "round=2;name="):
			color, _ := accepted(req.Params.InputResponses, "step2")["color"].(string)
			if color == "" {
				color = "unknown"
			}
			return text(fmt.Sprintf("Multi-round complete: %s likes %s", strings.TrimPrefix(state, "round=2;name="), color)), nil
		default:
			return nil, invalidState(": unknown round")
		}
	})
	tool(s, "test_input_required_result_tampered_state", "Rejects a retry whose requestState was tampered with (SEP-2322)", func(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, error) {
		if req.Params.RequestState != "" {
			if !validState(req.Params.RequestState) {
				return nil, invalidState(": tampered")
			}
			if accepted(req.Params.InputResponses, "confirm") != nil {
				return text("state-ok: requestState received and confirmation accepted"), nil
			}
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"confirm": askConfirm()}, RequestState: "tampered_state"}, nil
	})
	tool(s, "test_input_required_result_capabilities", "Asks only for the input the client's capabilities cover (SEP-2322)", func(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, error) {
		if len(req.Params.InputResponses) > 0 {
			return text("Capability-aware input requests fulfilled"), nil
		}
		caps := req.ClientCapabilities()
		asks := mcp.InputRequestMap{}
		if caps != nil && caps.Elicitation != nil {
			asks["user_name"] = askName()
		}
		if caps != nil && caps.Sampling != nil {
			asks["greeting"] = &mcp.CreateMessageParams{
				Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Generate a short greeting"}}},
				MaxTokens: 50,
			}
		}
		if caps != nil && (caps.RootsV2 != nil || caps.Roots.ListChanged) {
			asks["client_roots"] = &mcp.ListRootsParams{}
		}
		if len(asks) == 0 {
			return text("No declared client capability supports an input request"), nil
		}
		return &mcp.CallToolResult{InputRequests: asks}, nil
	})
}

// TaskTools names the fixtures the suite's Tasks scenarios (SEP-2663) call
// as task-supporting tools; the Tasks layer (mcpserver/tasks) runs a call to them
// as a task when the client declared the extension, and inline otherwise.
var TaskTools = []string{"slow_compute", "failing_job", "protocol_error_job", "confirm_delete", "multi_input", "test_tool_with_task"}

// addTaskTools adds the tools of the Tasks scenarios (SEP-2663).
func addTaskTools(s *mcp.Server) {
	type greetInput struct {
		Name string `json:"name"`
	}
	tool(s, "greet", "Greets by name; never runs as a task", func(_ context.Context, _ *mcp.CallToolRequest, in greetInput) (*mcp.CallToolResult, error) {
		return text(fmt.Sprintf("Hello, %s!", in.Name)), nil
	})
	type computeInput struct {
		Seconds float64 `json:"seconds"`
		Label   string  `json:"label,omitempty"`
	}
	tool(s, "slow_compute", "Takes the given seconds, then answers; stops when cancelled", func(ctx context.Context, _ *mcp.CallToolRequest, in computeInput) (*mcp.CallToolResult, error) {
		t := time.NewTimer(time.Duration(in.Seconds * float64(time.Second)))
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
		return text(fmt.Sprintf("computed %s after %g s", in.Label, in.Seconds)), nil
	})
	tool(s, "failing_job", "Always ends in a tool execution error", func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, error) {
		res := text("failing_job failed, as it always does")
		res.IsError = true
		return res, nil
	})
	tool(s, "protocol_error_job", "Always ends in a protocol (JSON-RPC) error", func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "protocol_error_job failed, as it always does"}
	})
	tool(s, "confirm_delete", "Asks for a confirmation, then deletes nothing", func(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, error) {
		if c := accepted(req.Params.InputResponses, "confirm"); c != nil {
			return text(fmt.Sprintf("confirmed: %v", c["ok"])), nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"confirm": askConfirm()}}, nil
	})
	tool(s, "multi_input", "Asks for a name and a color, then answers with both", func(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, error) {
		name, _ := accepted(req.Params.InputResponses, "user_name")["name"].(string)
		color, _ := accepted(req.Params.InputResponses, "color")["color"].(string)
		asks := mcp.InputRequestMap{}
		if name == "" {
			asks["user_name"] = askName()
		}
		if color == "" {
			asks["color"] = &mcp.ElicitParams{Message: "What is your favorite color?", RequestedSchema: objectSchema("color", "string")}
		}
		if len(asks) > 0 {
			return &mcp.CallToolResult{InputRequests: asks}, nil
		}
		return text(fmt.Sprintf("%s likes %s", name, color)), nil
	})
	tool(s, "test_tool_with_task", "Asks for the caller's name, then answers with it", func(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, error) {
		if name, _ := accepted(req.Params.InputResponses, "user_name")["name"].(string); name != "" {
			return text(fmt.Sprintf("Hello, %s!", name)), nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"user_name": askName()}}, nil
	})
}

// addResources adds the resources of the resources-* scenarios.
func addResources(s *mcp.Server) {
	s.AddResource(&mcp.Resource{Name: "static-text", Description: "A static text resource", MIMEType: "text/plain", URI: "test://static-text"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "This is the content of the static text resource."}}}, nil
		})
	s.AddResource(&mcp.Resource{Name: "static-binary", Description: "A static binary resource (an image)", MIMEType: "image/png", URI: "test://static-binary"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "image/png", Blob: imageData}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "template", Description: "A resource template with parameter substitution", MIMEType: "application/json", URITemplate: "test://template/{id}/data"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id := strings.TrimSuffix(strings.TrimPrefix(req.Params.URI, "test://template/"), "/data")
			data, err := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
			if err != nil {
				return nil, err
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(data)}}}, nil
		})
	s.AddResource(&mcp.Resource{Name: "watched-resource", Description: "A resource to subscribe to", MIMEType: "text/plain", URI: "test://watched-resource"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "Watched resource content"}}}, nil
		})
}

// addPrompts adds the prompts of the prompts-* and input-required scenarios.
func addPrompts(s *mcp.Server) {
	s.AddPrompt(&mcp.Prompt{Name: "test_simple_prompt", Title: "Simple Test Prompt", Description: "A simple prompt without arguments"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "A simple test prompt", Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "This is a simple prompt for testing."}},
			}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_arguments", Title: "Prompt With Arguments", Description: "A prompt with required arguments", Arguments: []*mcp.PromptArgument{
		{Name: "arg1", Description: "First test argument", Required: true},
		{Name: "arg2", Description: "Second test argument", Required: true},
	}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Description: "A prompt with arguments", Messages: []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", req.Params.Arguments["arg1"], req.Params.Arguments["arg2"])}},
		}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_embedded_resource", Title: "Prompt With Embedded Resource", Description: "A prompt that includes an embedded resource", Arguments: []*mcp.PromptArgument{
		{Name: "resourceUri", Description: "URI of the resource to embed", Required: true},
	}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Description: "A prompt with an embedded resource", Messages: []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: req.Params.Arguments["resourceUri"], MIMEType: "text/plain", Text: "Embedded resource content for testing."}}},
			{Role: "user", Content: &mcp.TextContent{Text: "Please process the embedded resource above."}},
		}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_image", Title: "Prompt With Image", Description: "A prompt that includes image content"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "A prompt with an image", Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.ImageContent{Data: imageData, MIMEType: "image/png"}},
				{Role: "user", Content: &mcp.TextContent{Text: "Please analyze the image above."}},
			}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "test_input_required_result_prompt", Description: "Asks for context with an input request (SEP-2322)"},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			if c := accepted(req.Params.InputResponses, "user_context"); c != nil {
				ctxText, _ := c["context"].(string)
				return &mcp.GetPromptResult{Description: "A prompt with elicited context", Messages: []*mcp.PromptMessage{
					{Role: "user", Content: &mcp.TextContent{Text: "Context: " + ctxText}},
				}}, nil
			}
			return &mcp.GetPromptResult{InputRequests: mcp.InputRequestMap{"user_context": &mcp.ElicitParams{
				Message: "Please provide context for the prompt", RequestedSchema: objectSchema("context", "string"),
			}}}, nil
		})
}

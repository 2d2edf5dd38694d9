package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
)

// acceptEnvObject lets a tools/call give env in the form of earlier versions,
// an object of name to value, although the tools advertise a list of
// name/value pairs (requestSchema): it rewrites such an object into the list
// before the SDK checks the arguments against the advertised schema. An env
// that is neither a list nor an object of strings gets a tool error that
// shows both forms.
func acceptEnvObject(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		call, ok := req.(*mcp.CallToolRequest)
		if !ok || method != "tools/call" || call.Params == nil || !bytes.Contains(call.Params.Arguments, []byte(`"env"`)) {
			return next(ctx, method, req)
		}
		args, err := envAsList(call.Params.Arguments)
		if err != nil {
			res := &mcp.CallToolResult{}
			res.SetError(err)
			return res, nil
		}
		if args != nil {
			params := *call.Params
			params.Arguments = args
			copied := *call
			copied.Params = &params
			req = &copied
		}
		return next(ctx, method, req)
	}
}

// envAsList returns the arguments with an env object rewritten as a list
// sorted by name, or nil when they need no rewriting (no env, a list, null,
// or arguments that are not an object: the SDK reports those). engine.Env
// decodes the object, so both forms meet the same checks.
func envAsList(raw json.RawMessage) (json.RawMessage, error) {
	var args map[string]json.RawMessage
	if json.Unmarshal(raw, &args) != nil {
		return nil, nil
	}
	env := bytes.TrimSpace(args["env"])
	if len(env) == 0 || env[0] == '[' || env[0] == 'n' {
		return nil, nil
	}
	var vars engine.Env
	if err := json.Unmarshal(env, &vars); err != nil {
		return nil, err
	}
	list := make([]engine.EnvVar, 0, len(vars))
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		list = append(list, engine.EnvVar{Name: name, Value: vars[name]})
	}
	var err error
	if args["env"], err = json.Marshal(list); err != nil {
		return nil, err
	}
	return json.Marshal(args)
}

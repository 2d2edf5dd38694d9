package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// TestEnvIsAcceptedAsTheAdvertisedListAndAsTheEarlierObject: run_code and
// start_execution advertise env as a list of name/value pairs, and a client
// of an earlier version that sends an object of name to value gets the same
// environment.
func TestEnvIsAcceptedAsTheAdvertisedListAndAsTheEarlierObject(t *testing.T) {
	eng, _ := testutil.FakeEngine(t, nil)
	cs := connect(t, eng)
	const program = `echo "${GREETING-unset}|${TARGET-unset}"`
	cases := []struct {
		name string
		env  any
		want string
	}{
		{"a list of name/value pairs", []any{
			map[string]any{"name": "GREETING", "value": "hi there"},
			map[string]any{"name": "TARGET", "value": "world"},
		}, "hi there|world\n"},
		{"an object of name to value", map[string]any{"GREETING": "hi there", "TARGET": "world"}, "hi there|world\n"},
		{"an empty list", []any{}, "unset|unset\n"},
		{"an empty object", map[string]any{}, "unset|unset\n"},
		{"null", nil, "unset|unset\n"},
		{"a value that is empty", []any{map[string]any{"name": "GREETING", "value": ""}}, "|unset\n"},
	}
	for _, c := range cases {
		t.Run("run_code with "+c.name, func(t *testing.T) {
			var res engine.Result
			okTool(t, cs, "run_code", map[string]any{"language": "bash", "code": program, "env": c.env}, &res)
			if res.Stdout != c.want {
				t.Errorf("stdout %q, want %q", res.Stdout, c.want)
			}
		})
		t.Run("start_execution with "+c.name, func(t *testing.T) {
			var started executions.Snapshot
			okTool(t, cs, "start_execution", map[string]any{"language": "bash", "code": program, "env": c.env}, &started)
			var done executions.Snapshot
			okTool(t, cs, "get_execution", map[string]any{"execution_id": started.ExecutionID, "wait_seconds": 60}, &done)
			if done.Result == nil || done.Result.Stdout != c.want {
				t.Errorf("execution %s ended %s with %+v, want stdout %q", done.ExecutionID, done.Status, done.Result, c.want)
			}
		})
	}
}

// TestEnvOfAWrongShapeIsAToolErrorThatShowsTheForms: an env that is
// neither form, or a list whose entries are not name/value pairs, gets a
// tool error that says what is wrong; nothing runs.
func TestEnvOfAWrongShapeIsAToolErrorThatShowsTheForms(t *testing.T) {
	cs := connect(t, offlineEngine(t))
	const forms = `give env as a list like [{"name": "GREETING", "value": "hi"}]`
	cases := []struct {
		name string
		env  any
		want []string
	}{
		{"a string", "GREETING=hi", []string{"env is a string", forms}},
		{"a number", 7, []string{"env is a number", forms}},
		{"a boolean", true, []string{"env is a boolean", forms}},
		{"an object with a number value", map[string]any{"COUNT": 3}, []string{"env COUNT is a number, not a string", forms}},
		{"an object with a nested object", map[string]any{"A": map[string]any{}}, []string{"env A is an object, not a string", forms}},
		{"a list of NAME=value strings", []any{"GREETING=hi"}, []string{"env", "GREETING=hi", "object"}},
		{"a pair without a value", []any{map[string]any{"name": "GREETING"}}, []string{"env", "value"}},
		{"a pair with a key of its own", []any{map[string]any{"name": "A", "value": "1", "secret": true}}, []string{"env", "secret"}},
		{"a name given twice", []any{map[string]any{"name": "A", "value": "1"}, map[string]any{"name": "A", "value": "2"}}, []string{`env names "A" twice`}},
		{"an invalid name in a list", []any{map[string]any{"name": "A-B", "value": "1"}}, []string{`env name "A-B" is invalid`}},
		{"an invalid name in an object", map[string]any{"A-B": "1"}, []string{`env name "A-B" is invalid`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := callTool(t, cs, "run_code", map[string]any{"language": "bash", "code": "true", "env": c.env})
			text := toolText(res)
			if !res.IsError {
				t.Fatalf("accepted; got %s", text)
			}
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("error %q does not say %q", text, w)
				}
			}
		})
	}
}

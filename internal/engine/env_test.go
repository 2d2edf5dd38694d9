package engine

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

// TestEnvDecodesTheListAndTheObjectForm: the advertised list of name/value
// pairs and the earlier object of name to value decode to the same
// variables; null and empty forms are no variables.
func TestEnvDecodesTheListAndTheObjectForm(t *testing.T) {
	cases := []struct {
		name, json string
		want       Env
	}{
		{"a list", `[{"name":"A","value":"1"},{"name":"B","value":""}]`, Env{"A": "1", "B": ""}},
		{"an object", `{"A":"1","B":""}`, Env{"A": "1", "B": ""}},
		{"an empty list", `[]`, Env{}},
		{"an empty object", `{}`, Env{}},
		{"null", `null`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var req Request
			if err := json.Unmarshal([]byte(`{"language":"bash","code":"x","env":`+c.json+`}`), &req); err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(req.Env, c.want) || (req.Env == nil) != (c.want == nil) {
				t.Errorf("got %#v, want %#v", req.Env, c.want)
			}
		})
	}
}

// TestEnvOfAWrongShapeSaysWhatIsWrongAndShowsTheForms: every other shape
// is a decoding error that names the problem and shows both forms.
func TestEnvOfAWrongShapeSaysWhatIsWrongAndShowsTheForms(t *testing.T) {
	cases := []struct {
		name, json, want string
	}{
		{"a string", `"A=1"`, "env is a string"},
		{"a number", `3`, "env is a number"},
		{"a boolean", `false`, "env is a boolean"},
		{"an object with a number value", `{"A":1}`, "env A is a number, not a string"},
		{"an object with a null value", `{"A":null}`, "env A is null, not a string"},
		{"a list of strings", `["A=1"]`, "env must be a list of objects with a string name and a string value"},
		{"a pair without a value", `[{"name":"A"}]`, "env[0] needs both a name and a value"},
		{"a pair without a name", `[{"name":"A","value":"1"},{"value":"1"}]`, "env[1] needs both a name and a value"},
		{"a name given twice", `[{"name":"A","value":"1"},{"name":"A","value":"2"}]`, `env names "A" twice (env[1])`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var env Env
			err := json.Unmarshal([]byte(c.json), &env)
			if err == nil {
				t.Fatalf("accepted as %#v", env)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
			if !strings.Contains(c.want, "twice") && !strings.Contains(err.Error(), `{"name": "GREETING", "value": "hi"}`) {
				t.Errorf("error %q does not show the forms", err)
			}
		})
	}
}

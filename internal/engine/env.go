package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// EnvVar is one environment variable of a request, in the list form tools
// advertise: a closed object that every agent framework's strict schema
// conversion accepts (an open name-to-value object is refused by some).
type EnvVar struct {
	Name  string `json:"name" jsonschema:"the variable's name: letters, digits and underscores, not starting with a digit"`
	Value string `json:"value" jsonschema:"the variable's value"`
}

// Env is a request's environment variables by name. It decodes from a
// list of EnvVar (the advertised form) and from an object of name to value
// (the form of earlier versions, still accepted).
type Env map[string]string

// envForms says what env accepts, for the errors of a wrong shape.
const envForms = `give env as a list like [{"name": "GREETING", "value": "hi"}] (an object like {"GREETING": "hi"} is accepted too)`

// UnmarshalJSON decodes either form; a name given twice in the list, an
// entry without a name or value, and any other shape are errors that say
// which form to use.
func (e *Env) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return fmt.Errorf("env is empty; %s", envForms)
	}
	switch data[0] {
	case 'n':
		*e = nil
		return nil
	case '{':
		return e.decodeObject(data)
	case '[':
		return e.decodeList(data)
	}
	return fmt.Errorf("env is %s; %s", jsonKind(data[0]), envForms)
}

func (e *Env) decodeObject(data []byte) error {
	var byName map[string]json.RawMessage
	if err := json.Unmarshal(data, &byName); err != nil {
		return fmt.Errorf("env is not a valid object (%v); %s", err, envForms)
	}
	out := make(Env, len(byName))
	for name, raw := range byName {
		var value string
		if raw = bytes.TrimSpace(raw); raw[0] != '"' || json.Unmarshal(raw, &value) != nil {
			return fmt.Errorf("env %s is %s, not a string; %s", name, jsonKind(raw[0]), envForms)
		}
		out[name] = value
	}
	*e = out
	return nil
}

func (e *Env) decodeList(data []byte) error {
	var list []struct {
		Name  *string `json:"name"`
		Value *string `json:"value"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return fmt.Errorf("env must be a list of objects with a string name and a string value (%v); %s", err, envForms)
	}
	out := make(Env, len(list))
	for i, v := range list {
		if v.Name == nil || v.Value == nil {
			return fmt.Errorf("env[%d] needs both a name and a value, like {\"name\": \"GREETING\", \"value\": \"hi\"}", i)
		}
		if _, dup := out[*v.Name]; dup {
			return fmt.Errorf("env names %q twice (env[%d]); give each variable once", *v.Name, i)
		}
		out[*v.Name] = *v.Value
	}
	*e = out
	return nil
}

// jsonKind names, with its article, the JSON type that starts with c.
func jsonKind(c byte) string {
	switch c {
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case '{':
		return "an object"
	case '[':
		return "a list"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

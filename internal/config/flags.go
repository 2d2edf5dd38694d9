package config

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/spf13/pflag"
)

// FlagName is the command-line flag for a setting's dotted JSON name:
// "limits.memory_mb" -> "memory-mb", "http.max_body_bytes" ->
// "http-max-body-bytes".
func FlagName(field string) string {
	field = strings.TrimPrefix(field, "limits.")
	if field == "pool.size" {
		return "pool-size"
	}
	return strings.NewReplacer(".", "-", "_", "-").Replace(field)
}

// Flags registers one flag per setting on fs and returns a function that
// applies the flags given on the command line to a Config. Flags override
// the file and the environment.
func Flags(fs *pflag.FlagSet) func(*Config) error {
	def := Default()
	names := map[string]string{} // flag -> field
	walkFields(reflect.ValueOf(&def).Elem(), "", func(name string, f reflect.Value) {
		flag := FlagName(name)
		names[flag] = name
		usage := fmt.Sprintf("setting %s (env %s)", name, envName(name))
		switch f.Kind() {
		case reflect.Slice:
			fs.String(flag, "", usage+"; comma-separated")
		default:
			fs.String(flag, "", fmt.Sprintf("%s; default %v", usage, f.Interface()))
		}
	})
	return func(c *Config) error {
		var errs []string
		walkFields(reflect.ValueOf(c).Elem(), "", func(name string, f reflect.Value) {
			fl := fs.Lookup(FlagName(name))
			if fl == nil || !fl.Changed {
				return
			}
			if err := setField(f, fl.Value.String()); err != nil {
				errs = append(errs, fmt.Sprintf("--%s=%q: %v", fl.Name, fl.Value.String(), err))
			}
		})
		if len(errs) > 0 {
			return fmt.Errorf("%s", strings.Join(errs, "; "))
		}
		return c.Validate()
	}
}

// Set sets the setting of dotted JSON name ("pool.release_grace_ms") to
// raw, parsed as the environment and the flags parse it; it does not
// validate the result.
func Set(c *Config, name, raw string) error {
	found := false
	var err error
	walkFields(reflect.ValueOf(c).Elem(), "", func(n string, f reflect.Value) {
		if n == name {
			found, err = true, setField(f, raw)
		}
	})
	if !found {
		return fmt.Errorf("no setting %q: settings are named as in the JSON file, with dots (pool.release_grace_ms, limits.memory_mb)", name)
	}
	if err != nil {
		return fmt.Errorf("%s=%q: %w", name, raw, err)
	}
	return nil
}

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

// SettingAnnotation is the annotation of a setting's flag that holds the
// setting's dotted name, by which help groups the flags in sections.
const SettingAnnotation = "mcp-code-runner/setting"

// Flags registers one flag per setting on fs, its help the setting's doc
// comment (help.go), typed as the setting is (a
// whole number an Int flag, a number a Float64, a switch a Bool, a list a
// comma-separated StringSlice) with the setting's default, and returns a
// function that applies the flags given on the command line to a Config.
// Only flags given override the file and the environment.
func Flags(fs *pflag.FlagSet) func(*Config) error {
	def := Default()
	walkFields(reflect.ValueOf(&def).Elem(), "", func(name string, f reflect.Value) {
		flag := FlagName(name)
		usage := fmt.Sprintf("%s (setting %s, env %s)", settingHelp[name], name, envName(name))
		switch f.Kind() {
		case reflect.Int:
			fs.Int(flag, int(f.Int()), usage)
		case reflect.Int64:
			fs.Int64(flag, f.Int(), usage)
		case reflect.Float64:
			fs.Float64(flag, f.Float(), usage)
		case reflect.Bool:
			fs.Bool(flag, f.Bool(), usage)
		case reflect.Slice:
			fs.StringSlice(flag, f.Interface().([]string), usage+"; comma-separated")
		default:
			fs.String(flag, f.String(), usage)
		}
		_ = fs.SetAnnotation(flag, SettingAnnotation, []string{name})
	})
	return func(c *Config) error {
		var errs []string
		walkFields(reflect.ValueOf(c).Elem(), "", func(name string, f reflect.Value) {
			fl := fs.Lookup(FlagName(name))
			if fl == nil || !fl.Changed {
				return
			}
			raw := fl.Value.String()
			if list, ok := fl.Value.(pflag.SliceValue); ok {
				raw = strings.Join(list.GetSlice(), ",")
			}
			if err := setField(f, raw); err != nil {
				errs = append(errs, fmt.Sprintf("--%s=%q: %v", fl.Name, raw, err))
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

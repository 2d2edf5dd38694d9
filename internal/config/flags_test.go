package config

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestASettingIsSetByItsDottedNameOrRefusedClearly: Set takes the names of
// the JSON file and parses values as the environment does.
func TestASettingIsSetByItsDottedNameOrRefusedClearly(t *testing.T) {
	tests := []struct {
		name, setting, raw string
		check              func(Config) bool
		wantErr            string
	}{
		{name: "a whole number", setting: "pool.release_grace_ms", raw: "30", check: func(c Config) bool { return c.Pool.ReleaseGraceMs == 30 }},
		{name: "a limit", setting: "limits.memory_mb", raw: "512", check: func(c Config) bool { return c.Limits.MemoryMB == 512 }},
		{name: "a list", setting: "pool.sizes", raw: "python=3, bash=1", check: func(c Config) bool { return strings.Join(c.Pool.Sizes, ";") == "python=3;bash=1" }},
		{name: "an unknown name", setting: "pool.release_grace", raw: "30", wantErr: `no setting "pool.release_grace"`},
		{name: "a flag's name, not the setting's", setting: "memory-mb", raw: "30", wantErr: "named as in the JSON file"},
		{name: "a value of the wrong kind", setting: "pool.release_grace_ms", raw: "30ms", wantErr: "want a whole number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			err := Set(&c, tt.setting, tt.raw)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Set(%s=%s): want an error with %q, got %v", tt.setting, tt.raw, tt.wantErr, err)
				}
				return
			}
			if err != nil || !tt.check(c) {
				t.Fatalf("Set(%s=%s): err %v, setting not as given", tt.setting, tt.raw, err)
			}
		})
	}
}

func TestTypedFlagsOverrideTheEnvironmentOnlyWhenGiven(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		check   func(Config) bool
		wantErr string
	}{
		{name: "a whole number", args: []string{"--memory-mb", "512"}, check: func(c Config) bool { return c.Limits.MemoryMB == 512 }},
		{name: "a number", args: []string{"--cpus", "1.5"}, check: func(c Config) bool { return c.Limits.CPUs == 1.5 }},
		{name: "a switch alone", args: []string{"--allow-unenforced-limits"}, check: func(c Config) bool { return c.AllowUnenforcedLimits }},
		{name: "a switch set to false", env: map[string]string{"MCR_TYPE_ERRORS_FATAL": "true"}, args: []string{"--type-errors-fatal=false"}, check: func(c Config) bool { return !c.TypeErrorsFatal }},
		{name: "a list", args: []string{"--pool-sizes", "python=3, bash=1"}, check: func(c Config) bool { return strings.Join(c.Pool.Sizes, ";") == "python=3;bash=1" }},
		{name: "a flag not given keeps the environment's value", env: map[string]string{"MCR_LIMITS_MEMORY_MB": "300"}, check: func(c Config) bool { return c.Limits.MemoryMB == 300 }},
		{name: "a flag given beats the environment", env: map[string]string{"MCR_LIMITS_MEMORY_MB": "300"}, args: []string{"--memory-mb", "400"}, check: func(c Config) bool { return c.Limits.MemoryMB == 400 }},
		{name: "a word for a number", args: []string{"--memory-mb", "lots"}, wantErr: `invalid argument "lots" for "--memory-mb"`},
		{name: "a word for a switch", args: []string{"--allow-unenforced-limits=maybe"}, wantErr: `invalid argument "maybe"`},
		{name: "a number out of range", args: []string{"--memory-mb", "0"}, wantErr: "limits.memory_mb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			fs.SetOutput(io.Discard)
			apply := Flags(fs)
			err := fs.Parse(tt.args)
			var c Config
			if err == nil {
				c, err = Load("", func(name string) string { return tt.env[name] })
				if err != nil {
					t.Fatal(err)
				}
				err = apply(&c)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("%v: want an error with %q, got %v", tt.args, tt.wantErr, err)
				}
				return
			}
			if err != nil || !tt.check(c) {
				t.Fatalf("%v: err %v, setting not as given", tt.args, err)
			}
		})
	}
}

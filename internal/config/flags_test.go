package config

import (
	"strings"
	"testing"
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

package docker

import (
	"errors"
	"strings"
	"testing"
)

func TestChooseRuntime(t *testing.T) {
	withCrun := []string{"runsc", "runc", "crun"}
	withoutCrun := []string{"runc", "runsc"}
	tests := []struct {
		name       string
		configured string
		registered []string
		wantName   string
		wantEff    string
		wantErr    string
	}{
		{name: "auto picks crun when the daemon has it", configured: "", registered: withCrun, wantName: "crun", wantEff: "crun"},
		{name: "auto spelled out picks crun too", configured: "auto", registered: withCrun, wantName: "crun", wantEff: "crun"},
		{name: "auto without crun leaves the daemon's default", configured: "", registered: withoutCrun, wantName: "", wantEff: "runc"},
		{name: "a named runtime the daemon has is used", configured: "runc", registered: withCrun, wantName: "runc", wantEff: "runc"},
		{name: "gvisor by name", configured: "runsc", registered: withCrun, wantName: "runsc", wantEff: "runsc"},
		{name: "a named runtime the daemon lacks is an error naming those it has", configured: "kata", registered: withCrun,
			wantErr: `runtime "kata" is configured, and the daemon has crun, runc, runsc`},
		{name: "crun named but not registered is an error, not a silent runc", configured: "crun", registered: withoutCrun,
			wantErr: `runtime "crun" is configured, and the daemon has runc, runsc`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := chooseRuntime(tt.configured, tt.registered, "runc")
			if tt.wantErr != "" {
				if !errors.Is(err, ErrRuntimeMissing) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want ErrRuntimeMissing containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Name != tt.wantName || c.Effective != tt.wantEff || c.Reason == "" {
				t.Fatalf("got %+v, want name %q effective %q and a reason", c, tt.wantName, tt.wantEff)
			}
		})
	}
}

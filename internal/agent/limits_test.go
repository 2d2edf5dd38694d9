package agent

import (
	"os"
	"os/exec"
	"regexp"
	"testing"
)

// limitsChildEnv makes the test binary, run again, apply the limits of its
// value and print what a process it starts inherits.
const limitsChildEnv = "MCR_TEST_APPLY_LIMITS"

func TestAppliedLimitsBindTheProcessesTheAgentStarts(t *testing.T) {
	if spec := os.Getenv(limitsChildEnv); spec != "" {
		if err := ApplyLimits(spec); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("cat", "/proc/self/limits").CombinedOutput()
		if err != nil {
			t.Fatal(err)
		}
		os.Stdout.Write(out)
		return
	}
	// In a process of its own: the limits cannot be raised again.
	cmd := exec.Command(os.Args[0], "-test.run=^TestAppliedLimitsBindTheProcessesTheAgentStarts$")
	cmd.Env = append(os.Environ(), limitsChildEnv+`={"nofile":64,"fsize_bytes":4096}`)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, want := range []string{`Max open files\s+64\s+64\s`, `Max file size\s+4096\s+4096\s`} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("the child's limits do not match %q:\n%s", want, out)
		}
	}
}

func TestApplyLimitsRejectsABadSpec(t *testing.T) {
	if err := ApplyLimits("{"); err == nil {
		t.Error("a spec that is not JSON was accepted")
	}
	if err := ApplyLimits(""); err != nil {
		t.Errorf("no spec: %v", err)
	}
}

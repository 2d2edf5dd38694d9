package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// findCommand returns the command at path ("images build") under root.
func findCommand(t *testing.T, root *cobra.Command, path string) *cobra.Command {
	t.Helper()
	cmd, rest, err := root.Find(strings.Fields(path))
	if err != nil || len(rest) > 0 || cmd == root {
		t.Fatalf("no command %q: %v", path, err)
	}
	return cmd
}

func TestFlagsAreTypedAsTheirValues(t *testing.T) {
	for _, tc := range []struct {
		command, flag, typ string
	}{
		{"serve", "memory-mb", "int"},
		{"serve", "timeout-seconds", "int"},
		{"serve", "http-max-body-bytes", "int64"},
		{"serve", "cpus", "float64"},
		{"serve", "allow-unenforced-limits", "bool"},
		{"serve", "metrics-on-http-listener", "bool"},
		{"serve", "pool-sizes", "stringSlice"},
		{"serve", "http-auth-tokens", "stringSlice"},
		{"serve", "backend", "string"},
		{"run", "timeout", "int"},
		{"run", "verbose", "bool"},
		{"run", "pool-size", "int"},
		{"doctor", "type-errors-fatal", "bool"},
		{"bench", "churn-for", "duration"},
		{"bench", "runs", "int"},
		{"images build", "parallel", "int"},
		{"setup", "skip-images", "bool"},
	} {
		t.Run(tc.command+" --"+tc.flag, func(t *testing.T) {
			f := findCommand(t, newRootCmd(), tc.command).Flags().Lookup(tc.flag)
			if f == nil {
				t.Fatalf("%s has no --%s", tc.command, tc.flag)
			}
			if got := f.Value.Type(); got != tc.typ {
				t.Errorf("%s --%s is a %s flag, want %s", tc.command, tc.flag, got, tc.typ)
			}
		})
	}
}

// A string flag whose default is a number or a switch should have been
// typed as one: every command's flags are checked.
func TestNoNumberOrSwitchIsAStringFlag(t *testing.T) {
	var check func(cmd *cobra.Command)
	check = func(cmd *cobra.Command) {
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() != "string" || f.DefValue == "" {
				return
			}
			_, errInt := strconv.ParseFloat(f.DefValue, 64)
			_, errBool := strconv.ParseBool(f.DefValue)
			if errInt == nil || errBool == nil {
				t.Errorf("%s --%s is a string flag with default %q: type it as a number or a bool", cmd.CommandPath(), f.Name, f.DefValue)
			}
		})
		for _, c := range cmd.Commands() {
			check(c)
		}
	}
	check(newRootCmd())
}

func TestOnlyFlagsOfEveryCommandAreGlobal(t *testing.T) {
	var global []string
	newRootCmd().PersistentFlags().VisitAll(func(f *pflag.Flag) { global = append(global, f.Name) })
	if got, want := strings.Join(global, " "), "log-format log-level"; got != want {
		t.Errorf("global flags %q, want %q", got, want)
	}
}

func TestEachCommandHasTheSettingsItReads(t *testing.T) {
	for _, tc := range []struct {
		command    string
		has, lacks []string
	}{
		{"serve", []string{"config", "memory-mb", "docker-host", "languages-file", "backend"}, nil},
		{"run", []string{"config", "memory-mb", "docker-host", "backend"}, nil},
		{"doctor", []string{"config", "backend", "pool-sizes"}, nil},
		{"setup", []string{"config", "agent-path", "docker-host"}, nil},
		{"languages", []string{"config", "docker-host", "languages-file"}, []string{"memory-mb", "backend"}},
		{"images build", []string{"config", "docker-host", "root-image"}, []string{"memory-mb", "pool-sizes"}},
		{"images list", []string{"config", "docker-host"}, []string{"memory-mb"}},
		{"client-config", []string{"config", "docker-host", "agent-path"}, []string{"memory-mb"}},
	} {
		t.Run(tc.command, func(t *testing.T) {
			flags := findCommand(t, newRootCmd(), tc.command).Flags()
			for _, name := range tc.has {
				if flags.Lookup(name) == nil {
					t.Errorf("%s lacks --%s", tc.command, name)
				}
			}
			for _, name := range tc.lacks {
				if flags.Lookup(name) != nil {
					t.Errorf("%s has --%s, which it does not read", tc.command, name)
				}
			}
		})
	}
}

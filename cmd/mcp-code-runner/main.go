// Command mcp-code-runner is a Model Context Protocol server that runs code in
// fresh, hardened Docker containers. Subcommands: serve, run, languages,
// images, doctor; "agent" is the process that runs inside each sandbox.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// globalOptions are the flags every subcommand shares (the log's level and
// format) and, filled by addSettingFlags, the configuration flags of the
// command that runs.
type globalOptions struct {
	configFile string
	logLevel   string
	logFormat  string
	// quiet discards the log: `run` without -v, whose stdout and stderr
	// are the program's.
	quiet bool
	// applyFlags applies the running command's setting flags.
	applyFlags func(*config.Config) error
}

func (g *globalOptions) load() (config.Config, *languages.Registry, error) {
	cfg, err := config.Load(g.configFile, os.Getenv)
	if err != nil {
		return cfg, nil, err
	}
	if g.applyFlags != nil {
		if err := g.applyFlags(&cfg); err != nil {
			return cfg, nil, err
		}
	}
	reg, err := languages.Load(cfg.LanguagesFile)
	if err != nil {
		return cfg, nil, err
	}
	return cfg, reg, nil
}

// logger writes to stderr only: on stdio, stdout carries MCP messages.
func (g *globalOptions) logger() *slog.Logger {
	if g.quiet {
		return slog.New(slog.DiscardHandler)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if g.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}

// checkLogFormat refuses a --log-format other than text and json.
func (g *globalOptions) checkLogFormat() error {
	if g.logFormat != "text" && g.logFormat != "json" {
		return fmt.Errorf("--log-format %q: want text or json", g.logFormat)
	}
	return nil
}

// addSettingFlags gives cmd the flags of the configuration: --config, and a
// typed flag per setting ([config.Flags]), all of them or only those named.
// A flag cmd already has stays its own. Call it after cmd's own flags.
func (g *globalOptions) addSettingFlags(cmd *cobra.Command, only ...string) {
	f := cmd.Flags()
	f.StringVar(&g.configFile, "config", os.Getenv("MCR_CONFIG"), "JSON configuration file (env MCR_CONFIG)")
	settings := pflag.NewFlagSet(cmd.Name(), pflag.ContinueOnError)
	apply := config.Flags(settings)
	settings.VisitAll(func(fl *pflag.Flag) {
		if (len(only) == 0 || slices.Contains(only, fl.Name)) && f.Lookup(fl.Name) == nil {
			f.AddFlag(fl)
		}
	})
	own := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		g.applyFlags = apply
		if own != nil {
			return own(c, args)
		}
		return nil
	}
}

// registryFlags are the settings of the commands that need the language
// registry and the Docker daemon, and nothing of a server.
var registryFlags = []string{"docker-host", "languages-file"}

func newRootCmd() *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:   "mcp-code-runner",
		Short: "An MCP server that runs code in fresh, hardened Docker containers",
		Long: `mcp-code-runner lets AI assistants run code in many languages. Every run
gets its own new container: no network, no capabilities, a read-only root,
a non-root user and hard limits on time, memory, processes and output.`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// Only what every command uses is global; each command has the
	// settings it reads (addSettingFlags).
	pf := root.PersistentFlags()
	pf.StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn, error (logs go to stderr)")
	pf.StringVar(&g.logFormat, "log-format", envOr("MCR_LOG_FORMAT", "text"), "log format: text or json (one JSON object a line; env MCR_LOG_FORMAT)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return g.checkLogFormat() }

	for _, add := range subcommands {
		root.AddCommand(add(g))
	}
	useSectionedHelp(root)
	return root
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// subcommands are registered by each subcommand's file in its init.
var subcommands []func(*globalOptions) *cobra.Command

func main() { os.Exit(run()) }

// run executes the command line and returns the process's exit code, after
// its deferred clean-ups have run.
func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := newRootCmd().ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var exit exitCodeError
	if asExit(err, &exit) {
		return int(exit)
	}
	fmt.Fprintln(os.Stderr, "mcp-code-runner:", err)
	return 1
}

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
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// globalOptions are the flags every subcommand shares.
type globalOptions struct {
	configFile    string
	dockerHost    string
	languagesFile string
	logLevel      string
	logFormat     string
	applyFlags    func(*config.Config) error
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
	if g.dockerHost != "" {
		cfg.DockerHost = g.dockerHost
	}
	if g.languagesFile != "" {
		cfg.LanguagesFile = g.languagesFile
	}
	reg, err := languages.Load(cfg.LanguagesFile)
	if err != nil {
		return cfg, nil, err
	}
	return cfg, reg, nil
}

// logger writes to stderr only: on stdio, stdout carries MCP messages.
func (g *globalOptions) logger() *slog.Logger {
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
	pf := root.PersistentFlags()
	pf.StringVar(&g.configFile, "config", os.Getenv("MCR_CONFIG"), "JSON configuration file (env MCR_CONFIG)")
	pf.StringVar(&g.dockerHost, "docker-host", "", "Docker daemon address (default: DOCKER_HOST or the local socket)")
	pf.StringVar(&g.languagesFile, "languages-file", "", "JSON file that adds or overrides language registry entries")
	pf.StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn, error (logs go to stderr)")
	pf.StringVar(&g.logFormat, "log-format", envOr("MCR_LOG_FORMAT", "text"), "log format: text or json (one JSON object a line; env MCR_LOG_FORMAT)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return g.checkLogFormat() }
	settings := pflag.NewFlagSet("settings", pflag.ContinueOnError)
	g.applyFlags = config.Flags(settings)
	settings.VisitAll(func(f *pflag.Flag) {
		if f.Name != "docker-host" && f.Name != "languages-file" {
			pf.AddFlag(f)
		}
	})

	for _, add := range subcommands {
		root.AddCommand(add(g))
	}
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

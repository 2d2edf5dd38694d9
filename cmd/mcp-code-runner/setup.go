package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/client"
	"github.com/spf13/cobra"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/images"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
)

func init() { subcommands = append(subcommands, newSetupCmd) }

// installPath is the package `go install` installs this command from.
const installPath = "github.com/mcp-code-runner/mcp-code-runner/cmd/mcp-code-runner"

// setupOptions are setup's flags.
type setupOptions struct {
	skipImages bool
	languages  []string
	yes        bool
	verbose    bool
	addr       string
}

// newSetupCmd is "setup": everything a freshly installed binary needs before
// clients can use it.
func newSetupCmd(g *globalOptions) *cobra.Command {
	o := &setupOptions{}
	cmd := &cobra.Command{
		Use:   "setup",
		Short: "Check the engine, build the runtime images, run a test sandbox and print the client configuration",
		Long: `Setup makes a freshly installed binary (go install) ready to serve:

  1. it checks that the Docker daemon answers, its API version and its runtimes;
  2. it builds the runtime images that are missing or out of date, for the
     daemon's platform, as "images build" does (--skip-images skips this,
     --languages limits it to some languages);
  3. it runs a hello world in a real hardened sandbox (bash and python, or
     the languages given);
  4. it prints the configuration of Claude Desktop, Claude Code, VS Code and
     Cursor for this operating system (what "client-config" prints).

Sandboxes are Linux containers, so on macOS and Windows (Docker Desktop)
they run the agent built for Linux: set agent_path (setup says how to build
it). Building every image takes from several minutes to an hour; setup asks
first when it runs in a terminal, unless --yes.`,
		Example: `  mcp-code-runner setup
  mcp-code-runner setup --languages python,javascript --yes
  mcp-code-runner setup --skip-images`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSetup(cmd, g, o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.skipImages, "skip-images", false, "do not build images (the test run needs its languages' images present)")
	f.StringSliceVar(&o.languages, "languages", nil, "build and test only these languages (comma-separated; default: every image, and a test run in the language registry's probe languages, roles.probe: bash and python)")
	f.BoolVarP(&o.yes, "yes", "y", false, "do not ask before building images (non-interactive)")
	f.BoolVar(&o.verbose, "verbose", false, "show the full image build output instead of the progress lines")
	f.StringVar(&o.addr, "http", defaultHTTPAddr, "HOST:PORT for the HTTP entries of the printed client configuration")
	g.addSettingFlags(cmd)
	return cmd
}

func runSetup(cmd *cobra.Command, g *globalOptions, o *setupOptions) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	if f := cmd.Flag("log-level"); f != nil && !f.Changed {
		g.logLevel = "warn" // the steps say what happened; a run's log line would repeat it
	}
	cfg, reg, err := g.load()
	if err != nil {
		return err
	}
	if cfg.Backend == config.BackendKubernetes {
		return errors.New("setup prepares the Docker backend; for Kubernetes, apply deploy/kubernetes and run `mcp-code-runner doctor`")
	}
	// Client configuration errors (a bad --http) show before anything slow.
	clients, err := hostClientSetup(cmd, g, "", o.addr)
	if err != nil {
		return err
	}
	smoke, err := setupSmokeLanguages(reg, o.languages)
	if err != nil {
		return err
	}
	if cfg.RootImage != "" && !o.skipImages {
		if err := images.CheckRootImage(cfg.RootImage); err != nil {
			return err
		}
	}

	fmt.Fprintf(out, "[1/4] the container engine\n")
	cli, err := dockerengine.NewClient(cfg.DockerHost)
	if err != nil {
		return err
	}
	defer cli.Close()
	platform, err := checkEngine(ctx, out, cli)
	if err != nil {
		return err
	}
	// Agent problems are said now, not after an hour of image builds.
	if err := hostAgentUsable(); err != nil && cfg.AgentPath == "" {
		fmt.Fprintf(out, "warn  the sandboxes of %s need the agent built for Linux: %v\n", platform, err)
	} else if agent, err := agentPath(cfg); err != nil {
		return err
	} else if err := checkAgentArch(agent, strings.TrimPrefix(platform, "linux/")); err != nil {
		return err
	} else {
		fmt.Fprintf(out, "ok    sandbox agent %s (%s)\n", agent, platform)
	}

	fmt.Fprintf(out, "\n[2/4] runtime images for %s\n", platform)
	if o.skipImages {
		fmt.Fprintf(out, "skipped (--skip-images)\n")
	} else if err := setupImages(ctx, cmd, cli, reg, cfg.RootImage, o); err != nil {
		return err
	}

	fmt.Fprintf(out, "\n[3/4] a test run in a hardened sandbox\n")
	if err := setupSmoke(ctx, out, g, cfg, reg, smoke); err != nil {
		return err
	}

	fmt.Fprintf(out, "\n[4/4] client configuration\n\n")
	writeClientConfig(out, clients)
	fmt.Fprintf(out, "\nsetup is done; `mcp-code-runner doctor` checks everything again later.\n")
	return nil
}

// setupSmokeLanguages returns the languages of the test run: the ones asked
// for, else the registry's probe languages (roles.probe).
func setupSmokeLanguages(reg *languages.Registry, asked []string) ([]languages.Language, error) {
	names := asked
	if len(names) == 0 {
		names = reg.Roles().Probe
	}
	var out []languages.Language
	for _, n := range names {
		l, ok := reg.Lookup(strings.TrimSpace(n))
		if !ok {
			return nil, fmt.Errorf("--languages: unknown language %q; the languages are %s", n, strings.Join(reg.Names(), ", "))
		}
		out = append(out, l)
	}
	return out, nil
}

// daemonHint says how to get a Docker daemon running on goos.
func daemonHint(goos string) string {
	switch goos {
	case "darwin":
		return "install and start Docker Desktop (https://docs.docker.com/desktop/setup/install/mac-install/) and wait until it says it is running; " +
			"for another engine (Colima, Podman machine, a remote daemon) give its address with --docker-host or DOCKER_HOST"
	case "windows":
		return "install and start Docker Desktop with its WSL 2 backend (https://docs.docker.com/desktop/setup/install/windows-install/) and wait until it says it is running; " +
			"for a remote daemon give its address with --docker-host or DOCKER_HOST"
	default:
		return "on Debian or Ubuntu, `sudo bash scripts/ensure-docker.sh` in a checkout of the source installs docker.io and starts the daemon; " +
			"elsewhere start it (`sudo systemctl start docker`), and let this user use its socket (the docker group) or give the daemon's address with --docker-host or DOCKER_HOST"
	}
}

// checkEngine checks that the daemon answers, speaks a recent enough API and
// runs Linux containers, prints what it found and returns its platform
// (linux/amd64, linux/arm64), which the images are built for.
func checkEngine(ctx context.Context, out io.Writer, cli *client.Client) (string, error) {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return "", fmt.Errorf("the Docker daemon at %s is not reachable (%v): %s", cli.DaemonHost(), err, daemonHint(runtime.GOOS))
	}
	v, err := cli.ServerVersion(pctx, client.ServerVersionOptions{})
	if err != nil {
		return "", fmt.Errorf("asking the Docker daemon at %s for its version: %w", cli.DaemonHost(), err)
	}
	if versionLess(v.APIVersion, minAPIVersion) {
		return "", fmt.Errorf("docker %s at %s speaks API %s, older than %s: upgrade Docker Engine to 20.10 or newer", v.Version, cli.DaemonHost(), v.APIVersion, minAPIVersion)
	}
	info, err := cli.Info(pctx, client.InfoOptions{})
	if err != nil {
		return "", fmt.Errorf("asking the Docker daemon at %s about itself: %w", cli.DaemonHost(), err)
	}
	if info.Info.OSType != "linux" {
		return "", fmt.Errorf("the Docker daemon at %s runs %s containers; sandboxes are Linux containers: switch Docker Desktop to Linux containers", cli.DaemonHost(), info.Info.OSType)
	}
	var runtimes []string
	for name := range info.Info.Runtimes {
		runtimes = append(runtimes, name)
	}
	slices.Sort(runtimes)
	platform := "linux/" + v.Arch
	fmt.Fprintf(out, "ok    Docker %s at %s: API %s, %s (%s), runtimes %s (default %s)\n",
		v.Version, cli.DaemonHost(), v.APIVersion, platform, info.Info.OperatingSystem, strings.Join(runtimes, ", "), info.Info.DefaultRuntime)
	return platform, nil
}

// setupImages builds the images of the asked languages (all by default) that
// are missing or out of date, with a progress display, after asking when it
// can. rootImage is the root_image setting.
func setupImages(ctx context.Context, cmd *cobra.Command, cli *client.Client, reg *languages.Registry, rootImage string, o *setupOptions) error {
	out := cmd.OutOrStdout()
	targets, err := images.Resolve(reg, o.languages)
	if err != nil {
		return fmt.Errorf("--languages: %w", err)
	}
	sts, err := images.Status(ctx, cli, reg)
	if err != nil {
		return err
	}
	var stale []string
	for _, st := range sts {
		if slices.Contains(targets, st.Name) && !st.UpToDate {
			stale = append(stale, st.Name)
		}
	}
	if len(stale) == 0 {
		fmt.Fprintf(out, "ok    the images are up to date (%s)\n", strings.Join(targets, ", "))
		return nil
	}
	if !o.yes && isTerminal(os.Stdin) {
		fmt.Fprintf(out, "%d image(s) to build: %s. This takes from several minutes to an hour and a few GB of disk. Build them now? [Y/n] ",
			len(stale), strings.Join(stale, ", "))
		answer, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "" && a != "y" && a != "yes" {
			return errors.New("no images built; run setup again when ready, or `mcp-code-runner setup --languages python,bash` for fewer images")
		}
	}
	logFile, err := os.CreateTemp("", "mcp-code-runner-setup-*.log")
	if err != nil {
		return fmt.Errorf("making the build log: %w", err)
	}
	progress := newBuildProgress(out, logFile, isTerminal(os.Stdout), reg.Names())
	var log io.Writer = progress
	if o.verbose {
		log = io.MultiWriter(out, logFile)
	}
	start := time.Now()
	err = images.Build(ctx, cli, reg, o.languages, images.Options{Log: log, Mirror: os.Getenv("MCR_DEBIAN_MIRROR"), RootImage: rootImage})
	progress.Close()
	_ = logFile.Close()
	if err != nil {
		return fmt.Errorf("%w (the full build output is in %s)", err, logFile.Name())
	}
	_ = os.Remove(logFile.Name())
	fmt.Fprintf(out, "ok    the images are ready (%s)\n", time.Since(start).Round(time.Second))
	return nil
}

// setupSmoke runs each language's test program in a real sandbox.
func setupSmoke(ctx context.Context, out io.Writer, g *globalOptions, cfg config.Config, reg *languages.Registry, langs []languages.Language) error {
	st, err := newStack(g)
	if err != nil {
		if hostAgentUsable() == nil && cfg.AgentPath == "" {
			// On Linux this binary is the agent, which must be static.
			return fmt.Errorf("the sandbox backend: %w; installed with go install, it must be built static: `CGO_ENABLED=0 go install %s@latest`", err, installPath)
		}
		return fmt.Errorf("the sandbox backend: %w", err)
	}
	defer st.Close()
	defer waitForRemovals(ctx, st)
	if err := st.backend.Check(ctx); err != nil {
		return err
	}
	for _, l := range langs {
		img := reg.ImageOf(l)
		if err := st.backend.CheckImage(ctx, img.Tag); err != nil {
			return fmt.Errorf("the image %s of %s is missing: run setup without --skip-images, or `mcp-code-runner images build %s`", img.Tag, l.Name, l.Name)
		}
		res, err := smokeRun(ctx, st, l)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "ok    %s\n", res)
	}
	return nil
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/moby/moby/client"
	"github.com/spf13/cobra"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/images"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
)

func init() { subcommands = append(subcommands, newImagesCmd) }

// newImagesCmd is "images": build and list the runtime images.
func newImagesCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Build and list the runtime images the sandboxes run in",
		Long: `The runtime images are built locally from Dockerfiles embedded in this
binary, on a bare Debian trixie image: mcp-code-runner/debian:trixie, taken
from "docker pull debian:trixie-slim" (or the image --root-image names) where
the daemon reaches a registry and otherwise bootstrapped with debootstrap (as
root) from the host's apt mirror.

Run "images build" once after installing, and again after upgrading.`,
	}
	cmd.AddCommand(newImagesBuildCmd(g), newImagesListCmd(g))
	return cmd
}

// newImagesBuildCmd is "images build [LANG or IMAGE...]".
// imagesBuildHelp says what `images build` builds, how, and for which
// platform.
const imagesBuildHelp = `Build the named images, or the images of the named languages, and the
images they build on. With no names, build the default set: every image but
the on-demand ones (dialects: Racket, Octave, Raku, Crystal, Vala;
jsruntimes: Deno, Bun, CoffeeScript; swift; objc; extras: Emacs Lisp,
Fennel, Hy, Forth, jq, BASIC, brainfuck, LLVM IR) and the optional python-ml.
--all adds the on-demand images; python-ml is
built only when named.

An image is skipped when it exists and was built from its current Dockerfile
on its current parent image; --force rebuilds the named images anyway, without
the build cache, so that they get the current Debian and npm packages. After
each build, every language of the image prints its version in a throwaway
sandbox; the versions are stored as image labels ("images list" shows them).
Images that do not build on each other build side by side, --parallel at a
time (3 by default), their log lines marked "[image] ".

Builds use the daemon's legacy builder with host networking, so that apt and
npm reach their archives. The Debian base is pulled by the daemon (which may
be remote, on a network of its own): debian:trixie-slim, or the copy on a
registry mirror that --root-image (root_image, MCR_ROOT_IMAGE) names. Where
the daemon cannot pull it, the Debian base is bootstrapped with debootstrap,
which needs root and the debootstrap package; the mirror is read from the
host's apt configuration unless --mirror or MCR_DEBIAN_MIRROR is set.
Behind a TLS-intercepting proxy, npm inside the build trusts the certificates
added to the host (/usr/local/share/ca-certificates) or given with --ca-certs;
they are used in a build stage only, not kept in the image.

The images are built for the daemon's platform (linux/amd64 or linux/arm64).
--platform builds them for another one, for a daemon of that platform, on a
daemon whose machine runs its programs under emulation (qemu-user-static with
binfmt_misc); bootstrapping the base for it needs the same on this machine.
Such images replace the daemon's own of the same tags: cross-build on a
daemon of its own (see docs/ARM64.md).`

func newImagesBuildCmd(g *globalOptions) *cobra.Command {
	var all, force bool
	var rootImage string
	var parallel int
	mirror := os.Getenv("MCR_DEBIAN_MIRROR")
	caCerts := os.Getenv("MCR_BUILD_CA_CERTS")
	platform := os.Getenv("MCR_BUILD_PLATFORM")
	cmd := &cobra.Command{
		Use:   "build [LANG or IMAGE...]",
		Short: "Build the runtime images that are missing or out of date",
		Long:  imagesBuildHelp,
		Example: `  mcp-code-runner images build            # the default images, missing or changed
  mcp-code-runner images build --all      # and the on-demand ones
  mcp-code-runner images build racket     # one on-demand image (and base)
  mcp-code-runner images build python ts  # the python and node images (and base)
  mcp-code-runner images build --force node
  DOCKER_HOST=unix:///run/mcr-arm64/docker.sock mcp-code-runner images build --platform linux/arm64 scripting`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if platform != "" {
				if _, err := images.ParsePlatform(platform); err != nil {
					return fmt.Errorf("--platform (MCR_BUILD_PLATFORM): %w", err)
				}
			}
			cfg, reg, err := g.load()
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("root-image") {
				rootImage = cfg.RootImage
			}
			// A root image the daemon could not pull as meant is refused
			// before anything touches the daemon.
			if rootImage != "" {
				if err := images.CheckRootImage(rootImage); err != nil {
					return err
				}
			}
			if parallel < 1 {
				return fmt.Errorf("--parallel %d: give how many images may build at a time, 1 or more", parallel)
			}
			if all {
				if len(args) > 0 {
					return fmt.Errorf("--all builds every image; give either --all or names (%s), not both", strings.Join(args, " "))
				}
				args = images.All(reg)
			}
			cli, err := imagesConnect(cmd, cfg)
			if err != nil {
				return err
			}
			defer cli.Close()
			start := time.Now()
			opts := images.Options{Log: cmd.ErrOrStderr(), Force: force, Mirror: mirror, RootImage: rootImage, Platform: platform, Parallel: parallel}
			if caCerts != "" {
				if opts.ExtraCACerts, err = os.ReadFile(caCerts); err != nil {
					return fmt.Errorf("reading --ca-certs: %w", err)
				}
			}
			if err := images.Build(cmd.Context(), cli, reg, args, opts); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "images are ready (%s)\n", time.Since(start).Round(time.Second))
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "build every image but the optional python-ml: the default set and the on-demand images")
	cmd.Flags().IntVar(&parallel, "parallel", images.DefaultParallel, "how many images build at a time (1: one after the other)")
	cmd.Flags().BoolVar(&force, "force", false, "rebuild the named images without the build cache, even when up to date")
	cmd.Flags().StringVar(&mirror, "mirror", mirror, "Debian mirror URL for bootstrapping the base (env MCR_DEBIAN_MIRROR; default: the host's apt configuration)")
	cmd.Flags().StringVar(&rootImage, "root-image", "", "image the daemon pulls for the Debian trixie base, e.g. a registry mirror's mirror.example/library/debian:trixie-slim (config root_image, env MCR_ROOT_IMAGE; default: "+images.PullRef+")")
	cmd.Flags().StringVar(&platform, "platform", platform, "build for this platform, linux/amd64 or linux/arm64 (env MCR_BUILD_PLATFORM; default: the daemon's)")
	cmd.Flags().StringVar(&caCerts, "ca-certs", caCerts, "PEM file of extra CA certificates npm must trust during builds (env MCR_BUILD_CA_CERTS; default: /usr/local/share/ca-certificates/*.crt)")
	g.addSettingFlags(cmd, registryFlags...)
	return cmd
}

// newImagesListCmd is "images list".
func newImagesListCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Show each runtime image: present, size, up to date, runtime versions",
		Long: `List every image of the language registry with whether it exists, its
size, whether it is up to date with its Dockerfile and parent image, and the
runtime versions measured when it was built. Run "mcp-code-runner images
build" to build what is missing or out of date.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cli, reg, err := imagesSetup(cmd, g)
			if err != nil {
				return err
			}
			defer cli.Close()
			sts, err := images.Status(cmd.Context(), cli, reg)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "IMAGE\tTAG\tPRESENT\tSIZE\tUP TO DATE\tRUNTIMES")
			stale := false
			for _, st := range sts {
				size, runtimes := "-", "-"
				if st.Present {
					size = fmt.Sprintf("%.0f MB", float64(st.Size)/1e6)
				}
				if len(st.RuntimeVersions) > 0 {
					var rs []string
					for l, v := range st.RuntimeVersions {
						rs = append(rs, l+": "+v)
					}
					sort.Strings(rs)
					runtimes = strings.Join(rs, "; ")
				}
				// An optional or on-demand image that was never built is no fault.
				notWanted := (st.Optional || st.OnDemand) && !st.Present
				stale = stale || (!st.UpToDate && !notWanted)
				switch {
				case notWanted && st.Optional:
					size = "optional"
				case notWanted:
					size = "on demand"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", st.Name, st.Tag, imagesYesNo(st.Present), size, imagesYesNo(st.UpToDate), runtimes)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if stale {
				fmt.Fprintln(cmd.ErrOrStderr(), `some images are missing or out of date: run "mcp-code-runner images build"`)
			}
			return nil
		},
	}
	g.addSettingFlags(cmd, registryFlags...)
	return cmd
}

// imagesSetup loads the configuration and registry and connects to Docker.
func imagesSetup(cmd *cobra.Command, g *globalOptions) (*client.Client, *languages.Registry, error) {
	cfg, reg, err := g.load()
	if err != nil {
		return nil, nil, err
	}
	cli, err := imagesConnect(cmd, cfg)
	if err != nil {
		return nil, nil, err
	}
	return cli, reg, nil
}

// imagesConnect connects to the Docker daemon cfg names and checks that it
// answers.
func imagesConnect(cmd *cobra.Command, cfg config.Config) (*client.Client, error) {
	cli, err := dockerengine.NewClient(cfg.DockerHost)
	if err != nil {
		return nil, err
	}
	if err := dockerengine.Ping(cmd.Context(), cli); err != nil {
		cli.Close()
		return nil, err
	}
	return cli, nil
}

func imagesYesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

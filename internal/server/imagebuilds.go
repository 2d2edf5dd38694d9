package server

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/images"
)

// startImageBuilds starts serve's background image builder when
// images.build_on_start asks for it: the default set's images that are
// missing or out of date, one at a time at a low CPU priority, on the
// Docker daemon whose images the backend runs. The engine then makes runs
// in a language whose image is building wait for it. It returns the set
// of image tags being built that runs must wait for (nil without a
// builder), for the start-up log.
func (s *Server) startImageBuilds(ctx context.Context) (map[string]bool, error) {
	if !s.cfg.Images.BuildOnStart {
		return nil, nil
	}
	b, ok := s.backend.(interface{ Client() *client.Client })
	if !ok {
		s.log.Warn("images.build_on_start: this backend does not run the local Docker daemon's images; nothing is built", "backend", s.backendChoice)
		return nil, nil
	}
	cli := b.Client()
	status, err := images.Status(ctx, cli, s.reg)
	if err != nil {
		s.log.Warn("images.build_on_start: cannot read the images' state; nothing is built", "err", err)
		return nil, nil
	}
	var targets []images.Target
	pending := map[string]bool{}
	for _, image := range status {
		img, _ := s.reg.Image(image.Name)
		if !s.reg.Default(img) || (image.Present && image.UpToDate) {
			continue
		}
		targets = append(targets, images.Target{Name: image.Name, Present: image.Present})
		if !image.Present {
			pending[image.Tag] = true
		}
	}
	if len(targets) == 0 {
		return nil, nil
	}
	log := io.Discard
	if path := s.cfg.Images.BuildLog; path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("images.build_log %s: %w", path, err)
		}
		context.AfterFunc(ctx, func() { _ = f.Close() })
		log = f
	}
	rootImage := s.cfg.RootImage
	s.builds.Start(ctx, s.reg, targets, images.BackgroundOptions{
		Build: func(ctx context.Context, image string, w io.Writer) error {
			return images.Build(ctx, cli, s.reg, []string{image}, images.Options{Log: w, Parallel: 1, RootImage: rootImage, LowPriority: true})
		},
		Log:    log,
		Logger: s.log,
	})
	return pending, nil
}

package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the directory of go.mod above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// documentationPages are README.md and every page in docs/, relative to root.
func documentationPages(t *testing.T, root string) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)
	for i, p := range pages {
		pages[i], _ = filepath.Rel(root, p)
	}
	return pages
}

func TestDocumentationLinksResolve(t *testing.T) {
	root := repoRoot(t)
	anchorsOf := map[string]map[string]bool{}
	anchors := func(page string) map[string]bool {
		if a, ok := anchorsOf[page]; ok {
			return a
		}
		text, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		anchorsOf[page] = Anchors(string(text))
		return anchorsOf[page]
	}
	for _, page := range documentationPages(t, root) {
		text, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, link := range Links(string(text)) {
			if strings.Contains(link.Target, "://") || strings.HasPrefix(link.Target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(link.Target, "#")
			target := page
			if path != "" {
				target = filepath.Clean(filepath.Join(filepath.Dir(page), path))
				if strings.HasPrefix(target, "..") {
					t.Errorf("%s:%d: %s leads out of the repository", page, link.Line, link.Target)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, target)); err != nil {
					t.Errorf("%s:%d: %s: no such file or directory in the repository (%s)", page, link.Line, link.Target, target)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(target, ".md") {
				t.Errorf("%s:%d: %s: an anchor into a file that is not Markdown", page, link.Line, link.Target)
				continue
			}
			if !anchors(target)[anchor] {
				t.Errorf("%s:%d: %s: %s has no heading whose anchor is #%s", page, link.Line, link.Target, target, anchor)
			}
		}
	}
}

func TestSlugIsGitHubsAnchorOfAHeading(t *testing.T) {
	for _, tc := range []struct{ heading, slug string }{
		{"Where it runs", "where-it-runs"},
		{"Teams: several clients on one server", "teams-several-clients-on-one-server"},
		{"Sessions: `create_session`, `close_session`", "sessions-create_session-close_session"},
		{"The crun backend: no daemon between the server and its containers", "the-crun-backend-no-daemon-between-the-server-and-its-containers"},
		{"Where a container's cost goes", "where-a-containers-cost-goes"},
		{"Warm JavaScript and bursts, 2026-12-01", "warm-javascript-and-bursts-2026-12-01"},
		{"C# and Kotlin: no newer compiler", "c-and-kotlin-no-newer-compiler"},
		{"Node.js: `javascript` and `javascript-lts`", "nodejs-javascript-and-javascript-lts"},
		{"See [the pool](x.md) now", "see-the-pool-now"},
	} {
		if got := Slug(tc.heading); got != tc.slug {
			t.Errorf("Slug(%q) = %q, want %q", tc.heading, got, tc.slug)
		}
	}
}

func TestAnchorsNumberARepeatedHeadingAndIgnoreCodeBlocks(t *testing.T) {
	text := "# Top\n\n## Images\n\n```sh\n# not a heading\n```\n\n## Images\n"
	got := Anchors(text)
	for _, want := range []string{"top", "images", "images-1"} {
		if !got[want] {
			t.Errorf("Anchors has no %q: %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Errorf("a comment in a code block became an anchor: %v", got)
	}
}

func TestLinksSkipCodeSpansAndCodeBlocks(t *testing.T) {
	text := "see [a](a.md#x) and `[b](b.md)`\n```\n[c](c.md)\n```\n![img](i.png)\n"
	var got []string
	for _, l := range Links(text) {
		got = append(got, l.Target)
	}
	if strings.Join(got, " ") != "a.md#x i.png" {
		t.Errorf("Links = %v, want [a.md#x i.png]", got)
	}
}

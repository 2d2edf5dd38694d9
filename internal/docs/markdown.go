package docs

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Link is one inline link of a Markdown file, as written.
type Link struct {
	Line   int
	Target string
}

var (
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
	heading    = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	linkText   = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// Links returns the inline links of a Markdown text, outside fenced code
// blocks and code spans (where brackets are code, not links).
func Links(text string) []Link {
	var links []Link
	forEachProseLine(text, func(n int, line string) {
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			links = append(links, Link{Line: n, Target: m[1]})
		}
	})
	return links
}

// Anchors returns the anchors GitHub gives the headings of a Markdown text:
// each heading's slug, and a second heading of the same slug gets "-1", a
// third "-2", and so on.
func Anchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	forEachProseLine(text, func(_ int, line string) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			return
		}
		slug := Slug(m[2])
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	})
	return anchors
}

// Slug is GitHub's anchor for a heading's text: the text a reader sees (link
// targets and code-span backticks dropped), lower-cased, with every character
// that is not a letter, a digit, a space, a hyphen or an underscore removed and
// each space made a hyphen.
func Slug(headingText string) string {
	text := linkText.ReplaceAllString(headingText, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// forEachProseLine calls fn with each line (numbered from 1) that is not inside
// a fenced code block.
func forEachProseLine(text string, fn func(n int, line string)) {
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		fn(i+1, line)
	}
}

// repoTopDirs are the top-level directories whose paths the contributor
// pages name.
var repoTopDirs = []string{"cmd/", "internal/", "e2e/", "scripts/", "deploy/", "docs/", "conformance/", ".ci/"}

// placeholder matches a path element that stands for a name to fill in
// (NAME, LANGUAGE, TOOL.snap.json), which no repository path has.
var placeholder = regexp.MustCompile(`(^|/)[A-Z][A-Z_]+([./]|$)`)

// RepoPaths returns the code spans of a Markdown text that name a path of
// the repository: a span that starts with one of its top-level directories,
// holds no space, and has no placeholder element. A trailing "/" is kept off.
func RepoPaths(text string) []string {
	var paths []string
	forEachProseLine(text, func(_ int, line string) {
		for _, span := range codeSpan.FindAllString(line, -1) {
			p := strings.Trim(span, "`")
			if strings.ContainsAny(p, " *{}<>") || strings.Contains(p, "...") || placeholder.MatchString(p) {
				continue
			}
			for _, top := range repoTopDirs {
				if strings.HasPrefix(p, top) {
					paths = append(paths, strings.TrimSuffix(p, "/"))
					break
				}
			}
		}
	})
	return paths
}

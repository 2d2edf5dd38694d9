package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// architecturePage draws the packages and names their files.
const architecturePage = "docs/ARCHITECTURE.md"

// goPackages are the module's packages as `go list ./...` names them,
// relative to the module (internal/engine, cmd/mcp-code-runner).
func goPackages(t *testing.T, root string) map[string]bool {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.Dir}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	pkgs := map[string]bool{}
	for dir := range strings.FieldsSeq(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		pkgs[filepath.ToSlash(rel)] = true
	}
	return pkgs
}

func readPage(t *testing.T, root, page string) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

// codeSpans are the code spans of text's prose lines, without backticks.
func codeSpans(text string) []string {
	var spans []string
	forEachProseLine(text, func(_ int, line string) {
		for _, s := range codeSpan.FindAllString(line, -1) {
			spans = append(spans, strings.Trim(s, "`"))
		}
	})
	return spans
}

func TestArchitectureNamesEveryPackage(t *testing.T) {
	root := repoRoot(t)
	named := map[string]bool{}
	for _, s := range codeSpans(readPage(t, root, architecturePage)) {
		named[strings.TrimSuffix(s, "/")] = true
	}
	for pkg := range goPackages(t, root) {
		if !named[pkg] {
			t.Errorf("%s does not name package %s: give it its layer's row", architecturePage, pkg)
		}
	}
}

// packagePath is a code span that names a directory of cmd/ or internal/.
var packagePath = regexp.MustCompile(`^(cmd|internal)/[a-z0-9_/-]+$`)

func TestArchitecturePackagesExist(t *testing.T) {
	root := repoRoot(t)
	pkgs := goPackages(t, root)
	for _, s := range codeSpans(readPage(t, root, architecturePage)) {
		p := strings.TrimSuffix(s, "/")
		if !packagePath.MatchString(p) || pkgs[p] {
			continue
		}
		// A directory without Go files is data (the interpreter programs),
		// not a package.
		if goFiles, _ := filepath.Glob(filepath.Join(root, p, "*.go")); len(goFiles) == 0 {
			if fi, err := os.Stat(filepath.Join(root, p)); err == nil && fi.IsDir() {
				continue
			}
		}
		t.Errorf("%s names `%s`, which `go list ./...` does not list", architecturePage, s)
	}
}

// goFile is a code span that names a Go file by its name alone.
var goFile = regexp.MustCompile(`^[a-z0-9_]+\.go$`)

// TestArchitectureFilesExist checks the files the page names by name alone:
// in a list item (a bullet, or a numbered step with its indented lines),
// each such name must be a file of a package the same item names.
func TestArchitectureFilesExist(t *testing.T) {
	root := repoRoot(t)
	var dirs []string // the packages the current item names
	checked := 0
	forEachProseLine(readPage(t, root, architecturePage), func(n int, line string) {
		item := strings.HasPrefix(line, "- ") || regexp.MustCompile(`^\d+\. `).MatchString(line)
		switch {
		case item:
			dirs = nil
		case strings.TrimSpace(line) == "" || !strings.HasPrefix(line, " "):
			dirs = nil
			return
		}
		spans := codeSpan.FindAllString(line, -1)
		for _, s := range spans {
			p := strings.Trim(s, "`")
			switch {
			case packagePath.MatchString(strings.TrimSuffix(p, "/")):
				dirs = append(dirs, strings.TrimSuffix(p, "/"))
			case strings.HasSuffix(p, ".go") && strings.Contains(p, "/"):
				dirs = append(dirs, filepath.Dir(p))
			}
		}
		for _, s := range spans {
			name := strings.Trim(s, "`")
			if !goFile.MatchString(name) || len(dirs) == 0 {
				continue
			}
			checked++
			found := false
			for _, d := range dirs {
				if _, err := os.Stat(filepath.Join(root, d, name)); err == nil {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s:%d names `%s`, which none of %v holds", architecturePage, n, name, dirs)
			}
		}
	})
	if checked == 0 {
		t.Errorf("%s names no file by its name alone in a list: the check would check nothing", architecturePage)
	}
}

// TestArchitectureFileListsAreComplete checks the section that lists the
// files of a package, one concern each: every Go file of each package it
// lists is named there.
func TestArchitectureFileListsAreComplete(t *testing.T) {
	root := repoRoot(t)
	text := readPage(t, root, architecturePage)
	start := strings.Index(text, "## Files of ")
	if start < 0 {
		t.Fatalf("%s has no section of files", architecturePage)
	}
	section := text[start:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	for _, item := range strings.Split(section, "\n- ")[1:] {
		spans := codeSpan.FindAllString(item, -1)
		if len(spans) == 0 {
			continue
		}
		dir := strings.Trim(spans[0], "`")
		named := map[string]bool{}
		for _, s := range spans {
			named[strings.Trim(s, "`")] = true
		}
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Errorf("%s lists the files of `%s`, which has none", architecturePage, dir)
			continue
		}
		for _, f := range files {
			name := filepath.Base(f)
			if !strings.HasSuffix(name, "_test.go") && !named[name] {
				t.Errorf("%s lists the files of `%s` without `%s`: say what it holds", architecturePage, dir, name)
			}
		}
	}
}

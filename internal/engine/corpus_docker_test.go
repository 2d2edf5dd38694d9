//go:build !fast

package engine_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

var updateCorpus = flag.Bool("update-corpus", false, "write each corpus program's .out file from its run (review them before committing)")

// corpusDir holds, per language, programs written the way that language's
// community writes them (testdata/corpus/LANGUAGE/NAME.EXT), each with
// NAME.out, the stdout it must print, and optionally NAME.in (its stdin)
// and NAME.args (its arguments, one per line). NAME.limit instead of
// NAME.out marks a program that cannot run as written here and says why.
const corpusDir = "testdata/corpus"

// corpusProgram is one program of the corpus.
type corpusProgram struct {
	lang, name, code string
	stdin            string
	args             []string
	want             string // expected stdout
	limit            string // why it cannot run as written, if it cannot
}

func loadCorpus(t *testing.T) []corpusProgram {
	t.Helper()
	read := func(p string) (string, bool) {
		b, err := os.ReadFile(p)
		return string(b), err == nil
	}
	langs, err := os.ReadDir(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	var progs []corpusProgram
	for _, d := range langs {
		files, err := os.ReadDir(filepath.Join(corpusDir, d.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			switch filepath.Ext(f.Name()) {
			case ".out", ".in", ".args", ".limit":
				continue
			}
			base := filepath.Join(corpusDir, d.Name(), strings.TrimSuffix(f.Name(), filepath.Ext(f.Name())))
			code, _ := read(filepath.Join(corpusDir, d.Name(), f.Name()))
			p := corpusProgram{lang: d.Name(), name: f.Name(), code: code}
			p.stdin, _ = read(base + ".in")
			if a, ok := read(base + ".args"); ok {
				p.args = strings.Split(strings.TrimSuffix(a, "\n"), "\n")
			}
			p.limit, _ = read(base + ".limit")
			var ok bool
			if p.want, ok = read(base + ".out"); !ok && p.limit == "" && !*updateCorpus {
				t.Errorf("%s/%s has neither a .out nor a .limit file", p.lang, p.name)
			}
			progs = append(progs, p)
		}
	}
	return progs
}

// TestIdiomCorpusAgainstDocker runs every program of the corpus as
// written, all through one engine a few at a time, and checks its output.
func TestIdiomCorpusAgainstDocker(t *testing.T) {
	progs := loadCorpus(t)
	reg := languages.Builtin()
	for _, lang := range reg.Names() {
		n := 0
		for _, p := range progs {
			if p.lang == lang && p.limit == "" {
				n++
			}
		}
		if n < 2 {
			t.Errorf("language %s has %d corpus programs that run; every language needs at least two, in its own idioms", lang, n)
		}
	}
	for _, p := range progs {
		if _, ok := reg.Lookup(p.lang); !ok {
			t.Errorf("corpus directory %s is not a language", p.lang)
		}
	}

	cfg := config.Default()
	cfg.MaxConcurrentRuns, cfg.QueueTimeoutSeconds = 4, 900
	testutil.Unhurried(&cfg)
	e, b := testutil.Engine(t, &cfg)
	t.Cleanup(func() { testutil.NoLeftovers(t, b.Client()) })
	start := time.Now()
	t.Cleanup(func() { t.Logf("%d corpus programs in %s", len(progs), time.Since(start).Round(time.Second)) })
	for _, p := range progs {
		t.Run(p.lang+"/"+p.name, func(t *testing.T) {
			t.Parallel()
			testutil.RequireImage(t, b, reg, p.lang)
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
			defer cancel()
			r, err := e.Run(ctx, engine.Request{Language: p.lang, Code: p.code, Stdin: p.stdin, Args: p.args}, engine.RunOptions{})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if p.limit != "" {
				if r.Status == engine.StatusOK {
					t.Fatalf("runs as written now (stdout %q); replace its .limit file with a .out file", r.Stdout)
				}
				t.Logf("cannot run as written (%s): %s", r.Status, strings.TrimSpace(p.limit))
				return
			}
			if *updateCorpus && r.Status == engine.StatusOK {
				base := filepath.Join(corpusDir, p.lang, strings.TrimSuffix(p.name, filepath.Ext(p.name)))
				if err := os.WriteFile(base+".out", []byte(r.Stdout), 0o644); err != nil {
					t.Fatal(err)
				}
				p.want = r.Stdout
			}
			if r.Status != engine.StatusOK || r.Stdout != p.want {
				compile := ""
				if r.Compile != nil {
					compile = r.Compile.Stdout + r.Compile.Stderr
				}
				t.Fatalf("status %s (%s)\nstdout:\n%s\nwant:\n%s\nstderr:\n%s\ncompile:\n%s", r.Status, r.ExitReason, r.Stdout, p.want, r.Stderr, compile)
			}
		})
	}
}

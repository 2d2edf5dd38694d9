package images

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
)

// tree is the registry's shape: one image on the root, many on it, and
// images two levels further up.
var tree = []languages.Image{
	{Name: "base", From: "root", Tag: "t/base"},
	{Name: "python", From: "base", Tag: "t/python"},
	{Name: "node", From: "base", Tag: "t/node"},
	{Name: "native", From: "base", Tag: "t/native"},
	{Name: "go", From: "base", Tag: "t/go"},
	{Name: "packages", From: "python", Tag: "t/packages"},
	{Name: "functional", From: "native", Tag: "t/functional"},
}

// gate is a build that records what it was given and blocks until the
// test releases it.
type gate struct {
	mu       sync.Mutex
	started  []string
	parents  map[string]string
	running  int
	maxSeen  int
	startedC chan string
	release  map[string]chan error
}

func newGate() *gate { return newGateFor(tree) }

func newGateFor(images []languages.Image) *gate {
	g := &gate{parents: map[string]string{}, startedC: make(chan string, 100), release: map[string]chan error{}}
	for _, img := range images {
		g.release[img.Name] = make(chan error, 1)
	}
	return g
}

func (g *gate) build(ctx context.Context, img languages.Image, parentID string) (string, error) {
	g.mu.Lock()
	g.started = append(g.started, img.Name)
	g.parents[img.Name] = parentID
	g.running++
	g.maxSeen = max(g.maxSeen, g.running)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.running--
		g.mu.Unlock()
	}()
	g.startedC <- img.Name
	select {
	case err := <-g.release[img.Name]:
		if err != nil {
			return "", err
		}
		return "id-" + img.Name, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// next waits for the next build to start and returns its image's name.
func (g *gate) next(t *testing.T) string {
	t.Helper()
	return <-g.startedC
}

func (g *gate) startedNow() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.started)
}

// releaseOldestFirst runs schedule over images with g's builds, ending the
// builds one at a time, the oldest first; after each end (and at the start)
// it waits for the builds that must then start: those whose parent is
// built, as many as the free slots allow. It returns what started at each
// of those points, each in name order (builds that start together start in
// no order of their own), and fails the test when an image started before
// its parent was built or schedule failed.
func releaseOldestFirst(t *testing.T, g *gate, images []languages.Image, parallel int) [][]string {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- schedule(context.Background(), images, parallel, g.build) }()
	from := map[string]string{}
	for _, img := range images {
		from[img.Name] = img.From
	}
	built := map[string]bool{"root": true}
	started := map[string]bool{}
	var running []string
	var batches [][]string
	expectStarts := func() {
		ready := 0
		for _, img := range images {
			if !started[img.Name] && built[img.From] {
				ready++
			}
		}
		batch := []string{}
		for range min(parallel-len(running), ready) {
			n := g.next(t)
			if !built[from[n]] {
				t.Fatalf("%s started before its parent was built", n)
			}
			started[n] = true
			batch = append(batch, n)
		}
		slices.Sort(batch)
		batches = append(batches, batch)
		running = append(running, batch...)
	}
	expectStarts()
	for len(running) > 0 {
		n := running[0]
		running = running[1:]
		g.release[n] <- nil
		// Built once its goroutine has returned: the next start shows it.
		built[n] = true
		expectStarts()
	}
	if err := <-done; err != nil {
		t.Fatalf("schedule: %v", err)
	}
	return batches
}

func TestImagesBuildAfterTheirParentWithItsIDAndAtMostParallelAtATime(t *testing.T) {
	const parallel = 2
	g := newGate()
	batches := releaseOldestFirst(t, g, tree, parallel)
	if !slices.Equal(batches[0], []string{"base"}) {
		t.Fatalf("first builds %v, want base alone: every other image builds on it", batches[0])
	}
	if g.maxSeen > parallel {
		t.Errorf("%d builds ran at once, want at most %d", g.maxSeen, parallel)
	}
	if g.maxSeen < parallel {
		t.Errorf("at most %d builds ran at once, want %d: independent images wait for each other", g.maxSeen, parallel)
	}
	if len(g.started) != len(tree) {
		t.Errorf("built %v, want every image once", g.started)
	}
	for _, img := range tree {
		want := ""
		if img.From != "root" {
			want = "id-" + img.From
		}
		if got := g.parents[img.Name]; got != want {
			t.Errorf("%s built on %q, want its parent's ID %q", img.Name, got, want)
		}
	}
}

func TestTheReadyImageWithTheLongestLineOfBuildsAheadStartsFirst(t *testing.T) {
	// The registry's shape with its build times: python and the image on it
	// (300+150 s) ahead of node and its child (250+180), of go (200) and of
	// native and its child (60+90); the tie at the end goes in the
	// registry's order.
	timed := []languages.Image{
		{Name: "base", From: "root", Tag: "t/base", BuildSeconds: 3},
		{Name: "go", From: "base", Tag: "t/go", BuildSeconds: 200},
		{Name: "native", From: "base", Tag: "t/native", BuildSeconds: 60},
		{Name: "node", From: "base", Tag: "t/node", BuildSeconds: 250},
		{Name: "python", From: "base", Tag: "t/python", BuildSeconds: 300},
		{Name: "functional", From: "native", Tag: "t/functional", BuildSeconds: 90},
		{Name: "jsruntimes", From: "node", Tag: "t/jsruntimes", BuildSeconds: 180},
		{Name: "packages", From: "python", Tag: "t/packages", BuildSeconds: 150},
		{Name: "untimed", From: "base", Tag: "t/untimed"},
	}
	for _, tc := range []struct {
		name     string
		parallel int
		// want is what starts after each build ends (first: at the start),
		// each in name order: the builds that start together start in no
		// order of their own.
		want [][]string
	}{
		{"one at a time: each time the longest line of the ready ones", 1,
			[][]string{{"base"}, {"python"}, {"node"}, {"go"}, {"jsruntimes"}, {"native"}, {"packages"}, {"functional"}, {"untimed"}, {}}},
		{"three at a time: the three longest lines first, then each freed slot to the longest line ready", 3,
			[][]string{{"base"}, {"go", "node", "python"}, {"native"}, {"jsruntimes"}, {"packages"}, {"functional"}, {"untimed"}, {}, {}, {}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := releaseOldestFirst(t, newGateFor(timed), timed, tc.parallel)
			if !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Errorf("started %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAFailedBuildStopsTheOthersSkipsItsChildrenAndIsTheErrorReturned(t *testing.T) {
	g := newGate()
	done := make(chan error, 1)
	go func() { done <- schedule(context.Background(), tree, 3, g.build) }()
	g.next(t)
	g.release["base"] <- nil
	running := map[string]bool{g.next(t): true, g.next(t): true, g.next(t): true}
	var failing string
	for n := range running {
		failing = n
		break
	}
	g.release[failing] <- errors.New("apt-get failed")
	err := <-done
	if err == nil || err.Error() != "apt-get failed" {
		t.Fatalf("schedule: %v, want the failed build's own error", err)
	}
	started := g.startedNow()
	if len(started) != 4 {
		t.Errorf("builds started: %v, want only base and the three running when one failed", started)
	}
	// The others were cancelled, not left running: schedule returned.
	if g.running != 0 {
		t.Errorf("%d builds still running after schedule returned", g.running)
	}
}

func TestABuildThatGivesNoIDIsAFailure(t *testing.T) {
	err := schedule(context.Background(), tree[:1], 1, func(context.Context, languages.Image, string) (string, error) { return "", nil })
	if err == nil || !strings.Contains(err.Error(), "t/base") {
		t.Fatalf("schedule: %v, want an error naming the image", err)
	}
}

func TestBuildLogsPassWholeLinesAndMarkEachBuildsWhenSideBySide(t *testing.T) {
	for _, tc := range []struct {
		name     string
		prefixed bool
		want     string
	}{
		{"one build at a time: the lines as written", false, "Step 1/2 : FROM base\nrest\nno newline\n"},
		{"side by side: each line marked with its image", true, "[node] Step 1/2 : FROM base\n[node] rest\n[node] no newline\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			logs := newBuildLogs(&out, tc.prefixed)
			w := logs.of("node")
			fmt.Fprint(w, "Step 1/2 ")
			if out.Len() != 0 {
				t.Fatalf("a partial line was passed on: %q", out.String())
			}
			fmt.Fprint(w, ": FROM base\nrest\nno new")
			fmt.Fprint(w, "line")
			w.Close()
			if out.String() != tc.want {
				t.Errorf("log %q, want %q", out.String(), tc.want)
			}
		})
	}
}

func TestLinesOfBuildsSideBySideNeverMix(t *testing.T) {
	var out bytes.Buffer
	logs := newBuildLogs(&out, true)
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b", "c"} {
		wg.Go(func() {
			w := logs.of(name)
			defer w.Close()
			for i := range 200 {
				// A line written in pieces, as a build's stream arrives.
				fmt.Fprintf(w, "%s-line-", name)
				fmt.Fprintf(w, "%d\n", i)
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 600 {
		t.Fatalf("%d lines, want 600", len(lines))
	}
	for _, l := range lines {
		name, rest, _ := strings.Cut(l, "] ")
		name = strings.TrimPrefix(name, "[")
		if !strings.HasPrefix(rest, name+"-line-") {
			t.Fatalf("mixed line %q", l)
		}
	}
}

package store_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store/storetest"
)

func TestMemoryMeetsTheSpecification(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return store.NewMemory() })
}

func TestEmbeddedMeetsTheSpecification(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := store.OpenEmbedded(t.TempDir(), store.EmbeddedOptions{SweepInterval: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func openEmbedded(t *testing.T, dir string) *store.Embedded {
	t.Helper()
	s, err := store.OpenEmbedded(dir, store.EmbeddedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestEmbeddedKeepsEveryWriteAcrossAReopen(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openEmbedded(t, dir)
	if err := s.Put(ctx, "executions/e1", []byte("done"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, "tasks/t1", []byte("working"), 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openEmbedded(t, dir)
	for key, want := range map[string]string{"executions/e1": "done", "tasks/t1": "working"} {
		if got, err := s.Get(ctx, key); err != nil || string(got) != want {
			t.Errorf("after reopening, Get(%q) = %q, %v; want %q", key, got, err, want)
		}
	}
	if !strings.Contains(s.Describe(), filepath.Join(dir, store.StateFile)) {
		t.Errorf("Describe = %q, want it to name the file", s.Describe())
	}
}

func TestEmbeddedDirectoryAndFileAreTheServersOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "state")
	openEmbedded(t, dir)
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, store.StateFile): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s has mode %o, want %o", path, got, want)
		}
	}
}

func TestEmbeddedSweepRemovesExpiredEntriesFromTheFile(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	s, err := store.OpenEmbedded(t.TempDir(), store.EmbeddedOptions{Now: func() time.Time { return clock() }, SweepInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for key, ttl := range map[string]time.Duration{"a": time.Minute, "b": time.Minute, "c": 2 * time.Hour, "d": 0} {
		if err := s.Put(ctx, key, []byte(key), ttl); err != nil {
			t.Fatal(err)
		}
	}
	// b's rewrite with a longer TTL moves its expiry: the sweep keeps it.
	if err := s.Put(ctx, "b", []byte("b2"), 3*time.Hour); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("Sweep before any expiry = %d, %v; want 0", n, err)
	}
	later := now.Add(time.Hour)
	clock = func() time.Time { return later }
	if n, err := s.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("Sweep after an hour = %d, %v; want 1 (a)", n, err)
	}
	got, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range got {
		keys = append(keys, e.Key)
	}
	if strings.Join(keys, ",") != "b,c,d" {
		t.Fatalf("after the sweep the store holds %v, want b, c and d", keys)
	}
}

// The hostile data directories: each is refused with an error that names
// the file, and the file is left exactly as it was.
func TestEmbeddedRefusesADataDirectoryItDoesNotOwn(t *testing.T) {
	cases := []struct {
		name    string
		prepare func(t *testing.T, path string)
		want    string
	}{
		{"a state.db that is not a bbolt file", func(t *testing.T, path string) {
			writeFile(t, path, []byte(strings.Repeat("not a database, just some text\n", 500)))
		}, "is not a state file this server can read"},
		{"a state.db shorter than a page", func(t *testing.T, path string) {
			writeFile(t, path, []byte("garbage"))
		}, "is not a state file this server can read"},
		{"a bbolt file of another program", func(t *testing.T, path string) {
			foreignBolt(t, path, func(tx *bolt.Tx) error {
				b, err := tx.CreateBucket([]byte("widgets"))
				if err != nil {
					return err
				}
				return b.Put([]byte("w1"), []byte("blue"))
			})
		}, "bbolt file of another program"},
		{"a bbolt file with another program's meta bucket", func(t *testing.T, path string) {
			foreignBolt(t, path, func(tx *bolt.Tx) error {
				b, err := tx.CreateBucket([]byte("meta"))
				if err != nil {
					return err
				}
				return b.Put([]byte("format"), []byte("someone else"))
			})
		}, `format "someone else"`},
		{"a newer format version", func(t *testing.T, path string) {
			foreignBolt(t, path, func(tx *bolt.Tx) error {
				b, err := tx.CreateBucket([]byte("meta"))
				if err != nil {
					return err
				}
				if err := b.Put([]byte("format"), []byte("mcp-code-runner state")); err != nil {
					return err
				}
				return b.Put([]byte("version"), []byte("99"))
			})
		}, "format version 99, newer than this server's 1"},
		{"a directory named state.db", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, "is not a regular file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, store.StateFile)
			c.prepare(t, path)
			before := snapshot(t, path)
			s, err := store.OpenEmbedded(dir, store.EmbeddedOptions{})
			if err == nil {
				_ = s.Close()
				t.Fatal("opened")
			}
			if !errors.Is(err, store.ErrNotStateStore) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %q: want ErrNotStateStore naming %s and saying %q", err, path, c.want)
			}
			if after := snapshot(t, path); after != before {
				t.Errorf("the refused file changed")
			}
		})
	}
}

func TestEmbeddedOpensAnEmptyFileAsNew(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, store.StateFile), nil)
	s := openEmbedded(t, dir)
	if err := s.Put(context.Background(), "k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
}

func TestEmbeddedRefusesASecondOpenInTheSameProcess(t *testing.T) {
	dir := t.TempDir()
	openEmbedded(t, dir)
	_, err := store.OpenEmbedded(dir, store.EmbeddedOptions{LockTimeout: 100 * time.Millisecond})
	wantInUse(t, err, dir)
}

// holderEnv makes the test binary a process that holds the store in a
// directory until its standard input closes.
const holderEnv = "MCR_STORE_TEST_HOLD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(holderEnv); dir != "" {
		s, err := store.OpenEmbedded(dir, store.EmbeddedOptions{})
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("holding\n")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		_ = s.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestEmbeddedRefusesADataDirectoryAnotherProcessHolds(t *testing.T) {
	dir := t.TempDir()
	holder := exec.Command(os.Args[0])
	holder.Env = append(os.Environ(), holderEnv+"="+dir)
	stdin, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	holder.Stderr = os.Stderr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Wait() }()
	defer stdin.Close()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "holding\n" {
		t.Fatalf("the holding process said %q, %v", line, err)
	}
	_, err = store.OpenEmbedded(dir, store.EmbeddedOptions{LockTimeout: 200 * time.Millisecond})
	wantInUse(t, err, dir)

	// Once the holder is gone, the directory is free again.
	_ = stdin.Close()
	if err := holder.Wait(); err != nil {
		t.Fatalf("the holding process: %v", err)
	}
	openEmbedded(t, dir)
}

func wantInUse(t *testing.T, err error, dir string) {
	t.Helper()
	want := "data directory " + dir + " is in use by another mcp-code-runner server; give each server its own data_dir, or use the etcd store for replicas"
	if !errors.Is(err, store.ErrDataDirInUse) || !strings.Contains(err.Error(), want) {
		t.Fatalf("second open: %v; want ErrDataDirInUse saying %q", err, want)
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func foreignBolt(t *testing.T, path string, fill func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fill); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func snapshot(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.IsDir() {
		return "dir"
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data) + fi.ModTime().String()
}

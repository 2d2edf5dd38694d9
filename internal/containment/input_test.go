//go:build !fast

package containment_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
)

// TestHugeCodeIsRejected sends 100 MB of code: validation rejects it (over
// the 1 MiB limit) at once and no container is created.
func TestHugeCodeIsRejected(t *testing.T) {
	h := newHarness(t, "python")
	code := strings.Repeat("# padding padding padding padding padding padding\n", 2_000_000) + "print('never')\n"
	if len(code) < 100_000_000 {
		t.Fatalf("code is only %d bytes", len(code))
	}
	since := time.Now()
	start := time.Now()
	r, err := h.e.Run(context.Background(), engine.Request{Language: "python", Code: code}, engine.RunOptions{})
	took := time.Since(start)
	if err == nil {
		t.Fatalf("100 MB of code was accepted: %+v", r.Status)
	}
	t.Logf("OUTCOME rejected in %s: %v", took, err)
	if engine.CodeOf(err) != engine.CodeInvalid || !strings.Contains(err.Error(), "over the limit of 1048576") {
		t.Errorf("want an invalid-argument error naming the limit, got %s: %v", engine.CodeOf(err), err)
	}
	if took > 2*time.Second {
		t.Errorf("rejection took %s", took)
	}
	mid := time.Now()
	if n := h.view.created(t, since, mid); n != 0 {
		t.Errorf("%d container(s) created for rejected input", n)
	}
	// The same event query sees the container of a real run (the probe works).
	h.run(engine.Request{Code: "print('small')", TimeoutSeconds: 10}, 30*time.Second)
	if n := h.view.created(t, mid, time.Now()); n != 1 {
		t.Errorf("the event probe counted %d containers for one run, want 1", n)
	}
}

// TestBinaryOutput prints every byte value and invalid UTF-8: the result
// JSON stays valid, the bytes are counted, and past the inline cap the full
// output is kept byte for byte.
func TestBinaryOutput(t *testing.T) {
	t.Run("small", func(t *testing.T) {
		h := newHarness(t, "python")
		code := `import sys
sys.stdout.buffer.write(bytes(range(256)) * 4)
sys.stderr.buffer.write(b'\xff\xfe\x00bad\xc3')`
		r := h.run(engine.Request{Code: code, TimeoutSeconds: 10}, 30*time.Second)
		if r.Status != engine.StatusOK || r.StdoutBytes != 1024 || r.StderrBytes != 7 {
			t.Errorf("status %s stdout_bytes %d stderr_bytes %d; want ok, 1024, 7", r.Status, r.StdoutBytes, r.StderrBytes)
		}
		if r.Stdout != string(bytes.Repeat(func() []byte {
			b := make([]byte, 256)
			for i := range b {
				b[i] = byte(i)
			}
			return b
		}(), 4)) {
			t.Errorf("stdout bytes were altered in the result")
		}
		b, _ := json.Marshal(r)
		var back map[string]any
		if err := json.Unmarshal(b, &back); err != nil {
			t.Errorf("result JSON does not decode: %v", err)
		}
	})
	t.Run("over the inline cap", func(t *testing.T) {
		h := newHarness(t, "python")
		code := `import hashlib, random, sys
data = random.Random(7).randbytes(200000)
sys.stdout.buffer.write(data)
sys.stderr.write(hashlib.sha256(data).hexdigest())`
		r := h.run(engine.Request{Code: code, TimeoutSeconds: 10}, 30*time.Second)
		if !r.StdoutTruncated || r.StdoutBytes != 200000 {
			t.Errorf("want truncated with 200000 bytes counted, got %v %d", r.StdoutTruncated, r.StdoutBytes)
		}
		if !utf8.ValidString(r.Stdout) {
			t.Logf("note: inline stdout carries invalid UTF-8 (JSON encoding replaces it)")
		}
		full, ok := h.e.Outputs().Get(r.StdoutURI, principal.LocalName)
		sum := sha256.Sum256(full)
		if !ok || len(full) != 200000 || hex.EncodeToString(sum[:]) != strings.TrimSpace(r.Stderr) {
			t.Errorf("kept output (%d bytes, found %v) does not match what the program wrote", len(full), ok)
		}
	})
}

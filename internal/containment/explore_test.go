package containment_test

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

func TestExplore(t *testing.T) {
	code := os.Getenv("X_CODE")
	if code == "" {
		t.Skip()
	}
	e, _ := testutil.Engine(t, nil)
	to, _ := strconv.Atoi(os.Getenv("X_TIMEOUT"))
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapInuse
	peak := before
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak {
				peak = m.HeapInuse
			}
		}
	}()
	start := time.Now()
	r, err := e.Run(context.Background(), engine.Request{Language: os.Getenv("X_LANG"), Code: code, TimeoutSeconds: to}, engine.RunOptions{})
	close(stop)
	t.Logf("heap before %d MiB peak %d MiB", before>>20, peak>>20)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Stdout) > 3000 {
		r.Stdout = r.Stdout[:3000]
	}
	b, _ := json.MarshalIndent(r, "", " ")
	t.Logf("took %s\n%s", time.Since(start), b)
}

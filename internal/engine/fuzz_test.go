package engine

import (
	"encoding/json"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
)

// FuzzDecodeRequest feeds arbitrary tool arguments through the decoding and
// validation that run_code applies: no input may panic, and whatever is
// accepted must respect the limits.
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		`{"language":"python","code":"print(1)"}`,
		`{"language":"ts","code":"x","files":[{"path":"a/b.txt","content":"aGk=","encoding":"base64"}],"env":{"A":"1"},"args":["x"],"timeout_seconds":5}`,
		`{"language":"bash","code":"x","files":[{"path":"../x","content":""}]}`,
		`{"language":"bash","code":"x","env":{"1":"\u0000"}}`,
		`{"language":"bash","code":"x","env":[{"name":"A","value":"1"},{"name":"A","value":"2"}]}`,
		`{"language":"bash","code":"x","env":[{"name":"1","value":"\u0000"}]}`,
		`{"language":"","code":""}`,
		`{"files":[{"path":"/etc/passwd"}],"timeout_seconds":-1}`,
	} {
		f.Add([]byte(seed))
	}
	reg := languages.Builtin()
	lim := config.Default().Limits
	lim.MaxCodeBytes, lim.MaxFileBytes, lim.MaxTotalFileBytes = 4096, 1024, 2048
	f.Fuzz(func(t *testing.T, data []byte) {
		var req Request
		if json.Unmarshal(data, &req) != nil {
			return
		}
		v, err := validate(req, reg, lim)
		if err != nil {
			if !IsInvalid(err) {
				t.Fatalf("validation error of the wrong kind: %v", err)
			}
			return
		}
		if v.timeout < 1 || v.timeout > lim.MaxTimeoutSeconds {
			t.Fatalf("accepted timeout %d", v.timeout)
		}
		total := 0
		for _, file := range v.files[1:] {
			total += len(file.Data)
			if len(file.Data) > lim.MaxFileBytes {
				t.Fatalf("accepted a file of %d bytes", len(file.Data))
			}
		}
		if total > lim.MaxTotalFileBytes || len(req.Code) > lim.MaxCodeBytes {
			t.Fatal("accepted input over the limits")
		}
	})
}

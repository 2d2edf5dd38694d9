//go:build !fast

package mcpserver_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"image/png"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// onePixelPNG is a valid 1x1 PNG.
const onePixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

func TestArtifactsComeBack(t *testing.T) {
	eng, b := testutil.Engine(t, nil)
	testutil.RequireImage(t, b, languages.Builtin(), "bash")
	t.Cleanup(func() { testutil.NoLeftovers(t, b.Client()) })
	cs := connect(t, eng)
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{
		"language": "bash",
		"code": `echo '` + onePixelPNG + `' | base64 -d > plot.png
mkdir -p out && printf 'a,b\n1,2\n' > out/table.csv
ln -s /etc/passwd leak.txt
ln -s / rootlink
head -c 3000 /dev/urandom > out/blob.bin
echo changed >> given.txt`,
		"files": []any{
			map[string]any{"path": "given.txt", "content": "given\n"},
			map[string]any{"path": "untouched.txt", "content": "same\n"},
		},
	}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	var out engine.Result
	data, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(data, &out)
	got := map[string]engine.Artifact{}
	for _, a := range out.Artifacts {
		got[a.Path] = a
	}
	for _, want := range []string{"plot.png", "out/table.csv", "out/blob.bin", "given.txt"} {
		if _, ok := got[want]; !ok {
			t.Errorf("artifact %s missing: %+v", want, out.Artifacts)
		}
	}
	for _, never := range []string{"leak.txt", "rootlink", "untouched.txt", "main.sh"} {
		if _, ok := got[never]; ok {
			t.Errorf("%s must not be an artifact", never)
		}
	}
	if a := got["plot.png"]; a.MIMEType != "image/png" {
		t.Errorf("png mime %q", a.MIMEType)
	}
	var images, links int
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.ImageContent:
			images++
			if c.MIMEType != "image/png" {
				t.Errorf("image block mime %s", c.MIMEType)
			}
			if _, err := png.Decode(bytes.NewReader(c.Data)); err != nil {
				t.Errorf("image block does not decode: %v", err)
			}
		case *mcp.ResourceLink:
			links++
			rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: c.URI})
			if err != nil {
				t.Fatalf("reading %s: %v", c.URI, err)
			}
			body := []byte(rr.Contents[0].Text)
			if rr.Contents[0].Blob != nil {
				body = rr.Contents[0].Blob
			}
			sum := sha256.Sum256(body)
			if hex.EncodeToString(sum[:]) != got[c.Name].SHA256 {
				t.Errorf("%s: content read back does not match its sha256", c.Name)
			}
			if c.Name == "out/table.csv" && rr.Contents[0].Text != "a,b\n1,2\n" {
				t.Errorf("csv read back as %+v", rr.Contents[0])
			}
		}
	}
	if images != 1 || links != 3 {
		t.Errorf("%d image blocks and %d resource links, want 1 and 3", images, links)
	}
	if strings.Contains(string(data), onePixelPNG) {
		t.Error("image data leaked into structuredContent")
	}
}

// TestPlotComesBackAsPNG: plt.show() in a one-shot run, and a figure left
// open in a session cell, each come back as a PNG image block that decodes.
func TestPlotComesBackAsPNG(t *testing.T) {
	eng, b := testutil.Engine(t, nil)
	testutil.RequireImage(t, b, languages.Builtin(), "python")
	t.Cleanup(func() { testutil.NoLeftovers(t, b.Client()) })
	cs := connect(t, eng)
	ctx := context.Background()
	// Importing pandas and matplotlib takes seconds of CPU: on a loaded
	// machine, more than the default 10 s limit. The test is about the
	// images, so the runs get the most time a call may ask for.
	const plotTimeout = 60
	pngBlocks := func(res *mcp.CallToolResult) int {
		n := 0
		for _, c := range res.Content {
			if img, ok := c.(*mcp.ImageContent); ok {
				cfg, err := png.DecodeConfig(bytes.NewReader(img.Data))
				if err != nil || cfg.Width < 100 {
					t.Errorf("image block is not a real plot: %v %+v", err, cfg)
				}
				n++
			}
		}
		return n
	}
	plot := "import numpy as np, pandas as pd\nimport matplotlib.pyplot as plt\nx = np.linspace(0, 6, 50)\ndf = pd.DataFrame({'x': x, 'y': np.sin(x)})\nplt.plot(df.x, df.y)\n"
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "python", "code": plot + "plt.show()", "timeout_seconds": plotTimeout}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	if n := pngBlocks(res); n != 1 {
		t.Errorf("one-shot plt.show(): %d image blocks; result %s", n, textOf(res))
	}
	sess, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_session", Arguments: map[string]any{"language": "python"}})
	if err != nil || sess.IsError {
		t.Fatalf("%v %+v", err, sess)
	}
	id := sess.StructuredContent.(map[string]any)["session_id"].(string)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "python", "session_id": id, "code": plot, "timeout_seconds": plotTimeout}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	if n := pngBlocks(res); n != 1 {
		t.Errorf("session figure left open: %d image blocks; result %s", n, textOf(res))
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "close_session", Arguments: map[string]any{"session_id": id}}); err != nil {
		t.Fatal(err)
	}
}

// textOf is the text blocks of res, for failure messages.
func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

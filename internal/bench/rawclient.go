package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// rawProtocolVersion is the protocol version the minimal client speaks: the
// 2025 era that most MCP clients in use speak.
const rawProtocolVersion = "2025-11-25"

// rawClient is the least an MCP client over Streamable HTTP must do against
// a stateless server: one POST per call, the result read from the answer
// (JSON, or the SSE event that carries it). It measures what the server
// and the transport cost without a client SDK's own machinery (the Go
// SDK's client costs about 0.5-1 ms more per call here: goroutine
// hand-offs that each wait for a wake-up on an idle machine).
type rawClient struct {
	url   string
	token string // sent as a bearer token when set
	http  *http.Client
	id    int64
}

func newRawClient(url string) *rawClient {
	return &rawClient{url: url, http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
}

// callTool calls the tool and returns its CallToolResult as JSON.
func (c *rawClient) callTool(ctx context.Context, name string, args any) (json.RawMessage, error) {
	c.id++
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": args}})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", rawProtocolVersion)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return nil, fmt.Errorf("HTTP %s: %s", resp.Status, msg)
	}
	var answer struct {
		ID     int64           `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	found := false
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// Events until the one answering this call (progress or log
		// notifications may come first).
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			if err := json.Unmarshal([]byte(data), &answer); err == nil && answer.ID == c.id {
				found = true
				break
			}
		}
	} else if err := json.NewDecoder(resp.Body).Decode(&answer); err == nil && answer.ID == c.id {
		found = true
	}
	switch {
	case !found:
		return nil, fmt.Errorf("no answer to call %d in the response", c.id)
	case answer.Error != nil:
		return nil, fmt.Errorf("tools/call: %s", answer.Error.Message)
	}
	return answer.Result, nil
}

// rawMCPCall runs lang's hello world as run_code with the minimal client.
func rawMCPCall(ctx context.Context, c *rawClient, lang string) func() bool {
	return rawRunCall(ctx, c, lang, hello[lang])
}

// rawRunCall runs code in lang as run_code with the minimal client; true
// when the run ends ok.
func rawRunCall(ctx context.Context, c *rawClient, lang, code string) func() bool {
	return func() bool {
		res, err := c.callTool(ctx, "run_code", map[string]any{"language": lang, "code": code})
		if err != nil {
			return false
		}
		var r struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Status string `json:"status"`
			} `json:"structuredContent"`
		}
		return json.Unmarshal(res, &r) == nil && !r.IsError && r.StructuredContent.Status == "ok"
	}
}

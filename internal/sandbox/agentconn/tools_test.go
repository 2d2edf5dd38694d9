package agentconn_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// toolCaller answers every call with its server and tool, and the run.
type toolCaller struct{}

func (toolCaller) CallTool(_ context.Context, runID string, call wire.ToolCall) wire.ToolResult {
	res, _ := json.Marshal(map[string]string{"run": runID, "called": call.Server + "." + call.Tool})
	return wire.ToolResult{Result: res}
}

// callingAgent reads its job, makes one tool call, writes the answer it
// gets as its output, and ends the job.
func callingAgent(in io.Reader, out io.Writer) error {
	if _, err := wire.ReadFrame(in); err != nil {
		return err
	}
	if _, err := out.Write(jsonFrame(wire.KindToolCall, wire.ToolCall{ID: 7, Server: "fs", Tool: "read"})); err != nil {
		return err
	}
	f, err := wire.ReadFrame(in)
	if err != nil {
		return err
	}
	if _, err := out.Write(frame(wire.KindStdout, 0, append([]byte{f.Kind, ' '}, f.Payload...))); err != nil {
		return err
	}
	if _, err := out.Write(jsonFrame(wire.KindStage, wire.StageResult{Name: "run"})); err != nil {
		return err
	}
	_, err = out.Write(jsonFrame(wire.KindDone, wire.Done{}))
	return err
}

func TestAToolCallFrameIsAnsweredByTheJobsCallerOrRefusedWithoutOne(t *testing.T) {
	for _, tc := range []struct {
		name   string
		caller sandbox.ToolCaller
		want   string
	}{
		{"given tools", toolCaller{}, `U {"id":7,"result":{"called":"fs.read","run":"`},
		{"given none", nil, `U {"id":7,"error":"this run was given no tools`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb, _ := start(t, callingAgent)
			j := job(t, time.Minute, sh("run", "true", time.Second))
			j.Request.Tools, j.Tools = &wire.Tools{Servers: []string{"fs"}}, tc.caller
			res, err := sb.Exec(context.Background(), j, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Incomplete || len(res.Stages) != 1 || !strings.HasPrefix(string(res.Stages[0].Stdout), tc.want) {
				t.Fatalf("result %+v, stdout %q", res, res.Stages[0].Stdout)
			}
		})
	}
}

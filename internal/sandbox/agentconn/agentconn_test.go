package agentconn_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/agent"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/agentconn"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// pipeLink is a sandbox whose agent runs on this host, in this process,
// over two pipes: the real agent (agent.Serve), or a hostile one.
type pipeLink struct {
	toAgent, fromAgent *os.File // the host's ends
	ended              chan struct{}
	diag               agentconn.Diagnostics
	oom                bool
	mu                 sync.Mutex
	kills, oomQueries  int
}

// serveFunc plays the agent on in and out.
type serveFunc func(in io.Reader, out io.Writer) error

// start runs serve as the agent of a new sandbox; the test waits for it
// to end.
func start(t *testing.T, serve serveFunc) (*agentconn.Sandbox, *pipeLink) {
	t.Helper()
	agentIn, toAgent, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromAgent, agentOut, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	l := &pipeLink{toAgent: toAgent, fromAgent: fromAgent, ended: make(chan struct{})}
	go func() {
		defer close(l.ended)
		if err := serve(agentIn, agentOut); err != nil {
			fmt.Fprintf(&l.diag, "agent: %v\n", err)
		}
		agentOut.Close()
		agentIn.Close()
	}()
	sb := agentconn.New("pipe", l, nil)
	t.Cleanup(func() {
		sb.Close()
		<-l.ended
	})
	return sb, l
}

func (l *pipeLink) Stream(context.Context) (agentconn.Stream, error) {
	return agentconn.Stream{Reader: l.fromAgent, Writer: l.toAgent, CloseWrite: l.toAgent.Close}, nil
}

// Kill cuts the pipes: the agent's writes fail and it ends once its stage
// does.
func (l *pipeLink) Kill(context.Context) {
	l.mu.Lock()
	l.kills++
	l.mu.Unlock()
	l.toAgent.Close()
	l.fromAgent.Close()
}

// counts returns how many times the sandbox was killed and asked about OOM.
func (l *pipeLink) counts() (kills, oomQueries int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.kills, l.oomQueries
}

func (l *pipeLink) OOMKilled(context.Context) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.oomQueries++
	return l.oom
}

func (l *pipeLink) Ended() <-chan struct{} { return l.ended }
func (l *pipeLink) Diagnostics() string    { return l.diag.String() }

func (l *pipeLink) Close() {
	l.toAgent.Close()
	l.fromAgent.Close()
}

func job(t *testing.T, deadline time.Duration, stages ...wire.Stage) sandbox.Job {
	return sandbox.Job{Deadline: deadline, RunID: t.Name(),
		Request: wire.Request{Workdir: t.TempDir(), OutputLimit: 1 << 10, Stages: stages}}
}

func sh(name, script string, timeout time.Duration) wire.Stage {
	return wire.Stage{Name: name, Argv: []string{"sh", "-c", script}, TimeoutMs: timeout.Milliseconds()}
}

func TestExecRunsOneJobOnTheRealAgentAndRefusesASecond(t *testing.T) {
	sb, _ := start(t, agent.Serve)
	var chunks []string
	res, err := sb.Exec(context.Background(), job(t, time.Minute,
		sh("compile", "echo built >&2", 10*time.Second), sh("run", "echo hello; exit 3", 10*time.Second)),
		func(c sandbox.Chunk) { chunks = append(chunks, fmt.Sprintf("%d:%d:%s", c.Stage, c.Stream, c.Data)) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Incomplete || res.Killed || len(res.Stages) != 2 {
		t.Fatalf("result %+v", res)
	}
	if st := res.Stages[1]; st.Name != "run" || string(st.Stdout) != "hello\n" || st.ExitCode != 3 {
		t.Errorf("run stage %+v, stdout %q", st.StageResult, st.Stdout)
	}
	if string(res.Stages[0].Stderr) != "built\n" {
		t.Errorf("compile stderr %q", res.Stages[0].Stderr)
	}
	if got := strings.Join(chunks, ","); got != "0:1:built\n,1:0:hello\n" {
		t.Errorf("chunks %q", got)
	}
	if _, err := sb.Exec(context.Background(), job(t, time.Minute, sh("run", "true", time.Second)), nil); !errors.Is(err, sandbox.ErrUsed) {
		t.Errorf("second Exec: %v, want ErrUsed", err)
	}
}

func TestCallServesManyJobsOnOneAgent(t *testing.T) {
	sb, _ := start(t, agent.Serve)
	dir := t.TempDir()
	call := func(script string) *sandbox.Result {
		t.Helper()
		j := job(t, time.Minute, sh("run", script, 10*time.Second))
		j.Request.Workdir, j.Request.Session = dir, true
		res, err := sb.Call(context.Background(), j, nil)
		if err != nil || res.Incomplete {
			t.Fatalf("call %q: %v %+v", script, err, res)
		}
		return res
	}
	call("echo kept > state")
	for i := range 3 {
		if got := string(call("cat state").Stages[0].Stdout); got != "kept\n" {
			t.Errorf("call %d: stdout %q", i, got)
		}
	}
}

func TestCallOfACallerThatWentAwayCancelsTheJobNotTheSandbox(t *testing.T) {
	sb, l := start(t, agent.Serve)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j := job(t, time.Minute, sh("run", "echo started; exec sleep 30", 20*time.Second))
	j.Request.Session = true
	res, err := sb.Call(ctx, j, func(sandbox.Chunk) { cancel() })
	if err != nil {
		t.Fatal(err)
	}
	if res.Killed || res.Incomplete || len(res.Stages) != 1 || !res.Stages[0].Cancelled {
		t.Fatalf("result %+v", res)
	}
	j = job(t, time.Minute, sh("run", "echo again", 10*time.Second))
	j.Request.Session = true
	if res, err := sb.Call(context.Background(), j, nil); err != nil || string(res.Stages[0].Stdout) != "again\n" {
		t.Fatalf("next call: %v %+v", err, res)
	}
	if kills, _ := l.counts(); kills != 0 {
		t.Errorf("the sandbox was killed %d times", kills)
	}
}

func TestTheDeadlineKillsTheSandbox(t *testing.T) {
	sb, l := start(t, agent.Serve)
	// The deadline comes a second after the job is sent (a shorter one can
	// fire before the send on a loaded machine), long before the stage's own
	// limit, which ends the in-process agent after the test.
	res, err := sb.Exec(context.Background(), job(t, time.Second, sh("run", "echo started; exec sleep 5", time.Minute)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if kills, ooms := l.counts(); !res.Killed || !res.Incomplete || kills != 1 || ooms != 1 {
		t.Errorf("result %+v after %d kills and %d OOM queries, want killed and incomplete, 1 of each", res, kills, ooms)
	}
}

func TestACallerThatWentAwayKillsAOneShotSandbox(t *testing.T) {
	sb, l := start(t, agent.Serve)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := sb.Exec(ctx, job(t, time.Minute, sh("run", "echo started; exec sleep 2", 3*time.Second)), func(sandbox.Chunk) { cancel() })
	if err != nil {
		t.Fatal(err)
	}
	if kills, _ := l.counts(); !res.Killed || !res.Incomplete || kills != 1 {
		t.Errorf("result %+v after %d kills, want killed and incomplete", res, kills)
	}
}

func TestAnAgentThatEndedBeforeItsJobIsDead(t *testing.T) {
	t.Run("ended", func(t *testing.T) {
		sb, l := start(t, func(io.Reader, io.Writer) error { return errors.New("no workspace") })
		<-l.ended
		_, err := sb.Exec(context.Background(), job(t, time.Minute, sh("run", "true", time.Second)), nil)
		if !errors.Is(err, sandbox.ErrDead) || !strings.Contains(err.Error(), "no workspace") {
			t.Errorf("Exec: %v, want ErrDead with the agent's diagnostics", err)
		}
	})
	t.Run("its end of the stream closed", func(t *testing.T) {
		closed := make(chan struct{})
		release := make(chan struct{})
		sb, _ := start(t, func(in io.Reader, _ io.Writer) error {
			in.(*os.File).Close()
			close(closed)
			<-release
			return nil
		})
		defer close(release)
		<-closed
		_, err := sb.Exec(context.Background(), job(t, time.Minute, sh("run", "true", time.Second)), nil)
		if !errors.Is(err, sandbox.ErrDead) || !strings.Contains(err.Error(), "sending the job") {
			t.Errorf("Exec: %v, want ErrDead on sending", err)
		}
	})
}

// hostile is an agent that reads the request and answers with frames,
// whatever they say.
func hostile(frames ...[]byte) serveFunc {
	return func(in io.Reader, out io.Writer) error {
		if _, err := wire.ReadFrame(in); err != nil {
			return err
		}
		for _, f := range frames {
			if _, err := out.Write(f); err != nil {
				return err
			}
		}
		return nil
	}
}

func frame(kind byte, stage uint8, payload []byte) []byte {
	b := []byte{kind, stage, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[2:], uint32(len(payload)))
	return append(b, payload...)
}

func jsonFrame(kind byte, v any) []byte {
	p, _ := json.Marshal(v)
	return frame(kind, 0, p)
}

func TestOutputBeyondTheRequestsLimitIsDroppedByTheHost(t *testing.T) {
	chunk := []byte(strings.Repeat("x", 600))
	sb, _ := start(t, hostile(frame(wire.KindStdout, 0, chunk), frame(wire.KindStdout, 0, chunk),
		frame(wire.KindStderr, 0, chunk), frame(wire.KindStdout, 0, chunk), jsonFrame(wire.KindDone, wire.Done{})))
	streamed := 0
	res, err := sb.Exec(context.Background(), job(t, time.Minute, sh("run", "true", time.Second)), func(c sandbox.Chunk) { streamed += len(c.Data) })
	if err != nil || res.Incomplete {
		t.Fatalf("%v %+v", err, res)
	}
	if st := res.Stages[0]; len(st.Stdout) != 1<<10 || len(st.Stderr) != 600 || streamed != 1<<10+600 {
		t.Errorf("kept %d stdout and %d stderr bytes, streamed %d; want the 1024-byte limit per stream", len(st.Stdout), len(st.Stderr), streamed)
	}
}

func TestFramesTheAgentWouldNotSendEndTheAnswer(t *testing.T) {
	huge := []byte{wire.KindArtifact, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(huge[2:], agentconn.HostFrameLimit+1)
	done := jsonFrame(wire.KindDone, wire.Done{})
	// Each case but the last is followed by a valid Done frame, which must
	// not be read as the end of a valid answer.
	cases := []struct {
		name   string
		frames [][]byte
	}{
		{"a frame over the host's limit", [][]byte{huge, done}},
		{"a stage the request does not have", [][]byte{frame(wire.KindStdout, 1, []byte("x")), done}},
		{"an unknown kind", [][]byte{frame('Z', 0, nil), done}},
		{"a request from the sandbox", [][]byte{frame(wire.KindRequest, 0, []byte("{}")), done}},
		{"a stage result that is not JSON", [][]byte{frame(wire.KindStage, 0, []byte("{")), done}},
		{"a stream cut inside a frame", [][]byte{done[:len(done)-1]}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sb, l := start(t, hostile(append([][]byte{frame(wire.KindStdout, 0, []byte("before"))}, c.frames...)...))
			l.oom = true
			res, err := sb.Exec(context.Background(), job(t, time.Minute, sh("run", "true", time.Second)), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Incomplete || !res.OOMKilled || string(res.Stages[0].Stdout) != "before" {
				t.Errorf("result %+v, want incomplete, the OOM asked for, the output before kept", res)
			}
		})
	}
}

func TestFileContentBeyondTheRequestsLimitIsSkipped(t *testing.T) {
	file := func(name string, n int) []byte {
		return jsonFrame(wire.KindArtifact, wire.Artifact{Path: name, Size: int64(n), Data: []byte(strings.Repeat("d", n))})
	}
	sb, _ := start(t, hostile(file("a", 600), file("b", 600), file("c", 300), jsonFrame(wire.KindDone, wire.Done{})))
	j := job(t, time.Minute, sh("run", "true", time.Second))
	j.Request.Artifacts = &wire.ArtifactLimits{MaxFiles: 10, MaxFileBytes: 1000, MaxTotalBytes: 1000, MaxScan: 100}
	res, err := sb.Exec(context.Background(), j, nil)
	if err != nil || res.Incomplete || len(res.Artifacts) != 3 {
		t.Fatalf("%v %+v", err, res)
	}
	for i, want := range []int{600, 0, 300} {
		if a := res.Artifacts[i]; len(a.Data) != want || (want == 0) != (a.Skipped != "") {
			t.Errorf("artifact %s: %d bytes, skipped %q; want %d", a.Path, len(a.Data), a.Skipped, want)
		}
	}
}

func TestAnAgentErrorIsReported(t *testing.T) {
	sb, _ := start(t, agent.Serve)
	j := job(t, time.Minute)
	j.Request.Files = []wire.File{{Path: "../escape", Data: []byte("x")}}
	res, err := sb.Exec(context.Background(), j, nil)
	if err != nil || res.Incomplete || res.AgentError == "" {
		t.Fatalf("%v %+v, want the agent's refusal", err, res)
	}
}

func TestDiagnosticsKeepsItsLimit(t *testing.T) {
	var d agentconn.Diagnostics
	for range 3 {
		if n, err := d.Write(make([]byte, agentconn.DiagnosticsLimit/2+1)); err != nil || n != agentconn.DiagnosticsLimit/2+1 {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if n := len(d.String()); n != agentconn.DiagnosticsLimit {
		t.Errorf("kept %d bytes, want %d", n, agentconn.DiagnosticsLimit)
	}
}

// scripted is an agent that writes frames before it reads anything, then
// waits for its input to end.
func scripted(frames ...[]byte) serveFunc {
	return func(in io.Reader, out io.Writer) error {
		for _, f := range frames {
			if _, err := out.Write(f); err != nil {
				return err
			}
		}
		_, _ = io.Copy(io.Discard, in)
		return nil
	}
}

func TestReadyWaitsForTheAgentToSayItIsReady(t *testing.T) {
	ready := frame(wire.KindReady, 0, nil)
	for _, c := range []struct {
		name    string
		agent   serveFunc
		wantErr string // "" for ready
		dead    bool
	}{
		{"the real agent says so first", agent.Serve, "", false},
		{"a hello before the ready is passed over", scripted(frame(wire.KindHello, 0, nil), ready), "", false},
		{"output before the ready is a protocol error", scripted(frame(wire.KindStdout, 0, nil), ready), "expected the agent's ready", false},
		{"a ready with a payload is a protocol error", scripted(frame(wire.KindReady, 0, []byte("x"))), "exceeds", false},
		{"an agent that ends first is dead", func(io.Reader, io.Writer) error { return nil }, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			sb, _ := start(t, c.agent)
			err := sb.Ready(context.Background())
			switch {
			case c.dead:
				if !errors.Is(err, sandbox.ErrDead) {
					t.Errorf("Ready: %v, want ErrDead", err)
				}
			case c.wantErr == "":
				if err != nil {
					t.Errorf("Ready: %v", err)
				}
			case err == nil || !strings.Contains(err.Error(), c.wantErr):
				t.Errorf("Ready: %v, want an error about %q", err, c.wantErr)
			}
		})
	}
}

func TestReadyEndsWithItsContextAndTheSandboxIsClosedAfter(t *testing.T) {
	sb, _ := start(t, scripted()) // never says it is ready
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sb.Ready(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Ready: %v, want the context's error", err)
	}
}

func TestAJobAfterReadyOrWithoutItIsServed(t *testing.T) {
	for _, readyFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("ready first: %v", readyFirst), func(t *testing.T) {
			sb, _ := start(t, agent.Serve)
			if readyFirst {
				if err := sb.Ready(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			res, err := sb.Exec(context.Background(), job(t, time.Minute, sh("run", "echo hi", 10*time.Second)), nil)
			if err != nil || res.Incomplete || len(res.Stages) != 1 || string(res.Stages[0].Stdout) != "hi\n" {
				t.Fatalf("Exec: %v, %+v", err, res)
			}
		})
	}
}

// countingLink is a pipeLink that counts its sandbox's OOM kills from
// outside (agentconn.OOMCounter), as a gVisor sandbox's host cgroup does.
type countingLink struct {
	*pipeLink
	kills *atomic.Int64
}

func (l *countingLink) OOMKills() int { return int(l.kills.Load()) }

func TestOOMKillsCountedFromOutsideMarkTheJobsLastStage(t *testing.T) {
	for _, tc := range []struct {
		name     string
		killedBy int64 // OOM kills the host counts during the job
		want     bool
	}{
		{"a kill during the job", 1, true},
		{"no kill during the job", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kills := new(atomic.Int64)
			kills.Store(3) // kills of earlier jobs are not this job's
			stages := []wire.StageResult{{Name: "compile"}, {Name: "run", ExitCode: 137, Signal: "SIGKILL"}}
			_, pl := start(t, func(in io.Reader, out io.Writer) error {
				if _, err := wire.ReadFrame(in); err != nil {
					return err
				}
				kills.Add(tc.killedBy)
				for i, st := range stages {
					p, _ := json.Marshal(st)
					if _, err := out.Write(frame(wire.KindStage, uint8(i), p)); err != nil {
						return err
					}
				}
				_, err := out.Write(jsonFrame(wire.KindDone, wire.Done{}))
				return err
			})
			sb := agentconn.New("counting", &countingLink{pipeLink: pl, kills: kills}, nil)
			res, err := sb.Exec(context.Background(), job(t, time.Minute, sh("compile", "true", time.Second), sh("run", "true", time.Second)), nil)
			if err != nil || res.Incomplete {
				t.Fatalf("%v %+v", err, res)
			}
			if res.OOMKilled != tc.want || res.Stages[1].OOMKilled != tc.want || res.Stages[0].OOMKilled {
				t.Errorf("oom_killed: result %v, compile %v, run %v; want %v on the run stage alone",
					res.OOMKilled, res.Stages[0].OOMKilled, res.Stages[1].OOMKilled, tc.want)
			}
		})
	}
}

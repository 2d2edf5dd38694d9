package docker

import (
	"context"
	"io"
	"net"
	"testing"
)

// TestStreamOfASandboxThatEndedBeforeItsAgentWasReached covers a pool
// sandbox killed while idle before its agent connected (under load that
// can be long after its start): its job must fail as undelivered, which
// agentconn reads as sandbox.ErrDead and the engine gives to another
// sandbox, instead of going into the attached streams of a dead container
// and coming back as a run that ended unexpectedly.
func TestStreamOfASandboxThatEndedBeforeItsAgentWasReached(t *testing.T) {
	for _, c := range []struct {
		name    string
		channel int  // as Create sets it: unknown when a socket is offered
		connect bool // the agent connected to its socket
		ended   bool
		wantErr bool
	}{
		{"ended before the agent connected", channelUnknown, false, true, true},
		{"connected, then ended", channelUnknown, true, true, false},
		{"connected and alive", channelUnknown, true, false, false},
		{"no socket offered, ended", channelStdio, false, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, w := io.Pipe()
			l := &link{stdout: newStdoutSink(w, c.channel), ended: make(chan struct{})}
			if c.connect {
				l.stdout.connected(&net.UnixConn{})
			}
			if c.ended {
				close(l.ended)
			}
			_, err := l.Stream(context.Background())
			if (err != nil) != c.wantErr {
				t.Fatalf("Stream: err %v, want an error: %v", err, c.wantErr)
			}
			if l.streamed.Load() == c.wantErr {
				t.Errorf("streamed = %v: only a stream handed out counts as reached", l.streamed.Load())
			}
		})
	}
}

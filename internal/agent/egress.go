package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// maxEgressRelays bounds the connections the agent relays at once: each
// holds two of the agent's descriptors, and the program shares its nofile
// limit's worth of them with nobody else.
const maxEgressRelays = 64

// StartEgress listens, before anything else runs in the sandbox, on the
// loopback address spec names and relays each connection to the server's
// egress proxy on its Unix socket: the only way out of a sandbox whose
// network is loopback alone. Taking the port first means no program can
// sit there instead.
func StartEgress(spec string) error {
	if spec == "" {
		return nil
	}
	var e wire.Egress
	if err := json.Unmarshal([]byte(spec), &e); err != nil {
		return fmt.Errorf("egress spec: %w", err)
	}
	ln, err := net.Listen("tcp", e.Listen)
	if err != nil {
		return fmt.Errorf("egress relay: %w", err)
	}
	go serveBounded(ln, maxEgressRelays, func(c net.Conn) { relay(c, e.Socket) })
	return nil
}

// serveBounded accepts ln's connections until it closes and serves each on
// a goroutine of its own, at most limit at once: each holds descriptors of
// the agent's, and one over the bound is closed at once.
func serveBounded(ln net.Listener, limit int, serve func(net.Conn)) {
	slots := make(chan struct{}, limit)
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		select {
		case slots <- struct{}{}:
		default:
			c.Close() // over the bound: refused, the agent keeps its descriptors
			continue
		}
		go func() {
			defer func() { <-slots }()
			serve(c)
		}()
	}
}

// relay copies c to and from a new connection to the proxy's socket.
func relay(c net.Conn, socket string) {
	defer c.Close()
	up, err := net.Dial("unix", socket)
	if err != nil {
		return
	}
	defer up.Close()
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = io.Copy(up, c)
		_ = up.(*net.UnixConn).CloseWrite()
	})
	_, _ = io.Copy(c, up)
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	wg.Wait()
}

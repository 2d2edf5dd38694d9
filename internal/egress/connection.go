package egress

import (
	"sync"
	"sync/atomic"
)

// Connection is what one connection of a sandbox through its proxy did:
// where it went, whether the policy let it, how many bytes it carried both
// ways, and the name of the secret the proxy put into it (never its value).
type Connection struct {
	Host    string `json:"host"`
	Port    int    `json:"port"`
	Method  string `json:"method"`
	Allowed bool   `json:"allowed"`
	// Reason is why it was denied (or cut: a byte cap reached after it was
	// allowed).
	Reason string `json:"reason,omitempty"`
	Bytes  int64  `json:"bytes"`
	// Secret names the secrets the proxy wrote into the request, joined
	// by commas when several are bound to the host.
	Secret string `json:"secret,omitempty"`
	// Approved: the host is off the sandbox's list and was reached on its
	// principal's approval.
	Approved bool `json:"approved,omitempty"`
}

// MethodApproval is the method of a Connection that is no connection: the
// user's answer to approving its host (Reason: approved, declined or
// unavailable), for the audit log.
const MethodApproval = "APPROVAL"

// connRecord gathers a Connection while the proxy serves it. The first
// decision names the destination; a later denial (a byte cap, a failed
// dial) turns an allowed connection into a denied one with its reason.
type connRecord struct {
	mu      sync.Mutex
	decided bool
	c       Connection
	secret  string
	bytes   atomic.Int64
}

func (r *connRecord) approve() {
	r.mu.Lock()
	r.c.Approved = true
	r.mu.Unlock()
}

func (r *connRecord) decide(host string, port int, how string, allowed bool, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.decided {
		r.decided = true
		r.c.Host, r.c.Port, r.c.Method, r.c.Allowed = host, port, how, allowed
	}
	if !allowed {
		r.c.Allowed = false
		if r.c.Reason == "" {
			r.c.Reason = reason
		}
	}
}

// report tells the proxy's OnConnection of a connection that reached a
// decision (one that ended before a request was read has no destination).
func (p *Proxy) report(rec *connRecord) {
	if p.onConnection == nil {
		return
	}
	rec.mu.Lock()
	c, decided := rec.c, rec.decided
	rec.mu.Unlock()
	if !decided {
		return
	}
	c.Bytes, c.Secret = rec.bytes.Load(), rec.secret
	p.onConnection(c)
}

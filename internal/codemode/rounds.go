package codemode

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
)

// Round is one tool call's approvals in the 2026-07-28 protocol era, where
// the server cannot ask the client's user mid-run: a call that needs
// approval is refused, the run's result asks the user (input requests),
// and the client calls again with the answers, which the same Round
// (found by the request state) holds for the run that follows. The answers
// hold for that call and its retries: "this run".
type Round struct {
	token string
	owner string
	ends  time.Time

	mu     sync.Mutex
	given  map[string]bool // key -> approved (false: declined)
	needed []string        // keys this run's calls were refused for, unasked
}

// roundState is the request state's prefix of a Round's token.
const roundState = "mcr-tools:"

// roundLife bounds how long a Round waits for the client's next call.
const roundLife = 15 * time.Minute

// maxRounds bounds the Rounds kept; past it the oldest are forgotten.
const maxRounds = 4096

type rounds struct {
	mu sync.Mutex
	m  map[string]*Round
}

// Round returns the Round of owner's call whose request state is state
// (its earlier rounds), or a new one.
func (b *Broker) Round(owner, state string) *Round {
	b.rounds.mu.Lock()
	defer b.rounds.mu.Unlock()
	now := time.Now()
	for k, r := range b.rounds.m {
		if now.After(r.ends) {
			delete(b.rounds.m, k)
		}
	}
	if token, ok := strings.CutPrefix(state, roundState); ok {
		if r := b.rounds.m[token]; r != nil && r.owner == owner {
			r.ends = now.Add(roundLife)
			return r
		}
	}
	if len(b.rounds.m) >= maxRounds {
		b.rounds.m = map[string]*Round{}
	}
	var t [16]byte
	_, _ = rand.Read(t[:])
	r := &Round{token: hex.EncodeToString(t[:]), owner: owner, ends: now.Add(roundLife), given: map[string]bool{}}
	b.rounds.m[r.token] = r
	return r
}

// State is the request state that finds the Round again.
func (r *Round) State() string { return roundState + r.token }

// Answer records the user's answer about key (server, or server/tool).
func (r *Round) Answer(key string, allow bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.given[key] = allow
}

// Needed returns the keys the run's calls were refused for that the user
// was not asked about yet, and forgets them.
func (r *Round) Needed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.needed
	r.needed = nil
	return out
}

// decide is a call's approval in the round: approved, declined, or asked
// for with the result.
func (r *Round) decide(key string) (allowed, answered bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	allow, ok := r.given[key]
	if !ok && !slices.Contains(r.needed, key) {
		r.needed = append(r.needed, key)
	}
	return allow, ok
}

type roundKey struct{}

// WithRound returns ctx whose runs take their approvals from r.
func WithRound(ctx context.Context, r *Round) context.Context {
	return context.WithValue(ctx, roundKey{}, r)
}

func roundFrom(ctx context.Context) *Round {
	r, _ := ctx.Value(roundKey{}).(*Round)
	return r
}

// ApprovalKey is the key an approval question is about: server for a
// server whose every call needs approval, server/tool for a tool of one.
func (b *Broker) ApprovalKey(key string) bool {
	server, tool, _ := strings.Cut(key, "/")
	spec, ok := b.cfg.Servers[server]
	if !ok {
		return false
	}
	if tool == "" {
		return spec.Approval == config.ApprovalServer
	}
	return spec.Approval == config.ApprovalTools && slices.Contains(spec.ApprovalTools, tool)
}

package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/egress/gate"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
)

// askApprovals asks the client's user, one elicitation per host, whether
// the caller's principal may reach the approvable hosts the run was
// denied, records each approval for the operator's TTL, and returns the
// hosts approved. It serves the 2025 era, where the server sends the client
// a request; the 2026-07-28 era asks with input requests in the result
// instead (approvalRequests). A client that declared no elicitation, or
// cannot be asked this way (stateless HTTP), approves nothing: the run keeps
// its denial. Every answer is audited.
func (h *handlers) askApprovals(ctx context.Context, req *mcp.CallToolRequest, res *engine.Result) []string {
	if res == nil || res.Network == nil || len(res.Network.Approvable) == 0 || req == nil || req.Session == nil {
		return nil
	}
	owner := principal.FromContext(ctx).Name
	caps := req.ClientCapabilities()
	var approved []string
	for _, host := range res.Network.Approvable {
		if caps == nil || caps.Elicitation == nil {
			h.gate.AuditApproval(owner, res.RunID, host, gate.ApprovalUnavailable)
			continue
		}
		h.gate.Approvals().Asked(ctx, owner, host, res.RunID)
		ans, err := req.Session.Elicit(ctx, h.approvalQuestion(owner, host))
		if err != nil {
			h.gate.Approvals().Answered(ctx, owner, host)
			h.log.Info("egress approval could not be asked", "host", host, "principal", owner, "err", err)
			h.gate.AuditApproval(owner, res.RunID, host, gate.ApprovalUnavailable)
			continue
		}
		if h.recordAnswer(ctx, owner, res.RunID, host, ans) {
			approved = append(approved, host)
		}
	}
	return approved
}

// approvalQuestion asks owner's user whether owner's runs may reach host.
func (h *handlers) approvalQuestion(owner, host string) *mcp.ElicitParams {
	ttl := h.gate.Approvals().TTL().Round(time.Second)
	return &mcp.ElicitParams{
		Message: fmt.Sprintf("A program run for %s was denied network access to %s. The operator lets you approve this host: allow %s to reach it for %s?",
			owner, host, owner, ttl),
		RequestedSchema: &jsonschema.Schema{Type: "object", Required: []string{"allow"}, Properties: map[string]*jsonschema.Schema{
			"allow": {Type: "boolean", Title: "Allow " + host, Description: fmt.Sprintf("let %s's runs reach %s for %s", owner, host, ttl)},
		}},
	}
}

// recordAnswer records the user's answer about host: an approval for the
// operator's TTL when they accepted with allow, else a decline; audited
// either way. It reports whether host is now approved.
func (h *handlers) recordAnswer(ctx context.Context, owner, runID, host string, ans *mcp.ElicitResult) bool {
	h.gate.Approvals().Answered(ctx, owner, host)
	allow := false
	if ans != nil {
		allow, _ = ans.Content["allow"].(bool)
	}
	if ans == nil || ans.Action != "accept" || !allow {
		h.gate.AuditApproval(owner, runID, host, gate.ApprovalDeclined)
		return false
	}
	if _, err := h.gate.Approvals().Approve(ctx, owner, host); err != nil {
		h.log.Error("recording an egress approval", "host", host, "principal", owner, "err", err)
		h.gate.AuditApproval(owner, runID, host, gate.ApprovalUnavailable)
		return false
	}
	h.gate.AuditApproval(owner, runID, host, gate.ApprovalApproved)
	return true
}

// protocolInputRequests is the first protocol version whose server asks
// its client for input through input requests in a result (multi
// round-trip) rather than through requests of its own.
const protocolInputRequests = "2026-07-28"

// askedInResult reports whether req came in a protocol version that asks
// for input in the result.
func askedInResult(req *mcp.CallToolRequest) bool {
	if req == nil || req.Session == nil {
		return false
	}
	ip := req.Session.InitializeParams()
	return ip != nil && ip.ProtocolVersion >= protocolInputRequests
}

// approvalID is the id of the input request that asks about host.
const approvalID = "approve:"

// approvalRequests returns, in the 2026-07-28 era, the input requests that
// ask the client's user, one per host, about the approvable hosts the run
// was denied and that this call has not asked about yet (its request
// state lists those), with the request state of the next round; nil when
// there is nothing to ask or the client declared no elicitation (audited
// as unavailable: the run keeps its denial).
func (h *handlers) approvalRequests(ctx context.Context, req *mcp.CallToolRequest, res *engine.Result) (mcp.InputRequestMap, string) {
	if res == nil || res.Network == nil || len(res.Network.Approvable) == 0 {
		return nil, ""
	}
	owner := principal.FromContext(ctx).Name
	asked := askedHosts(req)
	caps := req.ClientCapabilities()
	questions := mcp.InputRequestMap{}
	for _, host := range res.Network.Approvable {
		if slices.Contains(asked, host) {
			continue
		}
		if caps == nil || caps.Elicitation == nil {
			h.gate.AuditApproval(owner, res.RunID, host, gate.ApprovalUnavailable)
			continue
		}
		questions[approvalID+host] = h.approvalQuestion(owner, host)
		h.gate.Approvals().Asked(ctx, owner, host, res.RunID)
		asked = append(asked, host)
	}
	if len(questions) == 0 {
		return nil, ""
	}
	return questions, strings.Join(asked, ",")
}

// askedHosts returns the hosts this call asked about in earlier rounds:
// its request state. The state only spares the user a second question;
// what a client echoes there grants nothing.
func askedHosts(req *mcp.CallToolRequest) []string {
	if req == nil || req.Params == nil || req.Params.RequestState == "" {
		return nil
	}
	return strings.Split(req.Params.RequestState, ",")
}

// takeApprovals records the user's answers that a call retried in the
// 2026-07-28 era carries (inputResponses to approvalRequests) and returns
// the hosts approved. An answer about a host the operator does not let
// users approve is ignored: the proxy would not honour it anyway.
func (h *handlers) takeApprovals(ctx context.Context, req *mcp.CallToolRequest) []string {
	if req == nil || req.Params == nil || len(req.Params.InputResponses) == 0 {
		return nil
	}
	owner := principal.FromContext(ctx).Name
	var approved []string
	for id, resp := range req.Params.InputResponses {
		host, ok := strings.CutPrefix(id, approvalID)
		if !ok || !h.gate.Approvable(host) {
			continue
		}
		ans, _ := resp.(*mcp.ElicitResult)
		if h.recordAnswer(ctx, owner, "", host, ans) {
			approved = append(approved, host)
		}
	}
	slices.Sort(approved)
	return approved
}

// approvalNote says what an approval changed, first in the result's text.
func approvalNote(approved []string, ttl time.Duration) *mcp.TextContent {
	return &mcp.TextContent{Text: fmt.Sprintf("The user approved %s for %s; the run was retried after the approval.",
		strings.Join(approved, ", "), ttl.Round(time.Second))}
}

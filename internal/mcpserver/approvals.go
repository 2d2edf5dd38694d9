package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
)

// askApprovals asks the client's user, one elicitation per host, whether
// the caller's principal may reach the approvable hosts the run was
// denied, records each approval for the operator's TTL, and returns the
// hosts approved. A client that declared no elicitation, or cannot be asked
// this way (stateless HTTP; the 2026-07-28 protocol, which takes input
// requests instead), approves nothing: the run keeps its denial. Every
// answer is audited.
func (h *handlers) askApprovals(ctx context.Context, req *mcp.CallToolRequest, res *engine.Result) []string {
	if res == nil || res.Network == nil || len(res.Network.Approvable) == 0 || req == nil || req.Session == nil {
		return nil
	}
	owner := principal.FromContext(ctx).Name
	caps := req.ClientCapabilities()
	ttl := h.eng.Approvals().TTL()
	var approved []string
	for _, host := range res.Network.Approvable {
		if caps == nil || caps.Elicitation == nil {
			h.eng.AuditApproval(owner, res.RunID, host, engine.ApprovalUnavailable)
			continue
		}
		ans, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
			Message: fmt.Sprintf("A program run for %s was denied network access to %s. The operator lets you approve this host: allow %s to reach it for %s?",
				owner, host, owner, ttl.Round(time.Second)),
			RequestedSchema: &jsonschema.Schema{Type: "object", Required: []string{"allow"}, Properties: map[string]*jsonschema.Schema{
				"allow": {Type: "boolean", Title: "Allow " + host, Description: fmt.Sprintf("let %s's runs reach %s for %s", owner, host, ttl.Round(time.Second))},
			}},
		})
		if err != nil {
			h.log.Info("egress approval could not be asked", "host", host, "principal", owner, "err", err)
			h.eng.AuditApproval(owner, res.RunID, host, engine.ApprovalUnavailable)
			continue
		}
		allow, _ := ans.Content["allow"].(bool)
		if ans.Action != "accept" || !allow {
			h.eng.AuditApproval(owner, res.RunID, host, engine.ApprovalDeclined)
			continue
		}
		if _, err := h.eng.Approvals().Approve(ctx, owner, host); err != nil {
			h.log.Error("recording an egress approval", "host", host, "principal", owner, "err", err)
			h.eng.AuditApproval(owner, res.RunID, host, engine.ApprovalUnavailable)
			continue
		}
		h.eng.AuditApproval(owner, res.RunID, host, engine.ApprovalApproved)
		approved = append(approved, host)
	}
	return approved
}

// approvalNote says what an approval changed, first in the result's text.
func approvalNote(approved []string, ttl time.Duration) *mcp.TextContent {
	return &mcp.TextContent{Text: fmt.Sprintf("The user approved %s for %s; the run was retried after the approval.",
		strings.Join(approved, ", "), ttl.Round(time.Second))}
}

package mcpserver

import (
	"context"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxCompletions is the most values one completion answer carries (the
// protocol's limit).
const maxCompletions = 100

// complete answers completion/complete: language names for prompt
// arguments, stream and run ids for the output resource templates.
func (h *handlers) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := req.Params
	var candidates []string
	if p.Ref != nil {
		switch {
		case p.Ref.Type == "ref/prompt" && p.Argument.Name == "language":
			for _, l := range h.eng.Registry().Languages() {
				candidates = append(candidates, l.Name)
				candidates = append(candidates, l.Aliases...)
			}
			sort.Strings(candidates)
		case p.Ref.Type == "ref/resource" && p.Argument.Name == "stream":
			candidates = []string{"stdout", "stderr"}
		case p.Ref.Type == "ref/resource" && p.Argument.Name == "run_id":
			candidates = h.recentRunIDs(ctx)
		}
	}
	prefix := strings.ToLower(p.Argument.Value)
	values := []string{}
	for _, c := range candidates {
		if strings.HasPrefix(strings.ToLower(c), prefix) {
			values = append(values, c)
		}
	}
	total := len(values)
	if len(values) > maxCompletions {
		values = values[:maxCompletions]
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{
		Values: values, Total: total, HasMore: total > len(values),
	}}, nil
}

package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func addPrompts(s *mcp.Server, h *handlers) {
	s.AddPrompt(&mcp.Prompt{
		Name:        "solve_with_code",
		Title:       "Solve a task by writing and running code",
		Description: "Write a program for a task, run it in the sandbox, check the result and fix it until it works.",
		Arguments: []*mcp.PromptArgument{
			{Name: "task", Description: "what the program should do or compute", Required: true},
			{Name: "language", Description: "language to use (default: python); completion lists the available ones"},
		},
	}, h.solveWithCode)
	s.AddPrompt(&mcp.Prompt{
		Name:        "test_code",
		Title:       "Test a piece of code",
		Description: "Write tests for the given code, run them together with it in the sandbox, and report what passes and what fails.",
		Arguments: []*mcp.PromptArgument{
			{Name: "code", Description: "the code to test", Required: true},
			{Name: "language", Description: "the code's language; completion lists the available ones", Required: true},
		},
	}, h.testCode)
}

func (h *handlers) promptLanguage(name string) (string, error) {
	if name == "" {
		// The registry's example language is the prompts' default too.
		if ex := h.eng.Registry().Roles().ExampleCall; ex != nil {
			name = ex.Language
		}
	}
	l, ok := h.eng.Registry().Lookup(name)
	if !ok {
		return "", invalidParams("unknown language %q; available: %s", name, strings.Join(h.eng.Registry().Names(), ", "))
	}
	return l.Name, nil
}

func (h *handlers) solveWithCode(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	task := strings.TrimSpace(req.Params.Arguments["task"])
	if task == "" {
		return nil, invalidParams("the task argument is required: say what the program should do")
	}
	lang, err := h.promptLanguage(req.Params.Arguments["language"])
	if err != nil {
		return nil, err
	}
	text := fmt.Sprintf(`Solve this task by writing a %[1]s program and running it with the run_code tool (language %[1]q):

%[2]s

Work like this:
1. Write a complete, self-contained program that prints its answer to stdout. The sandbox has no network access and no packages beyond the language's standard library, so do not rely on downloads.
2. Call run_code. Check status and exit_code; read stderr (and compile.stderr for compiled languages) when it fails.
3. If it fails or the output looks wrong, fix the code and run it again. Test edge cases with small inputs (stdin or args) when the task has them.
4. Answer with the final result, the program that produced it, and the run's output.`, lang, task)
	return &mcp.GetPromptResult{
		Description: "Solve a task with " + lang,
		Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
	}, nil
}

func (h *handlers) testCode(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	code := req.Params.Arguments["code"]
	if strings.TrimSpace(code) == "" {
		return nil, invalidParams("the code argument is required: paste the code to test")
	}
	lang, err := h.promptLanguage(req.Params.Arguments["language"])
	if err != nil {
		return nil, err
	}
	text := fmt.Sprintf(`Test the following %[1]s code by running it with the run_code tool (language %[1]q).

`+"```"+`%[1]s
%[2]s
`+"```"+`

Write a test program that includes this code unchanged and exercises it: normal cases, edge cases (empty input, large values, invalid input) and any behaviour the code seems to promise. Use only the standard library; print one line per check, PASS or FAIL with what was expected and what came out, and exit non-zero if any check fails. Run it, then report which checks fail and why, with a suggested fix for each bug found.`, lang, code)
	return &mcp.GetPromptResult{
		Description: "Test " + lang + " code",
		Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
	}, nil
}

// invalidParams is the JSON-RPC error for bad prompt arguments (-32602).
func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/pipeline"
)

// syncPrompts makes the SDK's prompts the registry's prompt entries that are
// served, as sync does for tools: the SDK lists them (and tells sessions
// prompts/list_changed), and a prompts/get is a call of the entry.
func (s *Server) syncPrompts(current []pipeline.ToolInfo, touched map[string]bool) {
	seen := map[string]bool{}
	var add []pipeline.ToolInfo
	for _, t := range current {
		if t.Kind != kindPrompt || t.Held != "" {
			continue
		}
		seen[t.Name] = true
		old, ok := s.prompts[t.Name]
		if !ok || !sameTool(old, t) || touched[t.Owner] {
			add = append(add, t)
		}
	}
	var remove []string
	for name := range s.prompts {
		if !seen[name] {
			remove = append(remove, name)
			delete(s.prompts, name)
		}
	}
	if len(remove) > 0 {
		s.mcp.RemovePrompts(remove...)
	}
	for _, t := range add {
		s.mcp.AddPrompt(mcpPrompt(t), s.getPrompt)
		s.prompts[t.Name] = t
	}
}

// mcpPrompt describes a prompt entry to MCP clients: its arguments are the
// properties of the entry's parameters (strings, as MCP's prompt arguments
// are), required as the schema says.
func mcpPrompt(t pipeline.ToolInfo) *mcp.Prompt {
	var schema struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(t.Parameters, &schema) // the bridge wrote it; a bad one has no arguments
	p := &mcp.Prompt{Name: t.Name, Description: t.Description, Meta: mcp.Meta{"plugkit/owner": t.Owner}}
	names := make([]string, 0, len(schema.Properties))
	for n := range schema.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		p.Arguments = append(p.Arguments, &mcp.PromptArgument{Name: n, Description: schema.Properties[n].Description, Required: slices.Contains(schema.Required, n)})
	}
	return p
}

// getPrompt is the handler of every prompt: a call of its entry.
func (s *Server) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	args := json.RawMessage(`{}`)
	if len(req.Params.Arguments) > 0 {
		b, err := json.Marshal(req.Params.Arguments)
		if err != nil {
			return nil, fmt.Errorf("prompts/get %s: arguments: %w", req.Params.Name, err)
		}
		args = b
	}
	res, err := s.callEntry(ctx, req, req.Params.Name, args)
	if err != nil {
		return nil, err
	}
	if res.IsError {
		return nil, refusal(res)
	}
	var out mcp.GetPromptResult
	if err := json.Unmarshal(structured(res), &out); err != nil {
		return nil, fmt.Errorf("prompts/get %s: the server's prompt cannot be read: %w", req.Params.Name, err)
	}
	out.Meta = res.Meta
	return &out, nil
}

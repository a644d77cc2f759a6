package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// result is the value of every successful bridged call, whatever the server
// returned: always an object, with the server's content blocks as MCP
// defines them (type "text", "image", "audio", "resource_link",
// "resource") and, when the server sent one, its structuredContent as is.
// Tools that return text are read at content[i].text; tools with an output
// schema at structuredContent. The shape does not depend on the tool or the
// call, so a policy or a client can rely on it. The host's MCP front end
// serves a value of this shape as the MCP result it describes.
type result struct {
	Content           []mcp.Content `json:"content"`
	StructuredContent any           `json:"structuredContent,omitempty"`
}

// resultValue is a successful tools/call result as the pipeline's value.
func resultValue(r *mcp.CallToolResult) (json.RawMessage, error) {
	content := r.Content
	if content == nil {
		content = []mcp.Content{}
	}
	raw, err := json.Marshal(result{Content: content, StructuredContent: r.StructuredContent})
	if err != nil {
		return nil, fmt.Errorf("the server's result cannot be encoded as JSON: %w", err)
	}
	return raw, nil
}

// errorText is the message of a result with isError: the text of its text
// blocks, else the blocks as JSON.
func errorText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok && strings.TrimSpace(t.Text) != "" {
			parts = append(parts, t.Text)
		}
	}
	if len(parts) > 0 {
		return strings.Join(parts, "\n")
	}
	if len(r.Content) > 0 {
		if raw, err := json.Marshal(r.Content); err == nil {
			return "the server reported an error: " + string(raw)
		}
	}
	return "the server reported an error without saying why"
}

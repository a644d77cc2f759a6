package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/pipeline"
)

// refuseUnknown sends a tools/call of a tool the registry does not have (or
// holds absent) through the pipeline, so that it is audited like every
// other call, instead of letting the SDK refuse it unseen. The answer stays
// the protocol error MCP specifies for an unknown tool (-32602), with the
// pipeline's UNKNOWN_TOOL message and, in data, the call's id and audit
// receipt; any other outcome (a tool registered meanwhile, one whose plugin
// is restarting, a hold) is the call's tool result.
func (s *Server) refuseUnknown(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		cr, ok := req.(*mcp.CallToolRequest)
		if !ok || cr.Params == nil || cr.Params.RequestState != "" {
			// A retry names a call the pipeline already has.
			return next(ctx, method, req)
		}
		if s.searching() && cr.Params.Name == SearchToolName {
			return next(ctx, method, req) // served by the front end (toolsearch.go)
		}
		if t, ok := s.h.Pipeline().Lookup(cr.Params.Name); ok && t.Held == "" && !s.hiddenFrom(ctx, cr.Extra, t.Name) {
			if t.Kind != "" {
				// Resources and prompts are served as what they are.
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s is not a tool: it offers a %s (resources/read, prompts/get)", cr.Params.Name, t.Kind)}
			}
			return next(ctx, method, req)
		}
		res, err := s.callTool(ctx, cr)
		if err != nil || !res.IsError || res.Meta["plugkit/code"] != string(pipeline.CodeUnknownTool) {
			return res, err
		}
		return nil, unknownToolError(res)
	}
}

// unknownToolError is an UNKNOWN_TOOL result as MCP's protocol error.
func unknownToolError(res *mcp.CallToolResult) error {
	msg := string(pipeline.CodeUnknownTool)
	if len(res.Content) > 0 {
		if t, ok := res.Content[0].(*mcp.TextContent); ok {
			msg = t.Text
		}
	}
	e := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
	// The id and receipt find the call's audit line; a map of plain values
	// always marshals.
	e.Data, _ = json.Marshal(res.Meta)
	return e
}

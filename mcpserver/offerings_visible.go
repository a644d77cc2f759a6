package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/pipeline"
)

// Resources and prompts are shown per caller as tools are (visibility.go),
// by their entries' visibility (the same question, without arguments):
//
//   - a bridge's resources and templates are listed to a caller only when
//     both its list entry and its reader are shown to it: a resource it
//     could never read is not listed; a read or subscription of a URI of a
//     bridge whose reader is hidden is answered as one of a URI no bridge
//     serves;
//   - prompts/list holds the prompts shown; a prompts/get of a hidden one
//     is answered as the SDK answers one of a prompt that does not exist
//     (before it is said to be held absent: that too would tell it exists).
//
// A rule on URIs does not hide a reader (some URIs pass it): the URI is the
// read's argument, and a read it refuses is DENIED, as a call whose
// arguments a rule refuses.

// offeringsVisible is the receiving middleware of prompts/list and
// prompts/get.
func (s *Server) offeringsVisible(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "prompts/get":
			gr, ok := req.(*mcp.GetPromptRequest)
			if ok && gr.Params != nil && s.hiddenFrom(ctx, gr.Extra, gr.Params.Name) {
				if t, ok := s.h.Pipeline().Lookup(gr.Params.Name); ok && t.Kind == kindPrompt {
					return nil, unknownPrompt(gr.Params.Name)
				}
			}
		case "prompts/list":
			res, err := next(ctx, method, req)
			lr, ok := res.(*mcp.ListPromptsResult)
			if err != nil || !ok {
				return res, err
			}
			set := s.visibleTo(ctx, s.principalOfExtra(req.GetExtra()))
			shown := make([]*mcp.Prompt, 0, len(lr.Prompts))
			for _, p := range lr.Prompts {
				if set.Has(p.Name) {
					shown = append(shown, p)
				}
			}
			// A copy: the SDK's result may share its slices.
			out := *lr
			out.Prompts = shown
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
				s.sawPrompts(ss, s.principalOfExtra(req.GetExtra()), set)
			}
			return &out, nil
		}
		return next(ctx, method, req)
	}
}

// unknownPrompt is the SDK's answer to a prompts/get of a prompt it does
// not have, word for word, so that a hidden prompt cannot be told from a
// missing one.
func unknownPrompt(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", name)}
}

// bridgeHidden reports whether the resources of the bridge owner are hidden
// from the principal of req: its reader (the entry of kind resource) is,
// or, with list set, its list entry is.
func (s *Server) bridgeHidden(ctx context.Context, req mcp.Request, owner string, list *pipeline.ToolInfo) bool {
	set := s.visibleTo(ctx, s.principalOfExtra(req.GetExtra()))
	if list != nil && !set.Has(list.Name) {
		return true
	}
	for _, e := range s.entries(kindResource) {
		if e.Owner == owner {
			return !set.Has(e.Name)
		}
	}
	// A bridge without a reader: nothing of its list could be read.
	return list != nil
}
